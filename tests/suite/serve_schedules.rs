//! Schedules run by a real `mnemo serve`: a run gets no more than the session that made the
//! schedule had, however freely the daemon itself was started, and two daemons sharing one
//! database run a one-shot schedule once, and a schedule made by one of the daemon's own
//! sessions reaches its scheduler in process, not through the daemon's socket.

use crate::cli_support;

use std::path::Path;
use std::process::Child;
use std::time::Duration;

use cli_support::{Workspace, text, wait_for};
use mnemo::memory::Db;
use mnemo::memory::schedules::{MakerRights, NewSchedule, StoredWhen};
use mnemo::protocol::ApprovalMode;
use mnemo::sandbox::SandboxPolicy;
use serde_json::json;

type TestResult = Result<(), Box<dyn std::error::Error>>;

fn stop(mut daemon: Child) -> TestResult {
    let pid = libc::pid_t::try_from(daemon.id())?;
    // SAFETY: sends SIGTERM to a child this test started.
    unsafe { libc::kill(pid, libc::SIGTERM) };
    assert!(daemon.wait()?.success());
    Ok(())
}

fn shell(command: &str) -> serde_json::Value {
    json!({"name": "shell", "arguments": {"command": command}})
}

/// Stores a one-shot schedule due in a second, as a session with `rights` would have made it.
fn schedule_soon(db: &Path, workspace: &Path, prompt: &str, rights: MakerRights) -> TestResult {
    schedule_in(db, workspace, prompt, rights, 1000)
}

fn schedule_in(
    db: &Path,
    workspace: &Path,
    prompt: &str,
    rights: MakerRights,
    millis: i64,
) -> TestResult {
    let mut db = Db::open(db)?;
    let soon = chrono::Utc::now().timestamp_millis() + millis;
    db.create_schedule(&NewSchedule {
        session_id: None,
        workspace: workspace.canonicalize()?.display().to_string(),
        when: StoredWhen::Once(soon),
        prompt: prompt.into(),
        deliver: Vec::new(),
        rights,
    })?;
    Ok(())
}

fn log_has(path: &Path, said: &str) -> bool {
    std::fs::read_to_string(path).is_ok_and(|log| log.contains(said))
}

#[test]
fn a_daemon_with_full_approval_runs_schedules_with_no_more_than_their_maker_had() -> TestResult {
    let ws = Workspace::new();
    let outside = ws
        .path()
        .with_file_name(format!("mnemo-escaped-{}", std::process::id()));
    let escape = format!("touch {} ; touch inside.txt", outside.display());
    let model = ws.script(json!({"turns": [
        {"when": "remind me", "tool_calls": [{"name": "schedule_create",
            "arguments": {"when": "in 1s", "prompt": "escape now"}}]},
        {"when": "remind me", "text": "I will."},
        {"when": "escape now", "tool_calls": [shell(&escape)]},
        {"when": "escape now", "text": "Escape tried."},
        {"when": "write when asked", "tool_calls": [shell("touch asked.txt")]},
        {"when": "write when asked", "text": "Write tried."}
    ]}));
    // Made under `ask` (a person approved it then); nobody answers when the daemon runs it.
    let asked = MakerRights {
        approval: ApprovalMode::Ask,
        sandbox: SandboxPolicy::WorkspaceWrite,
        network: false,
        trusted: true,
    };
    std::fs::create_dir_all(ws.path().join(".data"))?;
    schedule_soon(
        &ws.path().join(".data/mnemo.db"),
        ws.path(),
        "write when asked",
        asked,
    )?;
    let daemon = ws
        .command(&["--model", &model, "--approval", "full", "serve"])
        .spawn()?;
    wait_for("the gateway socket", || {
        ws.path().join(".data/gateway.sock").exists()
    })?;
    // Made by an ordinary session: auto approval, workspace-write sandbox, no network.
    let made = ws.mnemo(&["--model", &model, "run", "remind me"], None);
    assert!(made.status.success(), "{}", text(&made.stderr));
    let log = ws.path().join(".data/serve.log");
    wait_for("both runs' reports", || {
        log_has(&log, "Escape tried.") && log_has(&log, "Write tried.")
    })?;
    stop(daemon)?;
    assert!(
        ws.path().join("inside.txt").exists(),
        "the sandbox lets the run write its workspace"
    );
    assert!(
        !outside.exists(),
        "a schedule of a sandboxed session wrote outside its workspace"
    );
    assert!(
        !ws.path().join("asked.txt").exists(),
        "a schedule made under ask wrote without approval"
    );
    Ok(())
}

