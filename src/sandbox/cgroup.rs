//! A control group per sandboxed command, where this process may make one: it caps the
//! command's processes and memory as a whole and tells afterwards whether a cap was hit. The
//! process limit inside the sandbox (`ulimit -u`) does not bind root, and a per-process memory
//! limit does not bind a build of many processes; a cgroup binds both. Made beneath this
//! process's own cgroup: cgroup v1 hierarchies (`pids`, `memory`) when writable, or a v2
//! hierarchy whose subtree already delegates `pids`. Everything is best effort: without a
//! writable cgroup the command runs with the in-sandbox limits only.

use std::fs;
use std::io;
use std::os::fd::{AsRawFd, OwnedFd};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use super::confinement::Limits;

const ROOT: &str = "/sys/fs/cgroup";

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Version {
    V1,
    V2,
}

/// Which limit a command ran into.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LimitHit {
    Processes,
    Memory,
}

/// One command's cgroup directories (one per v1 controller, or one v2 group); removed, with
/// anything still in them killed, when dropped.
#[derive(Debug)]
pub struct CommandCgroup {
    version: Version,
    dirs: Vec<PathBuf>,
    /// `cgroup.procs` of each directory, opened before the fork so the child only writes.
    procs: Vec<OwnedFd>,
}

impl CommandCgroup {
    /// A new group capped at `limits`, or `None` when this process cannot make one.
    pub fn create(limits: &Limits) -> Option<Self> {
        static NEXT: AtomicU64 = AtomicU64::new(0);
        let name = format!(
            "mnemo-{}-{}",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed)
        );
        let own = fs::read_to_string("/proc/self/cgroup").ok()?;
        let (version, parents) = match v2_parent(&own) {
            Some(parent) => (Version::V2, vec![parent]),
            None => (Version::V1, v1_parents(&own)),
        };
        static SWEEP: std::sync::Once = std::sync::Once::new();
        SWEEP.call_once(|| parents.iter().for_each(|p| sweep_orphaned(p)));
        Self::make(version, &parents, &name, limits).ok()
    }

    fn make(
        version: Version,
        parents: &[PathBuf],
        name: &str,
        limits: &Limits,
    ) -> io::Result<Self> {
        if parents.is_empty() {
            return Err(io::ErrorKind::Unsupported.into());
        }
        let mut group = Self {
            version,
            dirs: Vec::new(),
            procs: Vec::new(),
        };
        for parent in parents {
            let dir = parent.join(name);
            fs::create_dir(&dir)?;
            group.dirs.push(dir.clone());
            let processes = limits.max_processes.to_string();
            let memory = limits.max_memory_bytes.to_string();
            let settings: &[(&str, &str)] = match version {
                Version::V2 => &[("pids.max", &processes), ("memory.max", &memory)],
                Version::V1 => &[("pids.max", &processes), ("memory.limit_in_bytes", &memory)],
            };
            for (file, value) in settings {
                let path = dir.join(file);
                // A v1 directory holds only its own controller's files.
                if path.exists() {
                    fs::write(path, value)?;
                }
            }
            let procs = fs::OpenOptions::new()
                .write(true)
                .open(dir.join("cgroup.procs"))?;
            group.procs.push(procs.into());
        }
        Ok(group)
    }

    /// The descriptors a child writes "0" to, moving itself in before it runs anything.
    pub fn join_fds(&self) -> Vec<i32> {
        self.procs.iter().map(AsRawFd::as_raw_fd).collect()
    }

    /// The limit the command ran into, if any.
    pub fn hit(&self) -> Option<LimitHit> {
        let count = |file: &str, key: &str| -> u64 {
            self.dirs
                .iter()
                .filter_map(|dir| fs::read_to_string(dir.join(file)).ok())
                .flat_map(|text| {
                    text.lines()
                        .filter_map(|line| line.strip_prefix(key))
                        .filter_map(|rest| rest.trim().parse::<u64>().ok())
                        .collect::<Vec<_>>()
                })
                .sum()
        };
        let memory = match self.version {
            Version::V2 => count("memory.events", "oom_kill ") + count("memory.events", "max "),
            Version::V1 => count("memory.failcnt", "") + count("memory.oom_control", "oom_kill "),
        };
        if memory > 0 {
            return Some(LimitHit::Memory);
        }
        (count("pids.events", "max ") > 0).then_some(LimitHit::Processes)
    }

    /// Kills everything in the group, whatever session or process group it moved to.
    pub fn kill_all(&self) {
        if self.version == Version::V2
            && let Some(dir) = self.dirs.first()
            && fs::write(dir.join("cgroup.kill"), "1").is_ok()
        {
            return;
        }
        for _ in 0..50 {
            let pids: Vec<libc::pid_t> = self
                .dirs
                .iter()
                .filter_map(|dir| fs::read_to_string(dir.join("cgroup.procs")).ok())
                .flat_map(|text| {
                    text.lines()
                        .filter_map(|l| l.trim().parse().ok())
                        .collect::<Vec<_>>()
                })
                .collect();
            if pids.is_empty() {
                return;
            }
            for pid in pids {
                // SAFETY: kill has no memory-safety preconditions; the pids are members of
                // this command's own cgroup.
                unsafe {
                    libc::kill(pid, libc::SIGKILL);
                }
            }
            std::thread::sleep(Duration::from_millis(2));
        }
    }
}

