//! The `shell` tool: runs one bash command in the workspace under the session's sandbox,
//! streams its output live and returns a bounded head and tail of it. The command runs in its
//! own process group so that a timeout, an interrupt or a dropped call kills everything it
//! started, grandchildren included: under bubblewrap, killing the group kills `bwrap`, and
//! `--die-with-parent` takes the whole PID namespace with it; unsandboxed, the command's shell
//! is a subreaper whose whole tree is killed, children that left with `setsid` included. A failure that looks like the sandbox's
//! doing is said to be so, so the model does not guess.

use std::os::unix::process::ExitStatusExt;
use std::time::Duration;

use schemars::JsonSchema;
use serde::Deserialize;

use super::process::{self, SandboxSlot};
use super::{ToolContext, ToolError, TypedTool, shell_terminal};
use crate::protocol::ApprovalAction;
use crate::sandbox::approval::Action;
use crate::sandbox::{Escalation, Sandbox};

/// The `shell` tool. Commands run in its sandbox (the workspace plus a scratch directory of
/// its own, removed with the tool) under the policy the session's approvals make of the
/// sandbox's configuration.
#[derive(Default)]
pub struct Shell {
    sandbox: SandboxSlot,
}

impl Shell {
    /// A shell whose commands run in `sandbox`.
    pub fn in_sandbox(sandbox: Sandbox) -> Self {
        Self {
            sandbox: SandboxSlot::with(sandbox),
        }
    }

    fn sandbox(
        &self,
        ctx: &ToolContext,
        escalation: Option<Escalation>,
    ) -> Result<Sandbox, ToolError> {
        self.sandbox.get(ctx, escalation)
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
        super::rewind_keep::note_command(ctx, &args.command).await;
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
    if shell_terminal::offered(ctx) {
        return shell_terminal::run(sandbox, &args.command, limit, ctx).await;
    }
    let finished = process::run(sandbox, &args.command, None, limit, ctx).await?;
    let mut text = finished.combined;
    if text.is_empty() {
        text.push_str("(no output)\n");
    } else if !text.ends_with('\n') {
        text.push('\n');
    }
    let status = finished.status;
    let outcome = match status.code() {
        Some(code) => format!("exit code: {code}"),
        None => format!("killed by signal {}", status.signal().unwrap_or(0)),
    };
    if status.success() {
        return Ok(format!("{text}{outcome}"));
    }
    let mut message = format!("{text}{outcome}");
    if let Some(note) = finished.note {
        message.push('\n');
        message.push_str(&note);
    }
    Err(ToolError::Failed(message))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::Event;
    use crate::tools::Tool;
    use crate::tools::builtin::test_support::{TestResult, call, context, workspace};
    use crate::tools::truncate::MAX_OUTPUT_BYTES;
    use serde_json::json;
    use std::path::Path;
    use tokio::sync::mpsc;
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
