//! Linux sandboxing with bubblewrap: the argument list that wraps one `bash -c` command, and the
//! start-up check that tells whether bwrap works on this machine at all.
//!
//! The root is bound read-only; the workspace (unless read-only) and the session's scratch
//! directory are bound writable; `/tmp`, `/dev` and `/proc` are private; every namespace is
//! unshared (the network only when it is not allowed). `--cap-drop ALL` matters when mnemo runs
//! as root (CI, containers): root inside the user namespace could otherwise remount `/`
//! read-write and write to the host. Unix sockets of daemons (docker, the system bus, per-user
//! agents under `/run/user`) stay reachable through a read-only bind, so they are masked.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::Stdio;

use super::SandboxUnavailable;
use super::egress::shim;
use super::policy::{SandboxConfig, SandboxPolicy};

/// The program; found on `PATH`.
pub const BWRAP: &str = "bwrap";
/// What the user is told to run when bwrap is missing.
pub const INSTALL_HINT: &str = "sudo apt-get install bubblewrap";

/// Daemon sockets that would let a command act outside the sandbox; hidden when present.
const MASKED_SOCKETS: &[&str] = &[
    "/run/docker.sock",
    "/var/run/docker.sock",
    "/run/containerd/containerd.sock",
    "/run/podman/podman.sock",
    "/run/dbus/system_bus_socket",
    "/run/systemd/private",
];
/// Directories replaced by an empty tmpfs when present: per-user runtime directories hold the
/// session bus, the systemd user manager and ssh/gpg agent sockets.
const MASKED_DIRS: &[&str] = &["/run/user"];

/// A host path hidden from sandboxed commands.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Mask {
    /// A socket or file, covered with `/dev/null`.
    File(PathBuf),
    /// A directory, covered with an empty tmpfs.
    Dir(PathBuf),
}

/// The masks that apply on this machine: the known paths that exist, resolved and deduplicated
/// (`/var/run` is usually a link to `/run`).
pub fn present_masks() -> Vec<Mask> {
    let mut masks: Vec<Mask> = Vec::new();
    let found = |path: &&str| std::fs::canonicalize(path).ok();
    for path in MASKED_SOCKETS.iter().filter_map(found) {
        let mask = Mask::File(path);
        if !masks.contains(&mask) {
            masks.push(mask);
        }
    }
    masks.extend(MASKED_DIRS.iter().filter_map(found).map(Mask::Dir));
    masks
}

/// The options shared by every run and by the start-up check: namespaces, process control and
/// the read-only root with private `/tmp`.
fn base_args(network_allowed: bool, masks: &[Mask]) -> Vec<OsString> {
    let mut args: Vec<OsString> = vec!["--unshare-all".into()];
    if network_allowed {
        args.push("--share-net".into());
    }
    for arg in [
        "--die-with-parent",
        "--new-session",
        "--cap-drop",
        "ALL",
        "--ro-bind",
        "/",
        "/",
    ] {
        args.push(arg.into());
    }
    push_masks(&mut args, masks);
    args.extend(["--tmpfs".into(), "/tmp".into()]);
    args
}

fn push_masks(args: &mut Vec<OsString>, masks: &[Mask]) {
    for mask in masks {
        match mask {
            Mask::File(path) => {
                args.extend(["--ro-bind".into(), "/dev/null".into(), path.into()]);
            }
            Mask::Dir(path) => args.extend(["--tmpfs".into(), path.into()]),
        }
    }
}

/// Everything one sandboxed command is run with.
pub struct Spec<'a> {
    pub config: &'a SandboxConfig,
    pub workspace: &'a Path,
    pub scratch: &'a Path,
    /// Daemon sockets, hidden first (a workspace below them stays visible).
    pub masks: &'a [Mask],
    /// Entries of the workspace bound read-only over its writable bind (`.git`, `.mnemo`).
    pub protected: &'a [PathBuf],
    /// Secret locations and mnemo's own directories, hidden last so that they stay hidden
    /// inside the workspace too.
    pub hidden: &'a [Mask],
    /// The file descriptor bwrap reads a seccomp program from.
    pub seccomp_fd: Option<i32>,
    /// The `mnemo` program that starts the command as the egress shim, and the descriptor it
    /// sends its listener through; `None` when the network is not opened per domain.
    pub shim: Option<(&'a Path, i32)>,
    /// The script bash runs: the command, with the process limit set before it.
    pub script: &'a str,
}

