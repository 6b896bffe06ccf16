//! `mnemo serve` as a person runs it: it starts and logs, refuses a second daemon on the same
//! data directory, `mnemo status` sees it, and SIGTERM stops it within a second.

use crate::cli_support;

use std::time::{Duration, Instant};

use cli_support::{Workspace, text, wait_for};

type TestResult = Result<(), Box<dyn std::error::Error>>;

fn terminate(child: &std::process::Child) -> Result<(), std::io::Error> {
    let pid = libc::pid_t::try_from(child.id()).map_err(std::io::Error::other)?;
    // SAFETY: sends SIGTERM to a child this test started.
    match unsafe { libc::kill(pid, libc::SIGTERM) } {
        0 => Ok(()),
        _ => Err(std::io::Error::last_os_error()),
    }
}

/// SIGTERM, then a clean exit within a second.
fn stops_within_a_second(daemon: &mut std::process::Child) -> TestResult {
    terminate(daemon)?;
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
    Ok(())
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

    stops_within_a_second(&mut daemon)?;
    let logged = std::fs::read_to_string(&log)?;
    assert!(
        logged.contains("stopping on SIGTERM") && logged.contains("stopped"),
        "{logged}"
    );
    let status = text(&ws.mnemo(&["status"], None).stdout);
    assert!(status.contains("not running"), "{status}");
    Ok(())
}

#[test]
fn scripts_reach_served_sessions_with_run_attach() -> TestResult {
    let ws = Workspace::new();
    let model = ws.script(serde_json::json!({"turns": [
        {"when": "first question", "text": "served answer"},
        {"when": "second question", "text": "the same session again"},
        {"when": "third question", "text": "continued from the directory"}
    ]}));
    let mut daemon = ws.command(&["--model", &model, "serve"]).spawn()?;
    let socket = ws.path().join(".data/gateway.sock");
    wait_for("the gateway socket", || socket.exists())?;

    let first = ws.mnemo(&["run", "--attach", "first question"], None);
    assert!(first.status.success(), "{}", text(&first.stderr));
    assert!(
        text(&first.stdout).contains("served answer"),
        "{}",
        text(&first.stdout)
    );

    // The session lives in the daemon; a second client continues it by id.
    let sessions = text(&ws.mnemo(&["sessions"], None).stdout);
    let id = sessions
        .split_whitespace()
        .find(|w| w.len() >= 8 && w.chars().all(|c| c.is_ascii_hexdigit() || c == '-'))
        .ok_or(format!("no session in {sessions}"))?
        .to_string();
    let second = ws.mnemo(
        &["run", "--attach", "--resume", &id, "second question"],
        None,
    );
    assert!(second.status.success(), "{}", text(&second.stderr));
    assert!(text(&second.stdout).contains("the same session again"));
    let whole = text(&ws.mnemo(&["sessions", "export", &id], None).stdout);
    assert!(
        whole.contains("served answer") && whole.contains("second question"),
        "{whole}"
    );
    // --continue goes on with the directory's latest session, in the daemon.
    let third = ws.mnemo(&["run", "--attach", "--continue", "third question"], None);
    assert!(third.status.success(), "{}", text(&third.stderr));
    assert!(text(&third.stdout).contains("continued from the directory"));
    let whole = text(&ws.mnemo(&["sessions", "export", &id], None).stdout);
    assert!(whole.contains("third question"), "{whole}");

    terminate(&daemon)?;
    assert!(daemon.wait()?.success());
    assert!(!socket.exists() && !ws.path().join(".data/gateway-token").exists());
    let refused = ws.mnemo(&["run", "--attach", "nobody home"], None);
    assert!(!refused.status.success());
    assert!(
        text(&refused.stderr).contains("is `mnemo serve` running?"),
        "{}",
        text(&refused.stderr)
    );
    Ok(())
}

