//! Keeps what the agent runs inside the workspace. Shell commands (and later the agent's own
//! scripts) run under bubblewrap on Linux and `sandbox-exec` on macOS: the rest of the disk
//! read-only, the network off unless allowed, secrets scrubbed from the environment. When no
//! sandbox works, commands are refused (fail closed) unless the user chose full access.

pub mod approval;
pub mod bwrap;
pub mod denial;
pub mod env_scrub;
pub mod path_guard;
pub mod policy;
pub mod seatbelt;

use std::ffi::OsString;
use std::fs::{self, DirBuilder};
use std::io;
use std::os::unix::fs::{DirBuilderExt, MetadataExt};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use tokio::process::Command;
use tokio::sync::OnceCell;

pub use approval::{ApprovalMode, Escalation};
pub use policy::{SandboxConfig, SandboxPolicy};

/// Why no sandbox can run here; cached for the whole process.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum SandboxUnavailable {
    #[error("{tool} is not installed; install it with `{install}`")]
    Missing {
        tool: &'static str,
        install: &'static str,
    },
    #[error("{tool} is installed but does not work here: {detail} ({hint})")]
    Unusable {
        tool: &'static str,
        detail: String,
        hint: &'static str,
    },
    #[error("this platform has no supported sandbox (bubblewrap on Linux, sandbox-exec on macOS)")]
    Unsupported,
}

#[derive(Debug, thiserror::Error)]
pub enum SandboxError {
    #[error(
        "commands are refused because the sandbox cannot run: {0}. To run commands without a \
         sandbox instead, choose full access"
    )]
    Unavailable(SandboxUnavailable),
    #[error("cannot prepare the sandbox directory {}: {source}", .path.display())]
    Directory { path: PathBuf, source: io::Error },
}

static AVAILABILITY: OnceCell<Result<(), SandboxUnavailable>> = OnceCell::const_new();

/// Whether this machine's sandbox works. The start-up check runs once per process; later calls
/// return its answer.
pub async fn availability() -> Result<(), SandboxUnavailable> {
    AVAILABILITY.get_or_init(probe).await.clone()
}

/// The start-up check for a session with `config`: `Ok` when its commands can run. The error
/// is the message for the user (it names the install command).
pub async fn preflight(config: &SandboxConfig) -> Result<(), SandboxError> {
    if !config.is_sandboxed() {
        return Ok(());
    }
    availability().await.map_err(SandboxError::Unavailable)
}

#[cfg(target_os = "linux")]
async fn probe() -> Result<(), SandboxUnavailable> {
    bwrap::probe().await
}

#[cfg(target_os = "macos")]
async fn probe() -> Result<(), SandboxUnavailable> {
    seatbelt::probe().await
}

#[cfg(not(any(target_os = "linux", target_os = "macos")))]
async fn probe() -> Result<(), SandboxUnavailable> {
    Err(SandboxUnavailable::Unsupported)
}

/// One session's sandbox: the policy, the workspace and a scratch directory that stays
/// writable (even read-only) and outlives single commands, unlike their private `/tmp`.
#[derive(Clone, Debug)]
pub struct Sandbox {
    config: SandboxConfig,
    workspace: PathBuf,
    scratch: PathBuf,
    /// Removes a scratch directory this sandbox created for itself when the last clone goes.
    _owned_scratch: Option<Arc<OwnedScratch>>,
}

#[derive(Debug)]
struct OwnedScratch(PathBuf);

impl Drop for OwnedScratch {
    fn drop(&mut self) {
        // Best effort: a command may have left files without write permission behind.
        let _ = fs::remove_dir_all(&self.0);
    }
}

impl Sandbox {
    /// A sandbox over `workspace` with `scratch` as its scratch directory (created, private to
    /// the user). Both are canonicalized, as the macOS profile and the binds need real paths.
    pub fn new(
        config: SandboxConfig,
        workspace: &Path,
        scratch: &Path,
    ) -> Result<Self, SandboxError> {
        let directory_error = |path: &Path| {
            let path = path.to_path_buf();
            move |source| SandboxError::Directory { path, source }
        };
        let workspace = fs::canonicalize(workspace).map_err(directory_error(workspace))?;
        let scratch = prepare_scratch(scratch).map_err(directory_error(scratch))?;
        Ok(Self {
            config,
            workspace,
            scratch,
            _owned_scratch: None,
        })
    }

