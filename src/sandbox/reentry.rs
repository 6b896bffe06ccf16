//! `mnemo sandbox-exec SPEC` (hidden): runs one command under exactly the confinement the
//! `shell` tool gives it, for a command that another program starts (an editor's terminal).
//! The spec carries the policy, the workspace, the scratch directory and the whole
//! confinement; this process builds the sandbox from it as the tool would (bubblewrap, the
//! seccomp filter, the cgroup, the allow-listed environment), runs the command with inherited
//! output, and exits with its code. A signal to this process kills the command and all it
//! started; bubblewrap dies with it even when it is killed outright.

use std::path::PathBuf;
use std::process::Stdio;
use std::sync::Arc;

use serde::{Deserialize, Serialize};

use super::domains::DomainList;
use super::egress::ListGate;
use super::{Confinement, Prepared, Sandbox, SandboxConfig, SandboxError};

/// The hidden subcommand's name.
pub const SUBCOMMAND: &str = "sandbox-exec";

/// What `mnemo sandbox-exec` needs to confine a command as the session would.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ExecSpec {
    pub config: SandboxConfig,
    pub workspace: PathBuf,
    pub scratch: PathBuf,
    pub confinement: Confinement,
    /// The bash script to run.
    pub script: String,
    /// The domains the command reaches through the proxy while the network is off: the
    /// configured ones and the session's grants when the spec was made.
    #[serde(default)]
    pub domains: DomainList,
}

#[derive(Debug, thiserror::Error)]
pub enum ReentryError {
    #[error("mnemo sandbox-exec: the spec is not valid: {0}")]
    Spec(#[from] serde_json::Error),
    #[error("mnemo sandbox-exec: {0}")]
    Sandbox(#[from] SandboxError),
    #[error("mnemo sandbox-exec: {0}")]
    Io(#[from] std::io::Error),
}

impl Sandbox {
    /// The spec that runs `script` in this sandbox through `mnemo sandbox-exec`.
    pub fn exec_spec(&self, script: &str) -> ExecSpec {
        ExecSpec {
            config: self.config,
            workspace: self.workspace.clone(),
            scratch: self.scratch.clone(),
            confinement: (*self.confinement).clone(),
            script: script.to_string(),
            domains: DomainList::default(),
        }
    }
}

/// Runs the command of `spec` (JSON) and gives its exit code (128 + the signal that ended
/// it, as a shell says).
pub async fn run(spec: &str) -> Result<i32, ReentryError> {
    let spec: ExecSpec = serde_json::from_str(spec)?;
    let gate = ListGate {
        configured: spec.confinement.domains.clone(),
        list: spec.domains,
    };
    let sandbox = Sandbox::new(spec.config, &spec.workspace, &spec.scratch)?
        .confined(Arc::new(spec.confinement))
        .with_gate(Arc::new(gate));
    let Prepared { mut command, guard } = sandbox.command(&spec.script).await?;
    let mut child = command
        .stdin(Stdio::null())
        .process_group(0)
        .kill_on_drop(true)
        .spawn()?;
    let Some(pid) = child.id().and_then(|id| libc::pid_t::try_from(id).ok()) else {
        return Ok(1);
    };
    use tokio::signal::unix::{SignalKind, signal};
    let mut term = signal(SignalKind::terminate())?;
    let mut int = signal(SignalKind::interrupt())?;
    let mut hup = signal(SignalKind::hangup())?;
    let stopped = tokio::select! {
        status = child.wait() => {
            // Background processes it left would outlive the terminal's command.
            guard.kill(pid, true);
            return Ok(exit_code(status?));
        }
        _ = term.recv() => libc::SIGTERM,
        _ = int.recv() => libc::SIGINT,
        _ = hup.recv() => libc::SIGHUP,
    };
    guard.kill(pid, false);
    Ok(128 + stopped)
}

fn exit_code(status: std::process::ExitStatus) -> i32 {
    use std::os::unix::process::ExitStatusExt;
    match (status.code(), status.signal()) {
        (Some(code), _) => code,
        (None, Some(signal)) => 128 + signal,
        (None, None) => 1,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sandbox::SandboxPolicy;

    type TestResult = Result<(), Box<dyn std::error::Error>>;

    #[tokio::test]
    async fn a_spec_runs_its_command_in_the_workspace_and_gives_its_exit_code() -> TestResult {
        let dir = tempfile::tempdir()?;
        let config = SandboxConfig {
            policy: SandboxPolicy::FullAccess,
            network: false,
        };
        let sandbox = Sandbox::new(config, dir.path(), &dir.path().join("scratch"))?;
        let spec = sandbox.exec_spec("pwd > where.txt; exit 7");
        let text = serde_json::to_string(&spec)?;
        assert_eq!(serde_json::from_str::<ExecSpec>(&text)?, spec);
        assert_eq!(run(&text).await?, 7);
        let wrote = std::fs::read_to_string(sandbox.workspace().join("where.txt"))?;
        assert_eq!(wrote.trim_end(), sandbox.workspace().display().to_string());
        Ok(())
    }

    #[tokio::test]
    async fn a_spec_with_an_unknown_field_is_refused() {
        let refused = run(r#"{"config": {}, "script": "true", "shell": "sh"}"#).await;
        assert!(matches!(refused, Err(ReentryError::Spec(_))), "{refused:?}");
    }
}
