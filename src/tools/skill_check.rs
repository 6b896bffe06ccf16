//! Whether a skill the agent writes has earned its place: its `verify` command, run by mnemo
//! in the session's sandbox, exits 0, or the person says yes. Otherwise it waits as a draft, so
//! a turn that only claimed success leaves no skill behind.

use std::time::Duration;

use super::process::{self, SandboxSlot};
use super::{ToolContext, ToolError};

/// The longest a skill's check may run.
const CHECK_LIMIT: Duration = Duration::from_secs(120);
/// Lines of a failed check's output the model is shown.
const TAIL_LINES: usize = 8;

/// What running a skill's check showed.
pub enum Checked {
    /// It passed: what is recorded with the skill.
    Passed(String),
    /// Why there is no passing check.
    NotPassed(String),
}

/// Runs `command` (the skill's `verify`) in the session's sandbox from the workspace.
pub async fn check(slot: &SandboxSlot, command: Option<&str>, ctx: &ToolContext) -> Checked {
    let Some(command) = command.map(str::trim).filter(|c| !c.is_empty()) else {
        return Checked::NotPassed("it has no verify command".into());
    };
    let sandbox = match slot.get(ctx, None) {
        Ok(sandbox) => sandbox,
        Err(err) => return Checked::NotPassed(format!("its check could not run: {err}")),
    };
    let limit = CHECK_LIMIT.min(ctx.timeout);
    match process::run(&sandbox, command, None, limit, ctx).await {
        Ok(finished) if finished.status.success() => Checked::Passed(format!(
            "`{command}` exited 0 on {}",
            chrono::Utc::now().format("%Y-%m-%d %H:%M UTC")
        )),
        Ok(finished) => Checked::NotPassed(format!(
            "its verify command `{command}` failed ({}):\n{}",
            finished.status,
            tail(&finished.combined)
        )),
        Err(ToolError::TimedOut { after, .. }) => Checked::NotPassed(format!(
            "its verify command `{command}` did not finish within {} s",
            after.as_secs()
        )),
        Err(err) => Checked::NotPassed(format!(
            "its verify command `{command}` could not run: {err}"
        )),
    }
}

fn tail(output: &str) -> String {
    let lines: Vec<&str> = output.trim_end().lines().collect();
    lines[lines.len().saturating_sub(TAIL_LINES)..].join("\n")
}