/// The full argument list for `bwrap` running `bash -c <script>` in the workspace. Binds come
/// after the private `/tmp` so a workspace or scratch directory under `/tmp` stays visible;
/// `/dev` and `/proc` come last so nothing covers them.
pub fn args(spec: &Spec) -> Vec<OsString> {
    let mut args = base_args(spec.config.network_allowed(), spec.masks);
    let workspace_bind = match spec.config.policy {
        SandboxPolicy::ReadOnly => "--ro-bind",
        SandboxPolicy::WorkspaceWrite | SandboxPolicy::FullAccess => "--bind",
    };
    let workspace = spec.workspace;
    args.extend([workspace_bind.into(), workspace.into(), workspace.into()]);
    for path in spec.protected {
        args.extend(["--ro-bind".into(), path.into(), path.into()]);
    }
    args.extend(["--bind".into(), spec.scratch.into(), spec.scratch.into()]);
    push_masks(&mut args, spec.hidden);
    if let Some((program, _)) = spec.shim {
        args.extend(["--ro-bind".into(), program.into(), SHIM_PATH.into()]);
    }
    for arg in ["--dev", "/dev", "--proc", "/proc"] {
        args.push(arg.into());
    }
    if let Some(fd) = spec.seccomp_fd {
        args.extend(["--seccomp".into(), fd.to_string().into()]);
    }
    args.extend(["--chdir".into(), workspace.into()]);
    args.push("--".into());
    if let Some((_, fd)) = spec.shim {
        args.extend([SHIM_PATH.into(), shim::ARG.into(), fd.to_string().into()]);
    }
    for arg in ["bash", "-c", spec.script] {
        args.push(arg.into());
    }
    args
}

/// Where the shim program is bound inside the sandbox: in its private `/tmp`, so it is there
/// whatever hides the place `mnemo` was installed in.
const SHIM_PATH: &str = "/tmp/.mnemo-egress-shim";

