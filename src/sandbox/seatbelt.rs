//! macOS sandboxing with `sandbox-exec`: a generated deny-default Seatbelt profile. Reading is
//! allowed everywhere but the hidden paths (as on Linux, where the root is bound read-only);
//! writing only in the scratch directory and, unless read-only, the workspace minus its
//! protected entries (`.git`, `.mnemo`); the network only when allowed.
//! Paths reach the profile as `-D` parameters, so no path is ever spliced into its text.
//! The generator is pure and tested on every platform; only the start-up check needs macOS.

use std::ffi::OsString;
use std::path::{Path, PathBuf};

use super::policy::{SandboxConfig, SandboxPolicy};

/// The program, by absolute path so `PATH` cannot replace it.
pub const SANDBOX_EXEC: &str = "/usr/bin/sandbox-exec";

/// What every sandboxed command may do, whatever the policy.
const BASE: &str = r#"(version 1)
(deny default)
(allow process-exec process-fork)
(allow signal (target same-sandbox))
(allow process-info* (target same-sandbox))
(allow sysctl-read)
(allow user-preference-read)
(allow ipc-posix-sem ipc-posix-shm)
(allow mach-lookup (global-name "com.apple.system.opendirectoryd.libinfo"))
(allow pseudo-tty)
(allow file-read* file-write* file-ioctl (literal "/dev/ptmx") (regex #"^/dev/ttys[0-9]+$"))
(allow file-write-data file-ioctl
  (literal "/dev/null") (literal "/dev/zero") (literal "/dev/tty") (regex #"^/dev/fd/[0-9]+$"))
(allow file-write* (subpath (param "SCRATCH")))
"#;

/// The network, name resolution and certificate checks (network allowed).
const NETWORK: &str = r#"(allow network-outbound network-inbound system-socket)
(allow mach-lookup
  (global-name "com.apple.dnssd.service")
  (global-name "com.apple.SystemConfiguration.DNSConfiguration")
  (global-name "com.apple.SystemConfiguration.configd")
  (global-name "com.apple.networkd")
  (global-name "com.apple.trustd.agent")
  (global-name "com.apple.ocspd"))
"#;

/// `(require-any (subpath (param "NAME_0")) …)` over `count` parameters.
fn any_of(name: &str, count: usize) -> String {
    let paths: Vec<String> = (0..count)
        .map(|i| format!("(subpath (param \"{name}_{i}\"))"))
        .collect();
    format!("(require-any {})", paths.join(" "))
}

/// The profile for a sandboxed policy (full access runs without `sandbox-exec`), with
/// `protected` workspace entries kept read-only and `hidden` paths unreadable.
pub fn profile(config: &SandboxConfig, protected: usize, hidden: usize) -> String {
    let mut profile = String::from(BASE);
    match hidden {
        0 => profile.push_str("(allow file-read*)\n"),
        n => profile.push_str(&format!(
            "(allow file-read* (require-not {}))\n",
            any_of("HIDDEN", n)
        )),
    }
    match (config.policy, protected) {
        (SandboxPolicy::ReadOnly, _) => {}
        (SandboxPolicy::WorkspaceWrite | SandboxPolicy::FullAccess, 0) => {
            profile.push_str("(allow file-write* (subpath (param \"WORKSPACE\")))\n");
        }
        (SandboxPolicy::WorkspaceWrite | SandboxPolicy::FullAccess, n) => {
            profile.push_str(&format!(
                "(allow file-write* (require-all (subpath (param \"WORKSPACE\")) \
                 (require-not {})))\n",
                any_of("PROTECTED", n)
            ));
        }
    }
    if config.network_allowed() {
        profile.push_str(NETWORK);
    }
    profile
}

/// The arguments to `sandbox-exec` running `bash -c <script>`. Paths must be canonical
/// (`/private/var/…`, not `/var/…`), since Seatbelt matches resolved paths.
pub fn args(
    config: &SandboxConfig,
    workspace: &Path,
    scratch: &Path,
    protected: &[PathBuf],
    hidden: &[PathBuf],
    script: &str,
) -> Vec<OsString> {
    let param = |name: &str, path: &Path| {
        let mut arg = OsString::from(format!("-D{name}="));
        arg.push(path);
        arg
    };
    let profile = profile(config, protected.len(), hidden.len());
    let mut args: Vec<OsString> = vec!["-p".into(), profile.into()];
    args.push(param("WORKSPACE", workspace));
    args.push(param("SCRATCH", scratch));
    for (i, path) in protected.iter().enumerate() {
        args.push(param(&format!("PROTECTED_{i}"), path));
    }
    for (i, path) in hidden.iter().enumerate() {
        args.push(param(&format!("HIDDEN_{i}"), path));
    }
    for arg in ["--", "bash", "-c", script] {
        args.push(arg.into());
    }
    args
}

/// Runs a trivial command under `sandbox-exec`; `Ok` when it works.
#[cfg(target_os = "macos")]
pub async fn probe() -> Result<(), super::SandboxUnavailable> {
    let output = tokio::process::Command::new(SANDBOX_EXEC)
        .args(["-p", "(version 1)(allow default)", "/usr/bin/true"])
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .kill_on_drop(true)
        .output()
        .await;
    match output {
        Ok(output) if output.status.success() => Ok(()),
        Ok(output) => Err(super::SandboxUnavailable::Unusable {
            tool: SANDBOX_EXEC,
            detail: String::from_utf8_lossy(&output.stderr).trim().to_string(),
            hint: "sandbox-exec refuses to run here (is mnemo itself already sandboxed?)",
        }),
        Err(e) => Err(super::SandboxUnavailable::Unusable {
            tool: SANDBOX_EXEC,
            detail: e.to_string(),
            hint: "sandbox-exec ships with macOS; check that /usr/bin/sandbox-exec exists",
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(policy: SandboxPolicy, network: bool) -> SandboxConfig {
        SandboxConfig { policy, network }
    }

    #[test]
    fn profile_denies_by_default_and_allows_reads_and_scratch_writes() {
        let profile = profile(&config(SandboxPolicy::ReadOnly, false), 0, 0);
        assert!(profile.starts_with("(version 1)\n(deny default)\n"));
        assert!(profile.contains("(allow file-read*)"));
        assert!(profile.contains("(allow file-write* (subpath (param \"SCRATCH\")))"));
        assert!(!profile.contains("WORKSPACE"), "{profile}");
        assert!(!profile.contains("network"), "{profile}");
    }

    #[test]
    fn workspace_write_adds_only_the_workspace() {
        let profile = profile(&config(SandboxPolicy::WorkspaceWrite, false), 0, 0);
        let writes: Vec<&str> = profile
            .lines()
            .filter(|l| l.starts_with("(allow file-write* (subpath"))
            .collect();
        assert_eq!(
            writes,
            [
                "(allow file-write* (subpath (param \"SCRATCH\")))",
                "(allow file-write* (subpath (param \"WORKSPACE\")))"
            ]
        );
    }

    #[test]
    fn network_only_when_allowed() {
        let offline = profile(&config(SandboxPolicy::WorkspaceWrite, false), 0, 0);
        assert!(!offline.contains("network-outbound"));
        let online = profile(&config(SandboxPolicy::WorkspaceWrite, true), 0, 0);
        assert!(online.contains("(allow network-outbound network-inbound system-socket)"));
        assert!(online.contains("com.apple.dnssd.service"));
    }

    #[test]
    fn parentheses_balance() {
        for policy in [SandboxPolicy::ReadOnly, SandboxPolicy::WorkspaceWrite] {
            let profile = profile(&config(policy, true), 2, 3);
            let mut depth = 0i32;
            for c in profile.chars() {
                depth += match c {
                    '(' => 1,
                    ')' => -1,
                    _ => 0,
                };
                assert!(depth >= 0, "{profile}");
            }
            assert_eq!(depth, 0, "{profile}");
        }
    }

    #[test]
    fn paths_are_parameters_not_profile_text() {
        let workspace = Path::new("/Users/me/a \"quoted\" (dir)");
        let args = args(
            &config(SandboxPolicy::WorkspaceWrite, false),
            workspace,
            Path::new("/private/var/folders/x/scratch"),
            &[PathBuf::from("/Users/me/a/.git")],
            &[PathBuf::from("/Users/me/.ssh")],
            "ls",
        );
        let args: Vec<String> = args
            .iter()
            .map(|a| a.to_string_lossy().into_owned())
            .collect();
        assert_eq!(args[0], "-p");
        assert!(!args[1].contains("/Users/me"));
        assert_eq!(args[2], "-DWORKSPACE=/Users/me/a \"quoted\" (dir)");
        assert_eq!(args[3], "-DSCRATCH=/private/var/folders/x/scratch");
        assert_eq!(args[4], "-DPROTECTED_0=/Users/me/a/.git");
        assert_eq!(args[5], "-DHIDDEN_0=/Users/me/.ssh");
        assert_eq!(args[6..], ["--", "bash", "-c", "ls"]);
    }

    #[test]
    fn protected_entries_stay_read_only_and_hidden_paths_unreadable() {
        let profile = profile(&config(SandboxPolicy::WorkspaceWrite, false), 2, 1);
        assert!(
            profile.contains(
                "(allow file-write* (require-all (subpath (param \"WORKSPACE\")) (require-not \
             (require-any (subpath (param \"PROTECTED_0\")) (subpath (param \"PROTECTED_1\"))))))"
            ),
            "{profile}"
        );
        assert!(
            profile.contains(
                "(allow file-read* (require-not (require-any (subpath (param \"HIDDEN_0\")))))"
            ),
            "{profile}"
        );
        assert!(!profile.contains("(allow file-read*)\n"), "{profile}");
    }
}
