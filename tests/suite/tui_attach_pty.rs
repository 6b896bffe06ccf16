//! `mnemo attach` in a pseudo-terminal: a session held by `mnemo serve` opens with its
//! history, a prompt typed there gets its reply, and quitting detaches while the daemon keeps
//! the session.

use crate::pty_support;

use std::time::{Duration, Instant};

use pty_support::{Terminal, TestResult, command as mnemo};

fn output(dir: &std::path::Path, args: &[&str]) -> Result<String, Box<dyn std::error::Error>> {
    let out = mnemo(dir, args).output()?;
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    if !out.status.success() {
        return Err(format!("{args:?}: {}", String::from_utf8_lossy(&out.stderr)).into());
    }
    Ok(text)
}

#[test]
fn attach_shows_a_served_session_takes_a_prompt_and_detaches() -> TestResult {
    let dir = tempfile::tempdir()?;
    let script = dir.path().join("script.json");
    std::fs::write(
        &script,
        r#"{"turns": [
            {"when": "started by a script", "text": "the daemon kept this"},
            {"when": "typed in the terminal", "text": "answered through the gateway"}
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
    let first = output(dir.path(), &["run", "--attach", "started by a script"])?;
    assert!(first.contains("the daemon kept this"), "{first}");

    let mut term = Terminal::spawn(&["attach"], dir.path())?;
    term.wait_for("the daemon kept this")?;
    term.wait_for("● idle")?;
    let rows = term.all_rows();
    let status = rows.iter().rfind(|row| row.contains("● idle"));
    assert!(
        status.is_some_and(|row| row.contains(" · attached")),
        "the status bar marks the attached session: {rows:#?}"
    );
    term.send("typed in the terminal\r")?;
    term.wait_for("answered through the gateway")?;
    term.quit()?;

    let status = output(dir.path(), &["status"])?;
    assert!(
        status.contains("live sessions: 1"),
        "still held by the daemon: {status}"
    );

    // SAFETY: stops the daemon this test started.
    unsafe { libc::kill(daemon.id() as libc::pid_t, libc::SIGTERM) };
    assert!(daemon.wait()?.success());
    Ok(())
}

#[test]
fn model_switches_under_attach_and_leaving_says_how_to_come_back() -> TestResult {
    let dir = tempfile::tempdir()?;
    let script = dir.path().join("script.json");
    std::fs::write(
        &script,
        r#"{"turns": [{"when": "started by a script", "text": "the first model kept this"}]}"#,
    )?;
    let second = dir.path().join("second.json");
    std::fs::write(
        &second,
        r#"{"turns": [{"when": "which model now", "text": "answered by the second model"}]}"#,
    )?;
    std::fs::create_dir_all(dir.path().join("config"))?;
    std::fs::write(
        dir.path().join("config/config.toml"),
        format!(
            "[models.second]\nprovider = \"scripted\"\nmodel = \"second\"\nscript = {:?}\n",
            second.display().to_string()
        ),
    )?;
    let model = format!("scripted:{}", script.display());
    let mut daemon = mnemo(dir.path(), &["--model", &model, "serve"]).spawn()?;
    let socket = dir.path().join("data/gateway.sock");
    let deadline = Instant::now() + Duration::from_secs(20);
    while !socket.exists() {
        assert!(Instant::now() < deadline, "no gateway socket");
        std::thread::sleep(Duration::from_millis(20));
    }
    output(dir.path(), &["run", "--attach", "started by a script"])?;

    let mut term = Terminal::spawn(&["attach"], dir.path())?;
    term.wait_for("the first model kept this")?;
    term.wait_for("● idle")?;
    term.send("/model second\r")?;
    term.wait_for("Now using second")?;
    term.send("which model now\r")?;
    term.wait_for("answered by the second model")?;
    term.wait_for("● idle")?;
    let rows = term.all_rows();
    let status = rows.iter().rfind(|row| row.contains("● idle"));
    assert!(
        status.is_some_and(|row| row.contains("second")),
        "{rows:#?}"
    );
    term.quit()?;
    term.wait_for("Detached; session ")?;
    let contents = term.contents();
    let short = contents
        .split("Detached; session ")
        .nth(1)
        .and_then(|rest| rest.split_whitespace().next())
        .ok_or("no session id on leaving")?
        .to_string();
    assert!(
        contents.contains(&format!(
            "Detached; session {short} goes on in mnemo serve · mnemo attach {short}"
        )),
        "{contents}"
    );
    assert!(!contents.contains("--resume"), "{contents}");

    // Resuming it while the daemon holds it says so plainly, with the ways that work, and
    // asks nothing about setting up a model.
    let mut term = Terminal::spawn(&["--model", &model, "--resume", &short], dir.path())?;
    term.wait_for(&format!("Session {short} is busy in mnemo serve"))?;
    term.wait_for("/clear starts a new session")?;
    let contents = term.contents();
    let contents = contents.split_whitespace().collect::<Vec<_>>().join(" ");
    for way in [
        format!("`mnemo attach {short}`"),
        format!("`mnemo sessions export {short}`"),
        format!("`mnemo sessions fork {short}`"),
    ] {
        assert!(contents.contains(&way), "{way}: {contents}");
    }
    for set_up in ["No model could be prepared", "Set up a model"] {
        assert!(!contents.contains(set_up), "{contents}");
    }
    term.quit()?;

    // SAFETY: stops the daemon this test started.
    unsafe { libc::kill(daemon.id() as libc::pid_t, libc::SIGTERM) };
    assert!(daemon.wait()?.success());
    Ok(())
}
