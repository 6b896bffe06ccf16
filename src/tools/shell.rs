//! The `shell` tool: runs one bash command in the workspace under the session's sandbox,
//! streams its output live and returns a bounded head and tail of it. The command runs in its
//! own process group so that a timeout, an interrupt or a dropped call kills everything it
//! started, grandchildren included: under bubblewrap, killing the group kills `bwrap`, and
//! `--die-with-parent` takes the whole PID namespace with it; unsandboxed, the command's shell
//! is a subreaper whose whole tree is killed, children that left with `setsid` included. A failure that looks like the sandbox's
//! doing is said to be so, so the model does not guess.

use std::os::unix::process::ExitStatusExt;
use std::process::{ExitStatus, Stdio};
use std::sync::{Mutex, PoisonError};
use std::time::Duration;

use schemars::JsonSchema;
use serde::Deserialize;
use tokio::io::{AsyncRead, AsyncReadExt};
use tokio::sync::mpsc;
use tokio::time::{Instant, sleep_until};

use super::truncate::{MAX_OUTPUT_BYTES, ceil_char_boundary, floor_char_boundary, head_tail};
use super::{ToolContext, ToolError, TypedTool};
use crate::protocol::ApprovalAction;
use crate::sandbox::approval::Action;
use crate::sandbox::{Escalation, Prepared, RunGuard, Sandbox};

/// A partial line longer than this is passed on without waiting for its newline.
const MAX_PENDING_BYTES: usize = 16 * 1024;
/// Output batched into one live event at most.
const MAX_EVENT_BYTES: usize = 16 * 1024;

/// The `shell` tool. Commands run in its sandbox (the workspace plus a scratch directory of
/// its own, removed with the tool) under the policy the session's approvals make of the
/// sandbox's configuration.
#[derive(Default)]
pub struct Shell {
    /// Given at construction, or created over the call's workspace on first use.
    sandbox: Mutex<Option<Sandbox>>,
}

impl Shell {
    /// A shell whose commands run in `sandbox`.
    pub fn in_sandbox(sandbox: Sandbox) -> Self {
        Self {
            sandbox: Mutex::new(Some(sandbox)),
        }
    }

    /// The sandbox for a call with `escalation` (already approved).
    fn sandbox(
        &self,
        ctx: &ToolContext,
        escalation: Option<Escalation>,
    ) -> Result<Sandbox, ToolError> {
        let mut slot = self.sandbox.lock().unwrap_or_else(PoisonError::into_inner);
        let sandbox = match slot.as_ref().filter(|s| s.workspace() == ctx.workspace) {
            Some(sandbox) => sandbox.clone(),
            None => {
                let created = Sandbox::temporary(ctx.approvals.configured(), &ctx.workspace)
                    .map_err(|e| ToolError::Failed(e.to_string()))?
                    .confined(ctx.approvals.confinement().clone());
                slot.insert(created).clone()
            }
        };
        let config = ctx.approvals.adjust(sandbox.config(), escalation);
        Ok(sandbox.with_config(config))
    }
}

#[derive(Debug, Deserialize, JsonSchema)]
pub struct ShellArgs {
    /// The bash command to run, from the workspace root. Pipes, `&&` and redirections work.
    pub command: String,
    /// Seconds after which the command is killed. Default and maximum: the session's tool
    /// timeout.
    pub timeout_secs: Option<u64>,
    /// Only when the command cannot work in the sandbox: `network` to reach the network,
    /// `full_access` to run without a sandbox. The user may be asked to approve.
    pub escalation: Option<Escalation>,
}

impl TypedTool for Shell {
    type Args = ShellArgs;
    const NAME: &'static str = "shell";
    const DESCRIPTION: &'static str = "Run a bash command in the workspace root (stdin is empty) \
        and return its combined stdout and stderr and exit code. Long output keeps its head and \
        tail. Background processes it starts are stopped when it ends. Commands run in a \
        sandbox: depending on the session's policy they may not write outside the workspace \
        (use $MNEMO_SCRATCH or /tmp for scratch files) or reach the network.";
    const MUTATES: bool = true;

