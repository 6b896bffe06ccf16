//! Runs one hook command: `sh -c COMMAND` in the workspace, the event's JSON on stdin, killed
//! with its process group past its time limit, its stdout and stderr kept up to a bound.

use std::path::Path;
use std::process::Stdio;
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncReadExt, AsyncWriteExt};
use tokio::process::Command;

/// Most bytes of a hook's stdout, and of its stderr, that are read.
const MAX_OUTPUT: u64 = 64 * 1024;

/// What a command that ran to its end left.
#[derive(Debug)]
pub struct Ran {
    /// `None` when a signal ended it.
    pub code: Option<i32>,
    pub stdout: String,
    pub stderr: String,
}

/// Runs `command` with `input` on stdin; the error says why it did not finish.
pub async fn run(
    command: &str,
    workspace: &Path,
    withheld: &[String],
    input: &[u8],
    limit: Duration,
) -> Result<Ran, String> {
    let mut command_line = Command::new("sh");
    for var in withheld {
        command_line.env_remove(var);
    }
    let mut child = command_line
        .arg("-c")
        .arg(command)
        .current_dir(workspace)
        .env("CLAUDE_PROJECT_DIR", workspace)
        .env("MNEMO_PROJECT_DIR", workspace)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0)
        .kill_on_drop(true)
        .spawn()
        .map_err(|e| format!("could not start: {e}"))?;
    let group = child.id().and_then(|id| i32::try_from(id).ok());
    let (stdin, stdout, stderr) = (child.stdin.take(), child.stdout.take(), child.stderr.take());
    let work = async {
        let feed = async {
            if let Some(mut stdin) = stdin {
                // A hook that does not read its input closes the pipe early: not a failure.
                let _ = stdin.write_all(input).await;
            }
        };
        let (_, stdout, stderr, status) =
            tokio::join!(feed, bounded(stdout), bounded(stderr), child.wait());
        (stdout, stderr, status)
    };
    let outcome = tokio::time::timeout(limit, work).await;
    if let (Err(_), Some(group)) = (&outcome, group) {
        // SAFETY: killpg touches no memory; the group is the hook's own (process_group(0)),
        // still unreaped, so its id cannot have been reused.
        unsafe {
            libc::killpg(group, libc::SIGKILL);
        }
    }
    match outcome {
        Ok((stdout, stderr, Ok(status))) => Ok(Ran {
            code: status.code(),
            stdout,
            stderr,
        }),
        Ok((_, _, Err(e))) => Err(format!("could not wait for it: {e}")),
        Err(_) => Err(format!("timed out after {} s", limit.as_secs_f64())),
    }
}

async fn bounded(pipe: Option<impl AsyncRead + Unpin>) -> String {
    let mut bytes = Vec::new();
    if let Some(pipe) = pipe {
        let _ = pipe.take(MAX_OUTPUT).read_to_end(&mut bytes).await;
    }
    String::from_utf8_lossy(&bytes).trim().to_string()
}
