//! Killing everything an unsandboxed command started. Killing its process group misses children
//! that called `setsid` (or double-forked into a new session), and without a PID namespace
//! nothing else ends them. So the command's shell is made a child subreaper before it runs:
//! orphans anywhere below it are re-parented to it instead of to init, and the whole tree stays
//! reachable through `/proc/<pid>/task/<tid>/children` until it is killed.

use std::io;

/// Makes the calling process a child subreaper. Async-signal-safe, for `pre_exec`.
#[cfg(target_os = "linux")]
pub fn become_subreaper() -> io::Result<()> {
    // SAFETY: prctl with PR_SET_CHILD_SUBREAPER takes a plain integer argument.
    match unsafe { libc::prctl(libc::PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) } {
        0 => Ok(()),
        _ => Err(io::Error::last_os_error()),
    }
}

/// Elsewhere there is no subreaper (and no `/proc` to walk): only the process group is killed.
#[cfg(not(target_os = "linux"))]
pub fn become_subreaper() -> io::Result<()> {
    Ok(())
}

/// Every process below `root` (not `root` itself), parents before their children.
pub fn descendants(root: libc::pid_t) -> Vec<libc::pid_t> {
    let mut found = Vec::new();
    let mut next = vec![root];
    while let Some(pid) = next.pop() {
        for child in children(pid) {
            if !found.contains(&child) {
                found.push(child);
                next.push(child);
            }
        }
    }
    found
}

fn children(pid: libc::pid_t) -> Vec<libc::pid_t> {
    let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
        return Vec::new();
    };
    tasks
        .flatten()
        .filter_map(|task| std::fs::read_to_string(task.path().join("children")).ok())
        .flat_map(|text| {
            text.split_whitespace()
                .filter_map(|id| id.parse().ok())
                .collect::<Vec<_>>()
        })
        .collect()
}

/// Stops and kills every process below `root`, then `root`. Stopping first keeps the tree
/// from growing while it is walked; rounds repeat until nothing is left below `root` (whose
/// subreaper role collects the orphans of killed parents).
pub fn kill_tree(root: libc::pid_t) {
    for _ in 0..20 {
        let below = descendants(root);
        if below.is_empty() {
            break;
        }
        for &pid in &below {
            signal(pid, libc::SIGSTOP);
        }
        for pid in descendants(root) {
            signal(pid, libc::SIGKILL);
        }
        for pid in below {
            signal(pid, libc::SIGKILL);
        }
    }
    signal(root, libc::SIGKILL);
}

fn signal(pid: libc::pid_t, signal: libc::c_int) {
    // SAFETY: kill has no memory-safety preconditions. The pids were read from the tree of a
    // process we spawned and have not reaped, so they name its descendants.
    unsafe {
        libc::kill(pid, signal);
    }
}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    use super::*;
    use std::os::unix::process::CommandExt;
    use std::time::{Duration, Instant};

    fn alive(pid: libc::pid_t) -> bool {
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
        let state = stat
            .rsplit(')')
            .next()
            .and_then(|s| s.split_whitespace().next());
        matches!(state, Some(s) if s != "Z" && s != "X")
    }

    #[test]
    fn a_detached_grandchild_is_found_and_killed() -> Result<(), Box<dyn std::error::Error>> {
        let mut command = std::process::Command::new("bash");
        // One child leaves the session directly, one is orphaned by its exiting subshell.
        command.args(["-c", "setsid sleep 30 & (setsid sleep 31 &); sleep 32"]);
        command.stdout(std::process::Stdio::piped());
        // SAFETY: become_subreaper only calls prctl(2), which is async-signal-safe.
        unsafe {
            command.pre_exec(become_subreaper);
        }
        let mut child = command.spawn()?;
        let root = libc::pid_t::try_from(child.id())?;
        let started = Instant::now();
        // The subshell that orphans the second sleep is briefly a third descendant.
        while descendants(root).len() != 2 && started.elapsed() < Duration::from_secs(5) {
            std::thread::sleep(Duration::from_millis(10));
        }
        let below = descendants(root);
        assert_eq!(below.len(), 2, "{below:?}");
        kill_tree(root);
        child.wait()?;
        std::thread::sleep(Duration::from_millis(50));
        let survivors: Vec<_> = below.into_iter().filter(|&p| alive(p)).collect();
        assert!(survivors.is_empty(), "still running: {survivors:?}");
        Ok(())
    }
}
