//! What a prepared command carries until it has ended: its cgroup, its proxy, and what
//! explains its failure or kills all it started.

use super::cgroup;
use super::confinement::Limits;
use super::denial;
use super::egress;
use super::policy::SandboxConfig;
use super::process_tree;
use tokio::process::Command;

/// A command ready to spawn, and what must live as long as it runs.
pub struct Prepared {
    pub command: Command,
    pub guard: RunGuard,
}

/// Held while a command runs: its cgroup (if any) and what is needed to explain its failure
/// or kill all it started.
pub struct RunGuard {
    pub(super) config: SandboxConfig,
    pub(super) limits: Limits,
    pub(super) cgroup: Option<cgroup::CommandCgroup>,
    /// The command's proxy, when its network opens per domain.
    pub(super) _egress: Option<egress::Egress>,
    /// The domains it let through when the command started ("crates.io, *.pypi.org").
    pub(super) domains: Option<String>,
}

impl RunGuard {
    /// Kills everything the command started. `pid` is the spawned process, leader of its own
    /// process group. Unsandboxed and not yet reaped, its whole tree is walked (it is a
    /// subreaper); sandboxed, bwrap's PID namespace and the cgroup end everything once bwrap
    /// is killed.
    pub fn kill(&self, pid: libc::pid_t, reaped: bool) {
        if !self.config.is_sandboxed() && !reaped {
            process_tree::kill_tree(pid);
        }
        // SAFETY: killpg has no memory-safety preconditions; the group is the one the command
        // was spawned into, which lives as long as any member does.
        unsafe {
            libc::killpg(pid, libc::SIGKILL);
        }
        if let Some(cgroup) = &self.cgroup {
            cgroup.kill_all();
        }
    }

    /// The note for a failed command's output: a limit it ran into, or the sandbox that
    /// seems to have blocked it.
    pub fn explain(&self, output: &str) -> Option<String> {
        self.limit_note(output).or_else(|| match &self.domains {
            Some(domains) => denial::explain_proxied(&self.config, domains, output),
            None => denial::explain(&self.config, output),
        })
    }

    /// The note for a command that ran into its process or memory limit, if it did.
    pub fn limit_note(&self, output: &str) -> Option<String> {
        if !self.config.is_sandboxed() {
            return None;
        }
        let hit = self.cgroup.as_ref().and_then(cgroup::CommandCgroup::hit);
        denial::explain_limit(&self.limits, hit, output)
    }
}