    /// A sandbox with a fresh scratch directory of its own
    /// (`<temp dir>/mnemo-scratch-<pid>-<uuid>`) that is removed when the sandbox and all its
    /// clones are dropped. Directories that killed mnemo processes left behind are removed the
    /// first time this runs in a process.
    pub fn temporary(config: SandboxConfig, workspace: &Path) -> Result<Self, SandboxError> {
        static SWEEP: std::sync::Once = std::sync::Once::new();
        SWEEP.call_once(|| sweep_orphaned_scratch(&std::env::temp_dir()));
        let name = format!(
            "{SCRATCH_PREFIX}{}-{}",
            std::process::id(),
            uuid::Uuid::new_v4()
        );
        let mut sandbox = Self::new(config, workspace, &std::env::temp_dir().join(name))?;
        sandbox._owned_scratch = Some(Arc::new(OwnedScratch(sandbox.scratch.clone())));
        Ok(sandbox)
    }

    /// The same workspace and scratch directory under another policy.
    pub fn with_config(&self, config: SandboxConfig) -> Sandbox {
        Sandbox {
            config,
            ..self.clone()
        }
    }

    pub fn config(&self) -> &SandboxConfig {
        &self.config
    }

    pub fn workspace(&self) -> &Path {
        &self.workspace
    }

    pub fn scratch(&self) -> &Path {
        &self.scratch
    }

    /// `bash -c <script>` in the workspace, sandboxed as the policy says, with mnemo's own
    /// environment minus secrets. Refused when the policy needs a sandbox that cannot run.
    pub async fn command(&self, script: &str) -> Result<Command, SandboxError> {
        let env: Vec<(OsString, OsString)> = std::env::vars_os().collect();
        self.command_with_env(script, env).await
    }

    /// Like [`Sandbox::command`], with `env` in place of mnemo's own environment (scrubbed the
    /// same way). The child also gets `MNEMO_SCRATCH` and a `TMPDIR` it may write to.
    pub async fn command_with_env(
        &self,
        script: &str,
        env: impl IntoIterator<Item = (OsString, OsString)>,
    ) -> Result<Command, SandboxError> {
        let mut command = match self.config.policy {
            SandboxPolicy::FullAccess => {
                let mut command = Command::new("bash");
                command.arg("-c").arg(script);
                command
            }
            SandboxPolicy::ReadOnly | SandboxPolicy::WorkspaceWrite => {
                availability().await.map_err(SandboxError::Unavailable)?;
                self.wrapped(script)?
            }
        };
        let mut env = env_scrub::scrub_env(env);
        env.push(("MNEMO_SCRATCH".into(), self.scratch.clone().into()));
        if let Some(tmpdir) = self.tmpdir() {
            env.push(("TMPDIR".into(), tmpdir.into()));
        }
        command.current_dir(&self.workspace).env_clear().envs(env);
        Ok(command)
    }

    /// The note for a failed command's output when the sandbox seems to have blocked it.
    pub fn explain_denial(&self, output: &str) -> Option<String> {
        denial::explain(&self.config, output)
    }

    #[cfg(target_os = "linux")]
    fn wrapped(&self, script: &str) -> Result<Command, SandboxError> {
        let masks = bwrap::present_masks();
        let mut command = Command::new(bwrap::BWRAP);
        command.args(bwrap::args(
            &self.config,
            &self.workspace,
            &self.scratch,
            &masks,
            script,
        ));
        Ok(command)
    }

    #[cfg(target_os = "macos")]
    fn wrapped(&self, script: &str) -> Result<Command, SandboxError> {
        let mut command = Command::new(seatbelt::SANDBOX_EXEC);
        command.args(seatbelt::args(
            &self.config,
            &self.workspace,
            &self.scratch,
            script,
        ));
        Ok(command)
    }

    #[cfg(not(any(target_os = "linux", target_os = "macos")))]
    fn wrapped(&self, _script: &str) -> Result<Command, SandboxError> {
        Err(SandboxError::Unavailable(SandboxUnavailable::Unsupported))
    }

    /// Where sandboxed commands keep temporary files: the private `/tmp` on Linux, the scratch
    /// directory on macOS (whose `/tmp` is shared and not writable); unchanged for full access.
    fn tmpdir(&self) -> Option<PathBuf> {
        if !self.config.is_sandboxed() {
            return None;
        }
        match cfg!(target_os = "linux") {
            true => Some(PathBuf::from("/tmp")),
            false => Some(self.scratch.clone()),
        }
    }
}

const SCRATCH_PREFIX: &str = "mnemo-scratch-";

/// Removes our scratch directories in `temp` whose process no longer runs.
fn sweep_orphaned_scratch(temp: &Path) {
    let Ok(entries) = fs::read_dir(temp) else {
        return;
    };
    // SAFETY: geteuid has no preconditions and cannot fail.
    let me = unsafe { libc::geteuid() };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(pid) = name
            .to_str()
            .and_then(|n| n.strip_prefix(SCRATCH_PREFIX))
            .and_then(|rest| rest.split_once('-'))
            .and_then(|(pid, _)| pid.parse::<libc::pid_t>().ok())
        else {
            continue;
        };
        let ours = fs::symlink_metadata(entry.path()).is_ok_and(|m| m.is_dir() && m.uid() == me);
        if ours && !process_alive(pid) {
            let _ = fs::remove_dir_all(entry.path());
        }
    }
}

