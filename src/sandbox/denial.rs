//! Recognising a command that failed because the sandbox stopped it, so the model is told so
//! plainly instead of guessing at permissions, retrying the same thing or working around it.

use super::cgroup::LimitHit;
use super::confinement::Limits;
use super::policy::{SandboxConfig, SandboxPolicy};

/// What a command that could not start another process prints.
const PROCESS_LIMIT_SIGNS: &[&str] = &[
    "fork: retry: Resource temporarily unavailable",
    "fork: Resource temporarily unavailable",
    "Cannot fork",
    "can't start new thread",
    "failed to spawn thread",
];

/// What a command that could not get memory prints.
const MEMORY_LIMIT_SIGNS: &[&str] = &[
    "Cannot allocate memory",
    "memory allocation of",
    "MemoryError",
    "out of memory",
    "Out of memory",
];

/// The note for a command that ran into a limit of its sandbox: `hit` is what its cgroup
/// recorded, if it had one; otherwise the output tells.
pub fn explain_limit(limits: &Limits, hit: Option<LimitHit>, output: &str) -> Option<String> {
    let seen = |signs: &[&str]| signs.iter().any(|sign| output.contains(sign));
    let hit = hit.or_else(|| {
        if seen(PROCESS_LIMIT_SIGNS) {
            Some(LimitHit::Processes)
        } else if seen(MEMORY_LIMIT_SIGNS) {
            Some(LimitHit::Memory)
        } else {
            None
        }
    })?;
    Some(match hit {
        LimitHit::Processes => format!(
            "[limit] The command reached the process limit of its sandbox ({} processes and \
             threads per command, `[sandbox] max_processes`) and was stopped from starting \
             more. Run fewer things at once (for example a lower `-j`); only the user can \
             raise the limit.",
            limits.max_processes
        ),
        LimitHit::Memory => format!(
            "[limit] The command ran out of the memory its sandbox allows ({} MiB per command, \
             `[sandbox] max_memory_mb`). Use less memory at once (smaller inputs, fewer \
             parallel jobs); only the user can raise the limit.",
            limits.memory_mb()
        ),
    })
}

/// Error texts that a blocked write or a blocked system call produce (EROFS, EPERM, bwrap's own
/// errors).
const WRITE_SIGNS: &[&str] = &[
    "Read-only file system",
    "Operation not permitted",
    "bwrap: ",
];

/// Error texts of a command that could not reach the network.
const NETWORK_SIGNS: &[&str] = &[
    "Network is unreachable",
    "Could not resolve host",
    "Temporary failure in name resolution",
    "Name or service not known",
    "nodename nor servname provided",
    "Connection refused",
    "Failed to connect",
];

/// The note appended to a failed command's output when the failure looks like the sandbox's
/// doing; `None` when it does not (or when nothing is sandboxed).
pub fn explain(config: &SandboxConfig, output: &str) -> Option<String> {
    if !config.is_sandboxed() {
        return None;
    }
    let write_blocked = WRITE_SIGNS.iter().any(|sign| output.contains(sign));
    let network_blocked =
        !config.network_allowed() && NETWORK_SIGNS.iter().any(|sign| output.contains(sign));
    if !write_blocked && !network_blocked {
        return None;
    }
    let what = match (write_blocked, network_blocked) {
        (true, true) => "a write outside the allowed places or a network access",
        (true, false) => "a write outside the allowed places (or a forbidden system call)",
        _ => "a network access",
    };
    let places = match config.policy {
        SandboxPolicy::ReadOnly => {
            "only in the session's scratch directory ($MNEMO_SCRATCH) and /tmp, not in the \
             workspace"
        }
        SandboxPolicy::WorkspaceWrite | SandboxPolicy::FullAccess => {
            "only in the workspace, the session's scratch directory ($MNEMO_SCRATCH) and /tmp"
        }
    };
    let network = match config.network_allowed() {
        true => "may use the network",
        false => "have no network",
    };
    Some(format!(
        "[sandbox] This failure looks like the sandbox blocked {what}. Commands run sandboxed \
         ({}): they may write {places}, and {network}. Do not try to get around the sandbox; \
         if the action is really needed, run the command again with the shell tool's \
         `escalation` argument (`network` or `full_access`) so the user is asked, and say why.",
        config.describe(),
    ))
}