#[test]
fn serve_runs_a_heartbeat_every_second_and_stops_with_nothing_lost() -> TestResult {
    let ws = Workspace::new();
    let model = ws.script(serde_json::json!({"turns": [
        {"text": "disk at 91 percent"},
        {"text": "HEARTBEAT_OK"},
        {"text": "disk at 92 percent"},
        {"text": "HEARTBEAT_OK"}
    ]}));
    let beats = ws.path().join(".cfg/heartbeat");
    std::fs::create_dir_all(&beats)?;
    std::fs::write(
        beats.join("disk.md"),
        format!(
            "---\nname: disk\nevery: 1s\nworkspace: {}\n---\nCheck the disk; reply HEARTBEAT_OK when fine.\n",
            ws.path().display()
        ),
    )?;
    let mut daemon = ws.command(&["--model", &model, "serve"]).spawn()?;
    let log = ws.path().join(".data/serve.log");
    let runs = || -> Result<usize, Box<dyn std::error::Error>> {
        let db = mnemo::memory::Db::open(&ws.path().join(".data/mnemo.db"))?;
        Ok(db
            .list_sessions(None, 100)?
            .iter()
            .filter(|s| s.title.contains("disk") && s.message_count >= 2)
            .count())
    };
    wait_for("two heartbeat runs", || runs().is_ok_and(|n| n >= 2))?;

    stops_within_a_second(&mut daemon)?;
    let logged = std::fs::read_to_string(&log)?;
    assert!(
        logged.contains("disk at 91 percent"),
        "a report is delivered to the log: {logged}"
    );
    // Every stored run is whole: the prompt and its reply.
    let db = mnemo::memory::Db::open(&ws.path().join(".data/mnemo.db"))?;
    for session in db.list_sessions(None, 100)? {
        let messages = db.all_messages(&session.id)?;
        assert!(
            messages.len() >= 2,
            "{} has {} messages",
            session.id,
            messages.len()
        );
    }
    Ok(())
}

#[test]
fn a_schedule_made_in_another_process_wakes_the_daemon() -> TestResult {
    let ws = Workspace::new();
    let model = ws.script(serde_json::json!({"turns": [
        {"when": "remind me", "tool_calls": [{"name": "schedule_create",
            "arguments": {"when": "in 2s", "prompt": "time to stretch"}}]},
        {"when": "remind me", "text": "I will remind you."},
        {"when": "time to stretch", "text": "Stretch now."}
    ]}));
    let mut daemon = ws.command(&["--model", &model, "serve"]).spawn()?;
    let socket = ws.path().join(".data/gateway.sock");
    wait_for("the gateway socket", || socket.exists())?;
    let made = ws.mnemo(&["--model", &model, "run", "remind me"], None);
    assert!(made.status.success(), "{}", text(&made.stderr));
    assert!(
        !text(&made.stdout).contains("not running"),
        "{}",
        text(&made.stdout)
    );

    // The daemon sleeps until told; the schedule tool told it, so it runs in seconds.
    let log = ws.path().join(".data/serve.log");
    wait_for("the reminder's report", || {
        std::fs::read_to_string(&log).is_ok_and(|l| l.contains("Stretch now."))
    })?;
    terminate(&daemon)?;
    assert!(daemon.wait()?.success());
    Ok(())
}

#[test]
fn a_telegram_channel_without_its_token_is_reported_and_the_daemon_keeps_running_schedules()
-> TestResult {
    let ws = Workspace::new();
    std::fs::create_dir_all(ws.path().join(".cfg"))?;
    ws.write(
        ".cfg/config.toml",
        "[telegram]\nenabled = true\nbot_token_env = \"MNEMO_TEST_UNSET_BOT_TOKEN\"\n",
    );
    let model = ws.script(serde_json::json!({"turns": [
        {"when": "remind me", "tool_calls": [{"name": "schedule_create",
            "arguments": {"when": "in 1s", "prompt": "time to stretch"}}]},
        {"when": "remind me", "text": "I will remind you."},
        {"when": "time to stretch", "text": "Stretch now."}
    ]}));
    let mut daemon = ws
        .command(&["--model", &model, "serve"])
        .env_remove("MNEMO_TEST_UNSET_BOT_TOKEN")
        .spawn()?;
    let log = ws.path().join(".data/serve.log");
    wait_for("the channel's error in the log", || {
        std::fs::read_to_string(&log).is_ok_and(|l| l.contains("telegram: not started"))
    })?;
    wait_for("the gateway socket", || {
        ws.path().join(".data/gateway.sock").exists()
    })?;
    assert!(daemon.try_wait()?.is_none(), "the daemon exited");
    let status = text(&ws.mnemo(&["status"], None).stdout);
    assert!(
        status.contains("telegram: not started: the Telegram channel is enabled but $MNEMO_TEST_UNSET_BOT_TOKEN (its bot token) is not set"),
        "{status}"
    );
    let made = ws.mnemo(&["--model", &model, "run", "remind me"], None);
    assert!(made.status.success(), "{}", text(&made.stderr));
    wait_for("the reminder's report", || {
        std::fs::read_to_string(&log).is_ok_and(|l| l.contains("Stretch now."))
    })?;
    stops_within_a_second(&mut daemon)
}