#[test]
fn two_daemons_on_one_database_run_a_one_shot_schedule_once() -> TestResult {
    let ws = Workspace::new();
    let model = ws.script(json!({"turns": [
        {"when": "count me", "text": "Counted."}
    ]}));
    let db = ws.path().join("shared.db");
    let rights = MakerRights {
        approval: ApprovalMode::Auto,
        sandbox: SandboxPolicy::WorkspaceWrite,
        network: false,
        trusted: true,
    };
    schedule_soon(&db, ws.path(), "count me", rights)?;
    let db_arg = db.display().to_string();
    let daemons = ["a", "b"].map(|name| {
        ws.command(&["--model", &model, "--db", &db_arg, "serve"])
            .env("MNEMO_DATA_DIR", ws.path().join(format!(".data-{name}")))
            .spawn()
    });
    let [a, b] = daemons;
    let (a, b) = (a?, b?);
    let logs = ["a", "b"].map(|name| ws.path().join(format!(".data-{name}/serve.log")));
    let reports = || {
        logs.iter()
            .map(|log| std::fs::read_to_string(log).unwrap_or_default())
            .map(|log| log.matches("Counted.").count())
            .sum::<usize>()
    };
    wait_for("the schedule's report", || reports() >= 1)?;
    // Time for a second run to show up, were there one.
    std::thread::sleep(Duration::from_secs(2));
    assert_eq!(reports(), 1, "the one-shot schedule ran more than once");
    stop(a)?;
    stop(b)?;
    assert!(Db::open(&db)?.list_schedules()?.is_empty());
    Ok(())
}

#[test]
fn a_schedule_made_in_a_daemon_run_reaches_its_scheduler_without_the_daemon_s_socket() -> TestResult
{
    let ws = Workspace::new();
    let model = ws.script(json!({"turns": [
        {"when": "make a follow-up", "tool_calls": [{"name": "schedule_create",
            "arguments": {"when": "in 1s", "prompt": "follow up now"}}]},
        {"when": "make a follow-up", "tool_calls": [shell("sleep 5")]},
        {"when": "make a follow-up", "text": "Made it."},
        {"when": "follow up now", "text": "Followed up."}
    ]}));
    let full = MakerRights {
        approval: ApprovalMode::Full,
        sandbox: SandboxPolicy::WorkspaceWrite,
        network: false,
        trusted: true,
    };
    std::fs::create_dir_all(ws.path().join(".data"))?;
    let db = ws.path().join(".data/mnemo.db");
    schedule_in(&db, ws.path(), "make a follow-up", full, 3000)?;
    let daemon = ws.command(&["--model", &model, "serve"]).spawn()?;
    let socket = ws.path().join(".data/gateway.sock");
    wait_for("the gateway socket", || socket.exists())?;
    // With the socket gone nobody can dial the daemon: only an in-process notice tells its
    // scheduler about the follow-up while the first run still sleeps.
    std::fs::remove_file(&socket)?;
    let log = ws.path().join(".data/serve.log");
    wait_for("both runs' reports", || {
        log_has(&log, "Made it.") && log_has(&log, "Followed up.")
    })?;
    stop(daemon)?;
    let log = std::fs::read_to_string(&log)?;
    let (followed, made) = (log.find("Followed up."), log.find("Made it."));
    assert!(
        followed < made,
        "the follow-up waited for the run that made it to end:\n{log}"
    );
    Ok(())
}