/// Runs `bwrap … true` with the options every command uses; `Ok` when it works.
pub async fn probe() -> Result<(), SandboxUnavailable> {
    let mut args = base_args(false, &present_masks());
    for arg in ["--dev", "/dev", "--proc", "/proc", "--", "true"] {
        args.push(arg.into());
    }
    let output = tokio::process::Command::new(BWRAP)
        .args(&args)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .output()
        .await;
    match output {
        Ok(output) if output.status.success() => Ok(()),
        Ok(output) => Err(SandboxUnavailable::Unusable {
            tool: BWRAP,
            detail: String::from_utf8_lossy(&output.stderr).trim().to_string(),
            hint: "bubblewrap needs unprivileged user namespaces: check \
                   `sysctl kernel.unprivileged_userns_clone` (Debian) or \
                   `sysctl kernel.apparmor_restrict_unprivileged_userns` (Ubuntu 24.04+), or \
                   whether a container runtime forbids them",
        }),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Err(SandboxUnavailable::Missing {
            tool: BWRAP,
            install: INSTALL_HINT,
        }),
        Err(e) => Err(SandboxUnavailable::Unusable {
            tool: BWRAP,
            detail: e.to_string(),
            hint: "check that bwrap is installed and executable",
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn strings(args: &[OsString]) -> Vec<String> {
        args.iter()
            .map(|a| a.to_string_lossy().into_owned())
            .collect()
    }

    fn run(policy: SandboxPolicy, network: bool, masks: &[Mask]) -> Vec<String> {
        let config = SandboxConfig { policy, network };
        let spec = Spec {
            config: &config,
            workspace: Path::new("/w"),
            scratch: Path::new("/tmp/s"),
            masks,
            protected: &[],
            hidden: &[],
            seccomp_fd: None,
            shim: None,
            script: "echo hi",
        };
        strings(&args(&spec))
    }

    #[test]
    fn workspace_write_without_network_has_the_documented_layout() {
        let expected = "--unshare-all --die-with-parent --new-session --cap-drop ALL \
            --ro-bind / / --tmpfs /tmp --bind /w /w --bind /tmp/s /tmp/s --dev /dev \
            --proc /proc --chdir /w -- bash -c";
        let mut expected: Vec<String> = expected.split(' ').map(String::from).collect();
        expected.push("echo hi".into());
        assert_eq!(run(SandboxPolicy::WorkspaceWrite, false, &[]), expected);
    }

    #[test]
    fn a_proxied_command_starts_through_the_shim_bound_into_private_tmp() {
        let config = SandboxConfig::default();
        let spec = Spec {
            config: &config,
            workspace: Path::new("/w"),
            scratch: Path::new("/tmp/s"),
            masks: &[],
            protected: &[],
            hidden: &[],
            seccomp_fd: Some(3),
            shim: Some((Path::new("/usr/bin/mnemo"), 4)),
            script: "echo hi",
        };
        let args = strings(&args(&spec)).join(" ");
        let tmpfs = args.find("--tmpfs /tmp");
        let bound = args.find("--ro-bind /usr/bin/mnemo /tmp/.mnemo-egress-shim");
        assert!(tmpfs < bound && bound.is_some(), "{args}");
        assert!(
            args.ends_with("-- /tmp/.mnemo-egress-shim __egress-shim 4 bash -c echo hi"),
            "{args}"
        );
        assert!(!args.contains("--share-net"), "{args}");
    }

    #[test]
    fn network_is_shared_only_when_allowed() {
        let offline = run(SandboxPolicy::WorkspaceWrite, false, &[]);
        assert!(!offline.contains(&"--share-net".to_string()));
        let online = run(SandboxPolicy::WorkspaceWrite, true, &[]);
        assert_eq!(online[..2], ["--unshare-all", "--share-net"]);
    }

    #[test]
    fn read_only_binds_the_workspace_read_only_but_keeps_scratch_writable() {
        let args = run(SandboxPolicy::ReadOnly, false, &[]).join(" ");
        assert!(args.contains("--ro-bind /w /w"), "{args}");
        assert!(!args.contains("--bind /w"), "{args}");
        assert!(args.contains("--bind /tmp/s /tmp/s"), "{args}");
    }

    #[test]
    fn protected_entries_are_read_only_over_the_workspace_and_hidden_paths_come_last() {
        let config = SandboxConfig::default();
        let hidden = [
            Mask::Dir("/home/u/.ssh".into()),
            Mask::File("/home/u/.netrc".into()),
        ];
        let spec = Spec {
            config: &config,
            workspace: Path::new("/w"),
            scratch: Path::new("/tmp/s"),
            masks: &[],
            protected: &[PathBuf::from("/w/.git"), PathBuf::from("/w/.mnemo")],
            hidden: &hidden,
            seccomp_fd: Some(3),
            shim: None,
            script: "echo hi",
        };
        let args = strings(&args(&spec)).join(" ");
        let workspace = args.find("--bind /w /w");
        let git = args.find("--ro-bind /w/.git /w/.git");
        let mnemo = args.find("--ro-bind /w/.mnemo /w/.mnemo");
        let ssh = args.find("--tmpfs /home/u/.ssh");
        let netrc = args.find("--ro-bind /dev/null /home/u/.netrc");
        let seccomp = args.find("--seccomp 3 --chdir /w -- bash -c echo hi");
        assert!(workspace < git && git < mnemo && mnemo < ssh, "{args}");
        assert!(ssh < netrc && netrc < seccomp, "{args}");
    }

    #[test]
    fn masks_come_after_the_root_and_before_the_workspace() {
        let masks = [
            Mask::File("/run/docker.sock".into()),
            Mask::Dir("/run/user".into()),
        ];
        let args = run(SandboxPolicy::WorkspaceWrite, false, &masks).join(" ");
        let root = args.find("--ro-bind / /");
        let socket = args.find("--ro-bind /dev/null /run/docker.sock");
        let dir = args.find("--tmpfs /run/user");
        let workspace = args.find("--bind /w /w");
        assert!(root < socket && socket < dir && dir < workspace, "{args}");
    }
}