#[test]
fn serve_says_on_start_what_it_serves_where_it_logs_and_how_to_stop() -> TestResult {
    use std::io::BufRead;
    let ws = Workspace::new();
    let beats = ws.path().join(".cfg/heartbeat");
    std::fs::create_dir_all(&beats)?;
    std::fs::write(
        beats.join("disk.md"),
        format!(
            "---\nevery: 1h\nworkspace: {}\n---\nCheck the disk.\n",
            ws.path().display()
        ),
    )?;
    let mut daemon = ws.command(&["serve"]).env_remove("INVOCATION_ID").spawn()?;
    let stderr = daemon.stderr.take().ok_or("no stderr")?;
    let (lines, said) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in std::io::BufReader::new(stderr)
            .lines()
            .map_while(Result::ok)
        {
            if lines.send(line).is_err() {
                break;
            }
        }
    });
    let mut start = Vec::new();
    while !start
        .last()
        .is_some_and(|l: &String| l.starts_with("  stop"))
    {
        start.push(said.recv_timeout(Duration::from_secs(20))?);
    }
    stops_within_a_second(&mut daemon)?;
    let start = start.join("\n");
    let data = ws.path().join(".data");
    for expected in [
        format!("(pid {})", daemon.id()),
        format!("  data      {}", data.display()),
        "  runs      1 heartbeat and 0 schedules in 1 workspace".into(),
        format!("  gateway   socket {}", data.join("gateway.sock").display()),
        "  telegram  off ([telegram] enabled = true turns it on)".into(),
        format!("  log       {}", data.join("serve.log").display()),
        format!("  stop      Ctrl+C, or kill {}", daemon.id()),
    ] {
        assert!(start.contains(&expected), "{expected}\n{start}");
    }
    Ok(())
}

#[test]
fn a_schedules_result_waits_for_the_session_that_made_it_and_is_shown_once() -> TestResult {
    let ws = Workspace::new();
    let model = ws.script(serde_json::json!({"turns": [
        {"when": "remind me", "tool_calls": [{"name": "schedule_create",
            "arguments": {"when": "in 1s", "prompt": "time to stretch"}}]},
        {"when": "remind me", "text": "I will remind you."},
        {"when": "time to stretch", "text": "Stretch now."},
        {"when": "and now", "text": "Here."}
    ]}));
    let mut daemon = ws.command(&["--model", &model, "serve"]).spawn()?;
    wait_for("the gateway socket", || {
        ws.path().join(".data/gateway.sock").exists()
    })?;
    let made = ws.mnemo(&["--model", &model, "run", "remind me"], None);
    assert!(made.status.success(), "{}", text(&made.stderr));
    // A one-shot schedule is gone once its run ended and was told.
    let db = ws.path().join(".data/mnemo.db");
    wait_for("the reminder's run", || {
        mnemo::memory::Db::open(&db)
            .and_then(|db| db.list_schedules())
            .is_ok_and(|left| left.is_empty())
    })?;
    stops_within_a_second(&mut daemon)?;

    let sessions = text(&ws.mnemo(&["sessions"], None).stdout);
    let id = sessions
        .split_whitespace()
        .find(|w| w.len() >= 8 && w.chars().all(|c| c.is_ascii_hexdigit() || c == '-'))
        .ok_or(format!("no session in {sessions}"))?
        .to_string();
    let resumed = ws.mnemo(
        &["--model", &model, "--resume", &id, "run", "and now?"],
        None,
    );
    assert!(resumed.status.success(), "{}", text(&resumed.stderr));
    let said = text(&resumed.stderr);
    assert!(said.contains("note: schedule #1: Stretch now."), "{said}");
    let again = ws.mnemo(
        &["--model", &model, "--resume", &id, "run", "and now?"],
        None,
    );
    let said = text(&again.stderr);
    assert!(!said.contains("Stretch now."), "shown once: {said}");
    Ok(())
}

#[test]
fn schedule_list_keeps_a_failed_runs_reason() -> TestResult {
    let ws = Workspace::new();
    let beats = ws.path().join(".cfg/heartbeat");
    std::fs::create_dir_all(&beats)?;
    let missing = ws.path().join("no-such-script.json");
    std::fs::write(
        beats.join("disk.md"),
        format!(
            "---\nname: disk\nevery: 1s\nworkspace: {}\nmodel: scripted:{}\n---\nCheck the disk.\n",
            ws.path().display(),
            missing.display()
        ),
    )?;
    let mut daemon = ws.command(&["serve"]).spawn()?;
    let listed = || text(&ws.mnemo(&["schedule", "list"], None).stdout);
    wait_for("a failed run in the list", || listed().contains("(failed"))?;
    stops_within_a_second(&mut daemon)?;
    let listed = listed();
    let line = listed
        .lines()
        .find(|l| l.contains("disk ·"))
        .ok_or(format!("no heartbeat line in {listed}"))?;
    assert!(line.contains(" · last "), "{line}");
    assert!(line.contains("(failed"), "{line}");
    assert!(line.contains("no-such-script.json"), "the reason: {line}");
    Ok(())
}