impl Drop for CommandCgroup {
    fn drop(&mut self) {
        self.kill_all();
        let dirs = std::mem::take(&mut self.dirs);
        if remove(&dirs) {
            return;
        }
        // Killed processes leave their group only once reaped; retry a little later.
        std::thread::spawn(move || {
            for _ in 0..40 {
                std::thread::sleep(Duration::from_millis(50));
                if remove(&dirs) {
                    return;
                }
            }
        });
    }
}

/// Removes the groups that killed mnemo processes left behind in `parent` (empty by now: their
/// commands died with bwrap's PID namespace).
fn sweep_orphaned(parent: &Path) {
    let Ok(entries) = fs::read_dir(parent) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(pid) = name
            .to_str()
            .and_then(|n| n.strip_prefix("mnemo-"))
            .and_then(|rest| rest.split_once('-'))
            .and_then(|(pid, _)| pid.parse::<libc::pid_t>().ok())
        else {
            continue;
        };
        if !super::process_alive(pid) {
            let _ = fs::remove_dir(entry.path());
        }
    }
}

/// Removes each directory; `true` when none is left.
fn remove(dirs: &[PathBuf]) -> bool {
    dirs.iter()
        .all(|dir| fs::remove_dir(dir).is_ok() || !dir.exists())
}

/// A child writes "0" to each descriptor to join the group: async-signal-safe, for `pre_exec`.
pub fn join(fds: &[i32]) -> io::Result<()> {
    for &fd in fds {
        // SAFETY: write with a valid buffer; `fd` was opened by this process before the fork.
        if unsafe { libc::write(fd, b"0".as_ptr().cast(), 1) } != 1 {
            return Err(io::Error::last_os_error());
        }
    }
    Ok(())
}

/// Our v2 group's directory when it can hold child groups with the `pids` controller.
fn v2_parent(own: &str) -> Option<PathBuf> {
    let path = own.lines().find_map(|l| l.strip_prefix("0::"))?;
    let dir = Path::new(ROOT).join(path.trim_start_matches('/'));
    let delegated = fs::read_to_string(dir.join("cgroup.subtree_control")).ok()?;
    let writable = fs::metadata(dir.join("cgroup.procs")).is_ok() && is_writable(&dir);
    (delegated.split_whitespace().any(|c| c == "pids") && writable).then_some(dir)
}

/// Our groups in the v1 `pids` and `memory` hierarchies that we may write to.
fn v1_parents(own: &str) -> Vec<PathBuf> {
    v1_groups(own)
        .into_iter()
        .filter(|dir| is_writable(dir))
        .collect()
}

/// The directories of our groups in the v1 `pids` and `memory` hierarchies, from the text of
/// `/proc/self/cgroup`.
fn v1_groups(own: &str) -> Vec<PathBuf> {
    own.lines()
        .filter_map(|line| {
            let mut parts = line.splitn(3, ':');
            let (_, controllers, path) = (parts.next()?, parts.next()?, parts.next()?);
            let controller = controllers
                .split(',')
                .find(|c| *c == "pids" || *c == "memory")?;
            Some(
                Path::new(ROOT)
                    .join(controller)
                    .join(path.trim_start_matches('/')),
            )
        })
        .collect()
}

fn is_writable(dir: &Path) -> bool {
    use std::os::unix::ffi::OsStrExt;
    let Ok(path) = std::ffi::CString::new(dir.as_os_str().as_bytes()) else {
        return false;
    };
    // SAFETY: access reads a valid NUL-terminated path.
    unsafe { libc::access(path.as_ptr(), libc::W_OK) == 0 }
}

/// Whether commands here get a cgroup (checked once, by making and removing one).
pub fn available() -> bool {
    static AVAILABLE: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *AVAILABLE.get_or_init(|| CommandCgroup::create(&Limits::default()).is_some())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn v1_lines_name_the_pids_and_memory_groups() {
        let own = "9:name=systemd:/\n8:pids:/\n4:memory:/box/1\n2:cpu,cpuacct:/\n0::/\n";
        assert_eq!(
            v1_groups(own),
            [
                PathBuf::from("/sys/fs/cgroup/pids"),
                PathBuf::from("/sys/fs/cgroup/memory/box/1")
            ]
        );
    }

    #[test]
    fn a_group_caps_processes_and_says_so() -> Result<(), Box<dyn std::error::Error>> {
        let limits = Limits {
            max_processes: 3,
            max_memory_bytes: 1 << 30,
        };
        let Some(group) = CommandCgroup::create(&limits) else {
            // No writable cgroup here; the sandbox tests cover the in-sandbox limit.
            assert!(!available());
            return Ok(());
        };
        assert!(available());
        let fds = group.join_fds();
        let mut command = std::process::Command::new("bash");
        command.args(["-c", "for i in 1 2 3 4 5 6; do sleep 5 & done; wait"]);
        // SAFETY: `join` only calls write(2), which is async-signal-safe.
        unsafe {
            use std::os::unix::process::CommandExt;
            command.pre_exec(move || join(&fds));
        }
        let output = command.output()?;
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(stderr.contains("fork"), "{stderr}");
        assert_eq!(group.hit(), Some(LimitHit::Processes));
        Ok(())
    }
}
