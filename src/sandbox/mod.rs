//! Keeps what the agent runs inside the workspace. Shell commands (and later the agent's own
//! scripts) run under bubblewrap on Linux and `sandbox-exec` on macOS: the rest of the disk
//! read-only, `.git` and `.mnemo` read-only inside the workspace, secret locations hidden, the
//! network off unless allowed, an environment built from an allow-list, and processes and
//! memory capped. When no sandbox works, commands are refused (fail closed) unless the user
//! chose full access. `docs/security.md` states the whole model.

pub mod approval;
pub mod bwrap;
pub mod cgroup;
pub mod confinement;
pub mod denial;
pub mod domains;
pub mod egress;
pub mod env_allow;
pub mod handles;
pub mod path_guard;
pub mod policy;
pub mod process_tree;
pub mod reentry;
mod run_guard;
pub mod seatbelt;
#[cfg(target_os = "linux")]
pub mod seccomp;
pub mod workspace_check;
pub mod workspace_read;

use std::ffi::OsString;
use std::fs::{self, DirBuilder};
use std::io;
use std::os::unix::fs::{DirBuilderExt, MetadataExt};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use tokio::process::Command;
use tokio::sync::OnceCell;

pub use approval::{ApprovalMode, Escalation};
pub use confinement::{Confinement, Limits, SandboxSection};
pub use policy::{SandboxConfig, SandboxPolicy};
pub use run_guard::{Prepared, RunGuard};