    fn action(&self, args: &ShellArgs) -> Option<Action> {
        Some(Action::Command(args.escalation))
    }

    async fn preview(
        &self,
        args: ShellArgs,
        ctx: &ToolContext,
    ) -> Result<ApprovalAction, ToolError> {
        let sandbox = self.sandbox(ctx, args.escalation)?;
        Ok(ApprovalAction::Command {
            sandbox: sandbox.config().describe(),
            command: args.command,
            escalation: args.escalation,
        })
    }

    async fn run(&self, args: ShellArgs, ctx: &ToolContext) -> Result<String, ToolError> {
        let sandbox = self.sandbox(ctx, args.escalation)?;
        run_command(&sandbox, args, ctx).await
    }
}

async fn run_command(
    sandbox: &Sandbox,
    args: ShellArgs,
    ctx: &ToolContext,
) -> Result<String, ToolError> {
    let limit = args.timeout_secs.map_or(ctx.timeout, |secs| {
        Duration::from_secs(secs.max(1)).min(ctx.timeout)
    });
    let deadline = Instant::now() + limit;
    let Prepared { mut command, guard } = sandbox
        .command(&args.command)
        .await
        .map_err(|e| ToolError::Failed(e.to_string()))?;
    let mut child = command
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0)
        .kill_on_drop(true)
        .spawn()
        .map_err(|e| ToolError::Failed(format!("could not start the command: {e}")))?;
    drop(command);
    let mut group = Running {
        guard,
        pid: child.id().and_then(|id| libc::pid_t::try_from(id).ok()),
        reaped: false,
    };
    let (tx, mut rx) = mpsc::channel::<String>(64);
    if let Some(stdout) = child.stdout.take() {
        tokio::spawn(pump(stdout, tx.clone()));
    }
    if let Some(stderr) = child.stderr.take() {
        tokio::spawn(pump(stderr, tx));
    }
    let mut output = OutputBuffer::default();
    let mut status: Option<ExitStatus> = None;
    let mut pipes_open = true;
    while pipes_open || status.is_none() {
        tokio::select! {
            biased;
            () = ctx.cancel.cancelled() => {
                group.kill();
                return Err(ToolError::Cancelled);
            }
            () = sleep_until(deadline) => {
                let mut output = head_tail(&output.finish(), MAX_OUTPUT_BYTES);
                // Read before the kill: the cgroup's counters go with it.
                let note = group.guard.limit_note(&output);
                group.kill();
                ctx.emit_output(format!(
                    "\n[timed out after {} s; the command and its children were killed]\n",
                    limit.as_secs(),
                ))
                .await;
                if let Some(note) = note {
                    output.push_str(&note);
                    output.push('\n');
                }
                return Err(ToolError::TimedOut { after: limit, output });
            }
            chunk = rx.recv(), if pipes_open => match chunk {
                Some(mut batch) => {
                    while batch.len() < MAX_EVENT_BYTES {
                        let Ok(more) = rx.try_recv() else { break };
                        batch.push_str(&more);
                    }
                    output.push(&batch);
                    tokio::select! {
                        biased;
                        () = ctx.cancel.cancelled() => {}
                        () = sleep_until(deadline) => {}
                        () = ctx.emit_output(batch) => {}
                    }
                }
                None => pipes_open = false,
            },
            exited = child.wait(), if status.is_none() => {
                let exited = exited
                    .map_err(|e| ToolError::Failed(format!("waiting for the command failed: {e}")))?;
                status = Some(exited);
                group.reaped = true;
                // Background processes left behind would hold the pipes open forever.
                group.kill();
            }
        }
    }
    let mut text = head_tail(&output.finish(), MAX_OUTPUT_BYTES);
    if text.is_empty() {
        text.push_str("(no output)\n");
    } else if !text.ends_with('\n') {
        text.push('\n');
    }
    let Some(status) = status else {
        return Err(ToolError::Failed(format!(
            "{text}bash ended without an exit status"
        )));
    };
    let outcome = match status.code() {
        Some(code) => format!("exit code: {code}"),
        None => format!("killed by signal {}", status.signal().unwrap_or(0)),
    };
    if status.success() {
        return Ok(format!("{text}{outcome}"));
    }
    let mut message = format!("{text}{outcome}");
    if let Some(note) = group.guard.explain(&text) {
        message.push('\n');
        message.push_str(&note);
    }
    Err(ToolError::Failed(message))
}

