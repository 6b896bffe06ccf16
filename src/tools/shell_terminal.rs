//! The `shell` tool's commands in the editor's terminal, when the front end offers one: the
//! terminal runs `mnemo sandbox-exec`, which confines the command exactly as the tool's own
//! run would (same sandbox, cgroup, seccomp filter and allow-listed environment), so the
//! editor shows the command without it escaping anything. A terminal that cannot run it is an
//! error, never a second run.

use std::time::Duration;

use super::truncate::MAX_OUTPUT_BYTES;
use super::{ToolContext, ToolError};
use crate::protocol::{FrontEndReply, FrontEndRequest};
use crate::sandbox::reentry::SUBCOMMAND;
use crate::sandbox::{Sandbox, denial, preflight};

/// How long past the command's own limit the editor may take to report it ended.
const REPORT_GRACE: Duration = Duration::from_secs(10);

/// Whether the session's commands run in the editor's terminal.
pub fn offered(ctx: &ToolContext) -> bool {
    ctx.approvals.front_end().offered().terminal
}

/// Runs `command` in `sandbox` through the editor's terminal, for at most `limit`.
pub async fn run(
    sandbox: &Sandbox,
    command: &str,
    limit: Duration,
    ctx: &ToolContext,
) -> Result<String, ToolError> {
    let not_run = |why: String| ToolError::Failed(format!("{why}; the command was not run"));
    preflight(sandbox.config())
        .await
        .map_err(|e| not_run(e.to_string()))?;
    let program = std::env::current_exe()
        .map_err(|e| not_run(format!("mnemo cannot find its own program: {e}")))?;
    let mut spec = sandbox.exec_spec(command);
    spec.domains = ctx.approvals.allowed_domains();
    let spec = serde_json::to_string(&spec)
        .map_err(|e| not_run(format!("the sandbox could not be described: {e}")))?;
    let request = FrontEndRequest::RunCommand {
        command: command.to_string(),
        program: program.display().to_string(),
        args: vec![SUBCOMMAND.to_string(), spec],
        cwd: sandbox.workspace().display().to_string(),
        timeout_ms: u64::try_from(limit.as_millis()).unwrap_or(u64::MAX),
        output_limit: MAX_OUTPUT_BYTES as u64,
    };
    let reply = ctx
        .approvals
        .front_end()
        .ask(ctx, request, limit + REPORT_GRACE)
        .await
        .map_err(|e| e.into_error("the editor's terminal did not report the command"))?;
    let (mut text, exit_code, signal, truncated, timed_out) = match reply {
        FrontEndReply::Exited {
            output,
            exit_code,
            signal,
            truncated,
            timed_out,
        } => (output, exit_code, signal, truncated, timed_out),
        FrontEndReply::Failed { message } => {
            let failed = format!("the editor's terminal failed: {message}");
            return Err(ToolError::Failed(failed));
        }
        other => {
            let odd = format!("the editor's terminal answered {other:?}");
            return Err(ToolError::Failed(odd));
        }
    };
    if truncated {
        text.insert_str(0, "[… earlier output dropped …]\n");
    }
    if timed_out {
        return Err(ToolError::TimedOut {
            after: limit,
            output: text,
        });
    }
    if text.is_empty() {
        text.push_str("(no output)\n");
    } else if !text.ends_with('\n') {
        text.push('\n');
    }
    let outcome = match (exit_code, &signal) {
        (Some(code), _) => format!("exit code: {code}"),
        (None, Some(signal)) => format!("killed by signal {signal}"),
        (None, None) => "ended without an exit status".to_string(),
    };
    if exit_code == Some(0) {
        return Ok(format!("{text}{outcome}"));
    }
    let mut message = format!("{text}{outcome}");
    if let Some(note) = denial::explain(sandbox.config(), &text) {
        message.push('\n');
        message.push_str(&note);
    }
    Err(ToolError::Failed(message))
}