/// Entries of the workspace that commands may read but never write: hooks and config in `.git`
/// run code on the user's next git command, `.mnemo` holds mnemo's own configuration and
/// `.claude` Claude Code's settings, whose hooks run commands.
pub const PROTECTED_ENTRIES: &[&str] = &[".git", ".mnemo", ".claude"];

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
    #[error("cannot pass the system call filter to the sandbox: {source}")]
    Seccomp { source: io::Error },
    #[error("cannot start the proxy that lets commands reach the allowed domains: {source}")]
    Egress { source: io::Error },
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
    confinement: Arc<Confinement>,
    workspace: PathBuf,
    scratch: PathBuf,
    /// Which domains commands reach through the proxy while the network is off.
    gate: Option<Arc<dyn egress::Gate>>,
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
            confinement: Arc::new(Confinement::default()),
            workspace,
            scratch,
            gate: None,
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

    /// The same sandbox with `confinement` (hidden paths, environment, limits).
    pub fn confined(self, confinement: Arc<Confinement>) -> Sandbox {
        Sandbox {
            confinement,
            ..self
        }
    }

    /// The same sandbox, its commands reaching what `gate` allows while the network is off.
    pub fn with_gate(self, gate: Arc<dyn egress::Gate>) -> Sandbox {
        Sandbox {
            gate: Some(gate),
            ..self
        }
    }

    /// The gate commands go through now: sandboxed, network off, and some domain allowed.
    pub fn proxied(&self) -> Option<&Arc<dyn egress::Gate>> {
        self.gate
            .as_ref()
            .filter(|_| self.config.is_sandboxed() && !self.config.network_allowed())
            .filter(|gate| gate.active())
    }

    pub fn config(&self) -> &SandboxConfig {
        &self.config
    }

    pub fn confinement(&self) -> &Confinement {
        &self.confinement
    }

    pub fn workspace(&self) -> &Path {
        &self.workspace
    }

    pub fn scratch(&self) -> &Path {
        &self.scratch
    }

    /// `bash -c <script>` in the workspace, sandboxed as the policy says, with the allowed part
    /// of mnemo's own environment. Refused when the policy needs a sandbox that cannot run.
    pub async fn command(&self, script: &str) -> Result<Prepared, SandboxError> {
        let env: Vec<(OsString, OsString)> = std::env::vars_os().collect();
        self.command_with_env(script, env).await
    }

    /// Like [`Sandbox::command`], with `env` in place of mnemo's own environment (filtered the
    /// same way). The child also gets `MNEMO_SCRATCH` and a `TMPDIR` it may write to. Keep the
    /// returned guard until the command has ended: it holds the command's cgroup.
    pub async fn command_with_env(
        &self,
        script: &str,
        env: impl IntoIterator<Item = (OsString, OsString)>,
    ) -> Result<Prepared, SandboxError> {
        let (mut command, guard) = match self.config.policy {
            SandboxPolicy::FullAccess => {
                let mut command = Command::new("bash");
                command.arg("-c").arg(script);
                // SAFETY: become_subreaper only calls prctl(2), which is async-signal-safe.
                unsafe {
                    command.pre_exec(process_tree::become_subreaper);
                }
                let guard = RunGuard {
                    config: self.config,
                    limits: self.confinement.limits,
                    cgroup: None,
                    _egress: None,
                    domains: None,
                };
                (command, guard)
            }
            SandboxPolicy::ReadOnly | SandboxPolicy::WorkspaceWrite => {
                availability().await.map_err(SandboxError::Unavailable)?;
                self.wrapped(script)?
            }
        };
        let mut env = self.confinement.env.filter(env);
        env.push(("MNEMO_SCRATCH".into(), self.scratch.clone().into()));
        if let Some(tmpdir) = self.tmpdir() {
            env.push(("TMPDIR".into(), tmpdir.into()));
        }
        if let Some(gate) = self.proxied().filter(|_| guard._egress.is_some()) {
            env.extend(egress::proxy_env(gate.as_ref()));
        }
        command.current_dir(&self.workspace).env_clear().envs(env);
        Ok(Prepared { command, guard })
    }

    /// The entries of [`PROTECTED_ENTRIES`] that exist in the workspace now (a file or a
    /// directory, not a symlink: a link would be bound to its target).
    fn protected(&self) -> Vec<PathBuf> {
        PROTECTED_ENTRIES
            .iter()
            .map(|name| self.workspace.join(name))
            .filter(|path| fs::symlink_metadata(path).is_ok_and(|m| !m.file_type().is_symlink()))
            .collect()
    }

    /// The hidden paths that exist now, except those that hold the workspace or the scratch
    /// directory (hiding them would hide the workspace the person chose).
    #[cfg(target_os = "linux")]
    fn hidden_masks(&self) -> Vec<bwrap::Mask> {
        self.confinement
            .hidden_now()
            .iter()
            .filter_map(|path| {
                let real = fs::canonicalize(path).ok()?;
                if self.workspace.starts_with(&real) || self.scratch.starts_with(&real) {
                    return None;
                }
                let meta = fs::metadata(&real).ok()?;
                Some(match meta.is_dir() {
                    true => bwrap::Mask::Dir(real),
                    false => bwrap::Mask::File(real),
                })
            })
            .collect()
    }

    #[cfg(target_os = "linux")]
    fn wrapped(&self, script: &str) -> Result<(Command, RunGuard), SandboxError> {
        use std::os::fd::AsRawFd;
        let limits = self.confinement.limits;
        let masks = bwrap::present_masks();
        let protected = match self.config.policy {
            SandboxPolicy::ReadOnly => Vec::new(),
            SandboxPolicy::WorkspaceWrite | SandboxPolicy::FullAccess => self.protected(),
        };
        let hidden = self.hidden_masks();
        let seccomp = seccomp::program(self.config.network_allowed())
            .map(seccomp::pipe_with)
            .transpose()
            .map_err(|source| SandboxError::Seccomp { source })?;
        let limited = limited_script(&limits);
        let proxied = match self.proxied() {
            Some(gate) => {
                let shim =
                    egress::shim_program().map_err(|source| SandboxError::Egress { source })?;
                let (egress, child_end) = egress::Egress::start(gate.clone())
                    .map_err(|source| SandboxError::Egress { source })?;
                Some((egress, child_end, shim))
            }
            None => None,
        };
        let spec = bwrap::Spec {
            config: &self.config,
            workspace: &self.workspace,
            scratch: &self.scratch,
            masks: &masks,
            protected: &protected,
            hidden: &hidden,
            seccomp_fd: seccomp.as_ref().map(|_| SECCOMP_FD),
            shim: proxied
                .as_ref()
                .map(|(_, _, shim)| (shim.as_path(), EGRESS_FD)),
            script: &limited,
        };
        let mut command = Command::new(bwrap::BWRAP);
        command.args(bwrap::args(&spec)).args(["bash", script]);
        let cgroup = cgroup::CommandCgroup::create(&limits);
        let joins = cgroup.as_ref().map(|c| c.join_fds()).unwrap_or_default();
        let (egress, child_end) = match proxied {
            Some((egress, child_end, _)) => (Some(egress), Some(child_end)),
            None => (None, None),
        };
        let mut given = Vec::new();
        given.extend(seccomp.as_ref().map(|fd| (fd.as_raw_fd(), SECCOMP_FD)));
        given.extend(child_end.as_ref().map(|fd| (fd.as_raw_fd(), EGRESS_FD)));
        // SAFETY: the closure only calls async-signal-safe functions (write, dup2, fcntl). The
        // descriptors it uses stay open until the command is spawned: the cgroup lives in the
        // guard, the pipe and the socket in the closure itself.
        unsafe {
            command.pre_exec(move || {
                let _keep = (&seccomp, &child_end);
                cgroup::join(&joins)?;
                give_fds(&given)
            });
        }
        let guard = RunGuard {
            config: self.config,
            limits,
            cgroup,
            domains: egress
                .as_ref()
                .and(self.proxied())
                .map(|gate| gate.allowed().to_string()),
            _egress: egress,
        };
        Ok((command, guard))
    }

    #[cfg(target_os = "macos")]
    fn wrapped(&self, script: &str) -> Result<(Command, RunGuard), SandboxError> {
        let protected = match self.config.policy {
            SandboxPolicy::ReadOnly => Vec::new(),
            SandboxPolicy::WorkspaceWrite | SandboxPolicy::FullAccess => self.protected(),
        };
        let hidden: Vec<PathBuf> = self
            .confinement
            .hidden_now()
            .into_iter()
            .filter(|p| !self.workspace.starts_with(p) && !self.scratch.starts_with(p))
            .collect();
        let mut command = Command::new(seatbelt::SANDBOX_EXEC);
        command.args(seatbelt::args(
            &self.config,
            &self.workspace,
            &self.scratch,
            &protected,
            &hidden,
            script,
        ));
        let guard = RunGuard {
            config: self.config,
            limits: self.confinement.limits,
            cgroup: None,
            _egress: None,
            domains: None,
        };
        Ok((command, guard))
    }

    #[cfg(not(any(target_os = "linux", target_os = "macos")))]
    fn wrapped(&self, _script: &str) -> Result<(Command, RunGuard), SandboxError> {
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

/// The descriptor bwrap reads the seccomp program from.
#[cfg(target_os = "linux")]
const SECCOMP_FD: i32 = 3;

/// The descriptor the egress shim sends its listener through.
#[cfg(target_os = "linux")]
const EGRESS_FD: i32 = 4;

/// The script bash runs inside the sandbox: it sets the process and memory limits, then runs
/// the command (its first argument) as if it were the script itself. The process limit is set
/// inside the sandbox's user namespace, where it counts only the command's own processes.
#[cfg(target_os = "linux")]
fn limited_script(limits: &Limits) -> String {
    format!(
        "ulimit -u {} -d {} 2>/dev/null\n__mnemo_command=$1; set --\neval \"unset __mnemo_command\n$__mnemo_command\"",
        limits.max_processes,
        limits.max_memory_bytes / 1024,
    )
}

/// Puts each `(fd, target)` pair's descriptor at its target number without close-on-exec, for
/// the child. Copies go above every target first, so one pair never overwrites another's
/// source. Async-signal-safe.
#[cfg(target_os = "linux")]
fn give_fds(pairs: &[(i32, i32)]) -> io::Result<()> {
    let mut copies = [(-1, -1); 2];
    for (slot, &(fd, target)) in copies.iter_mut().zip(pairs) {
        // SAFETY: fcntl on a descriptor this process owns; the copy closes at exec.
        let copy = unsafe { libc::fcntl(fd, libc::F_DUPFD_CLOEXEC, 10) };
        if copy == -1 {
            return Err(io::Error::last_os_error());
        }
        *slot = (copy, target);
    }
    for &(copy, target) in copies.iter().take(pairs.len()) {
        // SAFETY: dup2 on descriptors this process owns; the new one has no close-on-exec.
        if unsafe { libc::dup2(copy, target) } == -1 {
            return Err(io::Error::last_os_error());
        }
    }
    Ok(())
}

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

pub(crate) fn process_alive(pid: libc::pid_t) -> bool {
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
mod tests;