/// What a command prints when the proxy refused it, or when it tried to go around the proxy.
const PROXY_SIGNS: &[&str] = &[
    "mnemo's sandbox proxy",
    "CONNECT tunnel failed",
    "403 Forbidden",
];

/// [`explain`] for a command whose network opens only to `domains` through mnemo's proxy.
pub fn explain_proxied(config: &SandboxConfig, domains: &str, output: &str) -> Option<String> {
    let refused = PROXY_SIGNS.iter().any(|sign| output.contains(sign));
    if !refused && !NETWORK_SIGNS.iter().any(|sign| output.contains(sign)) {
        return explain(config, output);
    }
    Some(format!(
        "[sandbox] This failure looks like the sandbox blocked a network access. Commands reach \
         the network only through mnemo's proxy (HTTP_PROXY and HTTPS_PROXY are set), and only \
         these domains: {domains}. Other hosts, and connections that do not use the proxy, \
         reach nothing. Do not try to get around it; if another domain is really needed, say \
         which and why, and the user can add it to [sandbox] allow_domains."
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_proxied_command_hears_which_domains_it_may_reach() {
        let config = SandboxConfig::default();
        let note = explain_proxied(
            &config,
            "crates.io",
            "curl: (56) CONNECT tunnel failed, response 403",
        );
        let note = note.unwrap_or_default();
        assert!(note.contains("only these domains: crates.io"), "{note}");
        assert!(explain_proxied(&config, "crates.io", "all fine").is_none());
    }

    fn config(policy: SandboxPolicy, network: bool) -> SandboxConfig {
        SandboxConfig { policy, network }
    }

    #[test]
    fn limits_are_named_from_the_cgroup_or_the_output() {
        let limits = Limits {
            max_processes: 64,
            max_memory_bytes: 256 << 20,
        };
        let fork = "bash: fork: retry: Resource temporarily unavailable\nexit code: 254";
        let note = explain_limit(&limits, None, fork).unwrap_or_default();
        assert!(
            note.contains("process limit") && note.contains("64 processes"),
            "{note}"
        );
        let note = explain_limit(&limits, Some(LimitHit::Memory), "Killed").unwrap_or_default();
        assert!(note.contains("256 MiB"), "{note}");
        assert_eq!(explain_limit(&limits, None, "exit code: 1"), None);
    }

    #[test]
    fn read_only_file_system_is_reported_as_a_sandbox_block() {
        let output = "touch: cannot touch '/etc/x': Read-only file system\nexit code: 1";
        let note = explain(&SandboxConfig::default(), output);
        let Some(note) = note else {
            panic!("expected a note")
        };
        assert!(note.starts_with("[sandbox] This failure looks like the sandbox blocked a write"));
        assert!(note.contains("workspace-write, network off"), "{note}");
        assert!(note.contains("have no network"), "{note}");
    }

    #[test]
    fn network_failures_count_only_without_network() {
        let output = "curl: (6) Could not resolve host: example.com";
        let offline = explain(&config(SandboxPolicy::WorkspaceWrite, false), output);
        assert!(offline.is_some_and(|n| n.contains("blocked a network access")));
        assert_eq!(
            explain(&config(SandboxPolicy::WorkspaceWrite, true), output),
            None
        );
    }

    #[test]
    fn read_only_note_says_the_workspace_is_not_writable() {
        let output = "bash: line 1: f: Read-only file system";
        let note = explain(&config(SandboxPolicy::ReadOnly, false), output);
        assert!(note.is_some_and(|n| n.contains("/tmp, not in the workspace")));
    }

    #[test]
    fn ordinary_failures_and_full_access_get_no_note() {
        let config_ws = SandboxConfig::default();
        assert_eq!(explain(&config_ws, "error[E0308]: mismatched types"), None);
        let full = config(SandboxPolicy::FullAccess, false);
        assert_eq!(explain(&full, "Read-only file system"), None);
    }
}
