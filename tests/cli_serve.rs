//! `mnemo serve` as a person runs it: it starts and logs, refuses a second daemon on the same
//! data directory, `mnemo status` sees it, and SIGTERM stops it within a second.

mod cli_support;

use std::time::{Duration, Instant};

use cli_support::{Workspace, text};

type TestResult = Result<(), Box<dyn std::error::Error>>;

/// Waits (within a limit) until `ready` holds.
fn wait_for(what: &str, mut ready: impl FnMut() -> bool) -> Result<(), String> {
    let deadline = Instant::now() + Duration::from_secs(20);
    while !ready() {
        if Instant::now() > deadline {
            return Err(format!("timed out waiting for {what}"));
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    Ok(())
}

fn terminate(child: &std::process::Child) -> Result<(), std::io::Error> {
    let pid = libc::pid_t::try_from(child.id()).map_err(std::io::Error::other)?;
    // SAFETY: sends SIGTERM to a child this test started.
    match unsafe { libc::kill(pid, libc::SIGTERM) } {
        0 => Ok(()),
        _ => Err(std::io::Error::last_os_error()),
    }
}

#[test]
fn serve_runs_once_per_data_directory_and_stops_on_sigterm() -> TestResult {
    let ws = Workspace::new();
    let status = text(&ws.mnemo(&["status"], None).stdout);
    assert!(status.contains("not running"), "{status}");

    let mut daemon = ws.command(&["serve"]).spawn()?;
    let log = ws.path().join(".data/serve.log");
    wait_for("the start in the log", || {
        std::fs::read_to_string(&log).is_ok_and(|l| l.contains("mnemo serve started"))
    })?;

    let second = ws.mnemo(&["serve"], None);
    let refused = text(&second.stderr);
    assert!(!second.status.success());
    assert!(
        refused.contains(&format!(
            "already runs on this data directory (pid {})",
            daemon.id()
        )),
        "{refused}"
    );
    let status = text(&ws.mnemo(&["status"], None).stdout);
    assert!(
        status.contains(&format!("running (pid {})", daemon.id())),
        "{status}"
    );

    terminate(&daemon)?;
    let stopping = Instant::now();
    let exited = loop {
        if let Some(code) = daemon.try_wait()? {
            break code;
        }
        assert!(
            stopping.elapsed() < Duration::from_secs(1),
            "still running after SIGTERM"
        );
        std::thread::sleep(Duration::from_millis(10));
    };
    assert!(exited.success(), "{exited:?}");
    let logged = std::fs::read_to_string(&log)?;
    assert!(
        logged.contains("stopping on SIGTERM") && logged.contains("stopped"),
        "{logged}"
    );
    let status = text(&ws.mnemo(&["status"], None).stdout);
    assert!(status.contains("not running"), "{status}");
    Ok(())
}