fn process_alive(pid: libc::pid_t) -> bool {
    // SAFETY: signal 0 only checks that the process exists; nothing is sent.
    let result = unsafe { libc::kill(pid, 0) };
    result == 0 || io::Error::last_os_error().raw_os_error() == Some(libc::EPERM)
}

/// Creates the scratch directory (mode 700) and checks that it is a real directory of ours, so
/// that another user cannot hand us one in the shared temp directory.
fn prepare_scratch(path: &Path) -> io::Result<PathBuf> {
    DirBuilder::new().recursive(true).mode(0o700).create(path)?;
    let meta = fs::symlink_metadata(path)?;
    // SAFETY: geteuid has no preconditions and cannot fail.
    let me = unsafe { libc::geteuid() };
    if !meta.is_dir() || meta.uid() != me {
        let message = "it is not a directory owned by the current user";
        return Err(io::Error::new(io::ErrorKind::PermissionDenied, message));
    }
    fs::canonicalize(path)
}

#[cfg(test)]
mod tests {
    use super::*;

    type TestResult = Result<(), Box<dyn std::error::Error>>;

    #[test]
    fn missing_bwrap_message_names_the_install_command_and_the_way_out() {
        let error = SandboxError::Unavailable(SandboxUnavailable::Missing {
            tool: bwrap::BWRAP,
            install: bwrap::INSTALL_HINT,
        });
        assert_eq!(
            error.to_string(),
            "commands are refused because the sandbox cannot run: bwrap is not installed; \
             install it with `sudo apt-get install bubblewrap`. To run commands without a \
             sandbox instead, choose full access"
        );
    }

    #[test]
    fn a_temporary_scratch_directory_lives_as_long_as_the_last_clone() -> TestResult {
        let dir = tempfile::tempdir()?;
        let sandbox = Sandbox::temporary(SandboxConfig::default(), dir.path())?;
        let scratch = sandbox.scratch().to_path_buf();
        assert_eq!(fs::metadata(&scratch)?.mode() & 0o777, 0o700);
        fs::write(scratch.join("left-behind"), "x")?;
        let clone = sandbox.with_config(SandboxConfig::default());
        drop(sandbox);
        assert!(
            scratch.join("left-behind").exists(),
            "a clone still uses it"
        );
        drop(clone);
        assert!(!scratch.exists());
        Ok(())
    }

    #[test]
    fn scratch_directories_of_dead_processes_are_swept_and_live_ones_kept() -> TestResult {
        let temp = tempfile::tempdir()?;
        let mine = temp
            .path()
            .join(format!("{SCRATCH_PREFIX}{}-a", std::process::id()));
        // Beyond the kernel's pid_max: no such process can exist.
        let dead = temp.path().join(format!("{SCRATCH_PREFIX}99999999-b"));
        let unrelated = temp.path().join("mnemo-scratch-notapid");
        for dir in [&mine, &dead, &unrelated] {
            fs::create_dir(dir)?;
        }
        sweep_orphaned_scratch(temp.path());
        assert!(mine.exists() && unrelated.exists());
        assert!(!dead.exists());
        Ok(())
    }

    #[test]
    fn a_file_in_place_of_the_scratch_directory_is_refused() -> TestResult {
        let dir = tempfile::tempdir()?;
        let file = dir.path().join("scratch");
        fs::write(&file, "")?;
        let result = Sandbox::new(SandboxConfig::default(), dir.path(), &file);
        assert!(matches!(result, Err(SandboxError::Directory { .. })));
        Ok(())
    }

    #[tokio::test]
    async fn full_access_needs_no_sandbox_and_keeps_tmpdir() -> TestResult {
        let dir = tempfile::tempdir()?;
        let config = SandboxConfig {
            policy: SandboxPolicy::FullAccess,
            network: false,
        };
        preflight(&config).await?;
        let sandbox = Sandbox::new(config, dir.path(), &dir.path().join("s"))?;
        let env = [("TMPDIR".into(), "/var/tmp".into())];
        let output = sandbox
            .command_with_env("echo $TMPDIR $MNEMO_SCRATCH", env)
            .await?
            .output()
            .await?;
        let expected = format!("/var/tmp {}\n", sandbox.scratch().display());
        assert_eq!(String::from_utf8_lossy(&output.stdout), expected);
        Ok(())
    }
}