/// The running command; everything it started is killed when asked and, at the latest, when
/// dropped.
struct Running {
    guard: RunGuard,
    /// The spawned process, until it was killed.
    pid: Option<libc::pid_t>,
    /// Once the process is reaped its id may be reused, so only its group and cgroup are
    /// killed, not a tree found by walking from the id.
    reaped: bool,
}

impl Running {
    /// Kills the command and all it started, once; later calls do nothing, so a reused id is
    /// never signalled.
    fn kill(&mut self) {
        if let Some(pid) = self.pid.take() {
            self.guard.kill(pid, self.reaped);
        }
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        self.kill();
    }
}

/// Forwards one pipe as newline-terminated pieces (or long partial lines), lossily decoded.
async fn pump(mut reader: impl AsyncRead + Unpin, tx: mpsc::Sender<String>) {
    let mut buf = vec![0u8; 8 * 1024];
    let mut pending = Vec::new();
    loop {
        let n = match reader.read(&mut buf).await {
            Ok(0) | Err(_) => break,
            Ok(n) => n,
        };
        pending.extend_from_slice(&buf[..n]);
        let complete = match memchr::memrchr(b'\n', &pending) {
            Some(end) => end + 1,
            None if pending.len() > MAX_PENDING_BYTES => pending.len(),
            None => continue,
        };
        let piece = String::from_utf8_lossy(&pending[..complete]).into_owned();
        pending.drain(..complete);
        if tx.send(piece).await.is_err() {
            return;
        }
    }
    if !pending.is_empty() {
        let _ = tx
            .send(String::from_utf8_lossy(&pending).into_owned())
            .await;
    }
}

/// Keeps about the first and the last `MAX_OUTPUT_BYTES / 2` bytes of the output and counts what
/// falls between, so a command printing gigabytes costs bounded memory.
#[derive(Default)]
struct OutputBuffer {
    head: String,
    tail: String,
    omitted_bytes: usize,
    omitted_lines: usize,
}

impl OutputBuffer {
    /// A little under half, so head, note and tail together stay within `MAX_OUTPUT_BYTES`.
    const HALF: usize = MAX_OUTPUT_BYTES / 2 - 128;

    fn push(&mut self, text: &str) {
        let room = Self::HALF.saturating_sub(self.head.len());
        let split = floor_char_boundary(text, room.min(text.len()));
        self.head.push_str(&text[..split]);
        self.tail.push_str(&text[split..]);
        if self.tail.len() > 2 * Self::HALF {
            self.trim_tail();
        }
    }

    fn trim_tail(&mut self) {
        let cut = ceil_char_boundary(&self.tail, self.tail.len().saturating_sub(Self::HALF));
        self.omitted_bytes += cut;
        self.omitted_lines += self.tail[..cut].bytes().filter(|&b| b == b'\n').count();
        self.tail.drain(..cut);
    }

