//! A schedule's result reaches the person who asked, in a pseudo-terminal: a session held by
//! `mnemo serve` makes a reminder, `mnemo attach` shows that session, and when the reminder's
//! run ends its result appears there without a key pressed.

use crate::pty_support;

use std::time::{Duration, Instant};

use pty_support::{Terminal, TestResult, command as mnemo};

#[test]
fn an_attached_session_shows_the_result_of_its_reminder_when_it_runs() -> TestResult {
    let dir = tempfile::tempdir()?;
    let script = dir.path().join("script.json");
    std::fs::write(
        &script,
        r#"{"turns": [
            {"when": "remind me", "tool_calls": [{"name": "schedule_create",
                "arguments": {"when": "in 4s", "prompt": "time to stretch"}}]},
            {"when": "remind me", "text": "I will remind you."},
            {"when": "time to stretch", "text": "Stand up and stretch now."}
        ]}"#,
    )?;
    let model = format!("scripted:{}", script.display());
    let mut daemon = mnemo(
        dir.path(),
        &["--model", &model, "--approval", "auto", "serve"],
    )
    .spawn()?;
    let socket = dir.path().join("data/gateway.sock");
    let deadline = Instant::now() + Duration::from_secs(20);
    while !socket.exists() {
        assert!(Instant::now() < deadline, "no gateway socket");
        std::thread::sleep(Duration::from_millis(20));
    }
    let made = mnemo(dir.path(), &["run", "--attach", "remind me"]).output()?;
    let said = String::from_utf8_lossy(&made.stdout);
    assert!(said.contains("I will remind you."), "{said}");

    let mut term = Terminal::spawn_with(&["attach"], dir.path(), &[("TERM_PROGRAM", "WezTerm")])?;
    term.wait_for("I will remind you.")?;
    term.wait_for("schedule #1: Stand up and stretch now.")?;
    term.quit()?;

    // SAFETY: stops the daemon this test started.
    unsafe { libc::kill(daemon.id() as libc::pid_t, libc::SIGTERM) };
    assert!(daemon.wait()?.success());
    Ok(())
}

#[test]
fn a_tui_session_of_its_own_shows_the_result_of_its_reminder_that_mnemo_serve_ran() -> TestResult {
    let dir = tempfile::tempdir()?;
    let script = dir.path().join("script.json");
    std::fs::write(
        &script,
        r#"{"turns": [
            {"when": "remind me", "tool_calls": [{"name": "schedule_create",
                "arguments": {"when": "in 2s", "prompt": "time to stretch"}}]},
            {"when": "remind me", "text": "I will remind you."},
            {"when": "time to stretch", "text": "Stand up and stretch now."}
        ]}"#,
    )?;
    let model = format!("scripted:{}", script.display());
    let mut daemon = mnemo(dir.path(), &["--model", &model, "serve"]).spawn()?;
    let socket = dir.path().join("data/gateway.sock");
    let deadline = Instant::now() + Duration::from_secs(20);
    while !socket.exists() {
        assert!(Instant::now() < deadline, "no gateway socket");
        std::thread::sleep(Duration::from_millis(20));
    }

    let mut term = Terminal::spawn(&["--model", &model, "--approval", "auto"], dir.path())?;
    term.wait_for("● idle")?;
    term.send("remind me\r")?;
    term.wait_for("I will remind you.")?;
    term.wait_for("schedule #1: Stand up and stretch now.")?;
    term.quit()?;

    // SAFETY: stops the daemon this test started.
    unsafe { libc::kill(daemon.id() as libc::pid_t, libc::SIGTERM) };
    assert!(daemon.wait()?.success());
    Ok(())
}