    fn finish(mut self) -> String {
        if self.tail.len() > Self::HALF {
            self.trim_tail();
        }
        if self.omitted_bytes == 0 {
            return self.head + &self.tail;
        }
        format!(
            "{}\n[… output truncated: {} lines, {} bytes omitted …]\n{}",
            self.head, self.omitted_lines, self.omitted_bytes, self.tail
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::Event;
    use crate::tools::Tool;
    use crate::tools::builtin::test_support::{TestResult, call, context, workspace};
    use serde_json::json;
    use std::path::Path;
    use tokio_util::sync::CancellationToken;

    async fn shell(ws: &Path, command: &str) -> Result<String, ToolError> {
        call(&Shell::default(), ws, json!({"command": command})).await
    }

    #[tokio::test]
    async fn reports_output_and_exit_code() -> TestResult {
        let (_dir, ws) = workspace()?;
        assert_eq!(shell(&ws, "echo hi").await?, "hi\nexit code: 0");
        assert_eq!(shell(&ws, "true").await?, "(no output)\nexit code: 0");
        let failed = shell(&ws, "echo oops >&2; exit 3").await;
        assert!(
            matches!(&failed, Err(ToolError::Failed(m)) if m == "oops\nexit code: 3"),
            "{failed:?}"
        );
        Ok(())
    }

    #[tokio::test]
    async fn runs_in_the_workspace() -> TestResult {
        let (_dir, ws) = workspace()?;
        assert_eq!(
            shell(&ws, "pwd").await?,
            format!("{}\nexit code: 0", ws.display())
        );
        Ok(())
    }

    #[tokio::test]
    async fn huge_output_keeps_head_and_tail() -> TestResult {
        let (_dir, ws) = workspace()?;
        let out = shell(&ws, "seq 1 200000").await?;
        assert!(out.starts_with("1\n2\n3\n"));
        assert!(out.ends_with("199999\n200000\nexit code: 0"));
        assert!(out.contains("output truncated") && out.len() <= MAX_OUTPUT_BYTES + 20);
        Ok(())
    }

    #[tokio::test]
    async fn output_is_streamed_while_the_command_runs() -> TestResult {
        let (_dir, ws) = workspace()?;
        let (tx, mut rx) = mpsc::channel(16);
        let cancel = CancellationToken::new();
        let ctx = ToolContext::new(
            ws,
            "s",
            "c",
            cancel,
            Duration::from_secs(30),
            Some(tx),
            crate::tools::approvals::detached(),
        );
        let input = json!({"command": "echo first; sleep 1; echo second"});
        let run = tokio::spawn(async move { Shell::default().call(input, &ctx).await });
        let Some(Event::ToolOutput { call_id, chunk }) = rx.recv().await else {
            panic!("expected a tool output event");
        };
        assert_eq!((call_id.as_str(), chunk.as_str()), ("c", "first\n"));
        assert!(!run.is_finished());
        let Some(Event::ToolOutput { chunk, .. }) = rx.recv().await else {
            panic!("expected a second tool output event");
        };
        assert_eq!(chunk, "second\n");
        assert_eq!(run.await??, "first\nsecond\nexit code: 0");
        Ok(())
    }

    #[tokio::test]
    async fn cancellation_returns_promptly() -> TestResult {
        let (_dir, ws) = workspace()?;
        let ctx = context(&ws);
        let cancel = ctx.cancel.clone();
        tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(200)).await;
            cancel.cancel();
        });
        let started = std::time::Instant::now();
        let result = Shell::default()
            .call(json!({"command": "sleep 30"}), &ctx)
            .await;
        assert!(matches!(result, Err(ToolError::Cancelled)));
        assert!(started.elapsed() < Duration::from_secs(1));
        Ok(())
    }

    #[tokio::test]
    async fn background_processes_do_not_hold_the_call_open() -> TestResult {
        let (_dir, ws) = workspace()?;
        let started = std::time::Instant::now();
        assert_eq!(
            shell(&ws, "sleep 30 & echo started").await?,
            "started\nexit code: 0"
        );
        assert!(started.elapsed() < Duration::from_secs(5));
        Ok(())
    }
}
