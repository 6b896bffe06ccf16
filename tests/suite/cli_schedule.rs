//! Schedules end to end through the real binary: a session makes, lists and deletes them
//! with the schedule tools (writes that go through approval), `mnemo schedule list` shows
//! them with the heartbeats, and `mnemo schedule rm` removes one.

use crate::cli_support;

use cli_support::{Workspace, text};
use mnemo::host::daemon::ServeLock;
use mnemo::protocol::{Event, ToolStatus};
use mnemo::tools::describe::result_line;
use serde_json::json;

/// The (status, output) of every tool call of a `mnemo run --json`.
fn tool_results(stdout: &[u8]) -> Vec<(ToolStatus, String)> {
    text(stdout)
        .lines()
        .filter_map(|line| serde_json::from_str::<Event>(line).ok())
        .filter_map(|event| match event {
            Event::ToolCallFinished { status, output, .. } => Some((status, output)),
            _ => None,
        })
        .collect()
}

fn call(name: &str, arguments: serde_json::Value) -> serde_json::Value {
    json!({"tool_calls": [{"name": name, "arguments": arguments}]})
}

#[test]
fn a_session_creates_lists_and_deletes_schedules_and_the_cli_shows_and_removes_them() {
    let ws = Workspace::new();
    let model = ws.script(json!({"turns": [
        call("schedule_create", json!({"when": "in 2h", "prompt": "check the deploy"})),
        call("schedule_create", json!({"when": "0 9 * * 1-5", "prompt": "standup notes"})),
        call("schedule_create", json!({"when": "2001-01-01T09:00", "prompt": "too late"})),
        call("schedule_list", json!({})),
        call("schedule_delete", json!({"id": 1})),
        {"text": "Done."}
    ]}));
    let out = ws.mnemo(&["--model", &model, "run", "--json", "set reminders"], None);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let results = tool_results(&out.stdout);
    assert_eq!(results.len(), 5, "{results:?}");
    let (status, created) = &results[0];
    assert_eq!(*status, ToolStatus::Ok, "{created}");
    assert!(
        created.starts_with("created schedule #1: once at "),
        "{created}"
    );
    assert!(created.contains("mnemo serve is not running"), "{created}");
    // The person reads it in words, not the instructions meant for the model.
    let said = result_line("schedule_create", created).unwrap_or_default();
    assert!(said.starts_with("reminder #1 at "), "{said}");
    assert!(
        said.ends_with(" · runs once mnemo serve is started"),
        "{said}"
    );
    assert!(!said.contains("tell the user"), "{said}");
    assert!(
        results[1]
            .1
            .starts_with("created schedule #2: cron `0 9 * * 1-5`, next run ")
    );
    assert_eq!(results[2].0, ToolStatus::Error);
    assert!(results[2].1.contains("is in the past"), "{}", results[2].1);
    let listed = &results[3].1;
    assert!(
        listed.contains("#1  once at") && listed.contains("check the deploy"),
        "{listed}"
    );
    assert!(listed.contains("#2  cron `0 9 * * 1-5`"), "{listed}");
    assert_eq!(results[4].1, "deleted schedule #1");

    std::fs::create_dir_all(ws.path().join(".cfg/heartbeat")).unwrap_or_else(|e| panic!("{e}"));
    ws.write(
        ".cfg/heartbeat/broken.md",
        "---\nevery: 1h\ncolour: red\n---\nx\n",
    );
    let out = ws.mnemo(&["schedule", "list"], None);
    let listing = text(&out.stdout);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(
        listing.contains("Schedules (1):\n  #2  cron `0 9 * * 1-5` · next "),
        "{listing}"
    );
    assert!(listing.contains("standup notes") && !listing.contains("check the deploy"));
    assert!(
        listing.contains("broken.md: frontmatter: unknown field `colour`"),
        "{listing}"
    );
    assert!(listing.contains("mnemo serve is not running"), "{listing}");

    let out = ws.mnemo(&["schedule", "rm", "2"], None);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(text(&out.stdout), "Deleted schedule #2.\n");
    let out = ws.mnemo(&["schedule", "rm", "2"], None);
    assert_eq!(out.status.code(), Some(1));
    assert!(text(&out.stderr).contains("there is no schedule #2"));
    let out = ws.mnemo(&["schedule", "list"], None);
    assert!(
        text(&out.stdout).starts_with("No schedules"),
        "{}",
        text(&out.stdout)
    );
}

#[test]
fn making_a_schedule_is_a_write_that_needs_approval() {
    let ws = Workspace::new();
    let create = || {
        json!({"turns": [
            call("schedule_create", json!({"when": "in 1h", "prompt": "ping"})),
            {"text": "ok"}
        ]})
    };
    for (mode, expected) in [
        ("read-only", "changing schedules is not allowed"),
        ("ask", "nobody can answer here"),
    ] {
        let model = ws.script(create());
        let out = ws.mnemo(
            &[
                "--model",
                &model,
                "--approval",
                mode,
                "run",
                "--json",
                "remind me",
            ],
            None,
        );
        let results = tool_results(&out.stdout);
        assert_eq!(results.len(), 1, "{mode}: {}", text(&out.stderr));
        assert_eq!(results[0].0, ToolStatus::Error, "{mode}");
        assert!(results[0].1.contains(expected), "{mode}: {}", results[0].1);
    }
    let out = ws.mnemo(&["schedule", "list"], None);
    assert!(text(&out.stdout).starts_with("No schedules"));
}

#[test]
fn with_mnemo_serve_running_the_model_is_not_warned() {
    let ws = Workspace::new();
    let _serving = ServeLock::acquire(&ws.path().join(".data")).unwrap_or_else(|e| panic!("{e}"));
    let model = ws.script(json!({"turns": [
        call("schedule_create", json!({"when": "in 1h", "prompt": "ping", "repeat": true})),
        {"text": "ok"}
    ]}));
    let out = ws.mnemo(
        &["--model", &model, "run", "--json", "remind me hourly"],
        None,
    );
    let results = tool_results(&out.stdout);
    assert_eq!(results.len(), 1, "{}", text(&out.stderr));
    assert!(
        results[0].1.starts_with("created schedule #1: every 1h"),
        "{}",
        results[0].1
    );
    assert!(!results[0].1.contains("not running"), "{}", results[0].1);
    let said = result_line("schedule_create", &results[0].1).unwrap_or_default();
    assert!(
        said.starts_with("schedule #1 every 1h · next at "),
        "{said}"
    );
    assert!(said.ends_with(" · runs while mnemo serve runs"), "{said}");
    let out = ws.mnemo(&["schedule", "list"], None);
    assert!(!text(&out.stdout).contains("not running"));
}

#[test]
fn a_read_only_sandbox_refuses_remember_and_schedule_create_whatever_the_mode_allows() {
    let ws = Workspace::new();
    let model = ws.script(json!({"turns": [
        call("remember", json!({"text": "the deploy key is in vault"})),
        call("schedule_create", json!({"when": "in 1h", "prompt": "touch pwned.txt"})),
        {"text": "ok"}
    ]}));
    let out = ws.mnemo(
        &[
            "--model",
            &model,
            "--sandbox",
            "read-only",
            "run",
            "--json",
            "remember and schedule",
        ],
        None,
    );
    let results = tool_results(&out.stdout);
    assert_eq!(results.len(), 2, "{}", text(&out.stderr));
    for (what, (status, said)) in ["remembered experiences", "schedules"].iter().zip(&results) {
        assert_eq!(*status, ToolStatus::Error, "{said}");
        assert!(
            said.contains(&format!("changing {what} is not allowed"))
                && said.contains("sandbox is read-only"),
            "{said}"
        );
    }
    let out = ws.mnemo(&["schedule", "list"], None);
    assert!(text(&out.stdout).starts_with("No schedules"));
    let out = ws.mnemo(&["memory", "search", "deploy", "key", "vault"], None);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(
        !text(&out.stdout).contains("key is in vault"),
        "{}",
        text(&out.stdout)
    );
}

#[test]
fn a_session_sees_and_deletes_only_its_own_workspace_schedules() {
    let ws = Workspace::new();
    let model = ws.script(json!({"turns": [
        call("schedule_create", json!({"when": "in 1h", "prompt": "check the deploy"})),
        {"text": "ok"}
    ]}));
    let out = ws.mnemo(&["--model", &model, "run", "remind me"], None);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let other = ws.path().join("other");
    std::fs::create_dir_all(&other).unwrap_or_else(|e| panic!("{e}"));
    let model = ws.script(json!({"turns": [
        call("schedule_list", json!({})),
        call("schedule_delete", json!({"id": 1})),
        {"text": "ok"}
    ]}));
    let out = ws.mnemo(
        &[
            "-C",
            &other.display().to_string(),
            "--model",
            &model,
            "run",
            "--json",
            "clean up",
        ],
        None,
    );
    let results = tool_results(&out.stdout);
    assert_eq!(results.len(), 2, "{}", text(&out.stderr));
    assert!(
        !results[0].1.contains("check the deploy"),
        "{}",
        results[0].1
    );
    assert_eq!(results[1].0, ToolStatus::Error);
    assert!(
        results[1]
            .1
            .contains("there is no schedule #1 in this workspace"),
        "{}",
        results[1].1
    );
    let out = ws.mnemo(&["schedule", "list"], None);
    assert!(
        text(&out.stdout).contains("check the deploy"),
        "{}",
        text(&out.stdout)
    );
}

#[test]
fn the_schedule_limits_are_enforced_with_errors_naming_them() {
    let ws = Workspace::new();
    std::fs::create_dir_all(ws.path().join(".cfg")).unwrap_or_else(|e| panic!("{e}"));
    ws.write(
        ".cfg/config.toml",
        "[schedules]\nmax_per_workspace = 1\nmin_interval_secs = 3600\n",
    );
    let model = ws.script(json!({"turns": [
        call("schedule_create", json!({"when": "in 1m", "prompt": "ping", "repeat": true})),
        call("schedule_create", json!({"when": "* * * * *", "prompt": "ping"})),
        call("schedule_create", json!({"when": "in 2h", "prompt": "ping", "repeat": true})),
        call("schedule_create", json!({"when": "in 3h", "prompt": "once more"})),
        {"text": "ok"}
    ]}));
    let out = ws.mnemo(&["--model", &model, "run", "--json", "ping often"], None);
    let results = tool_results(&out.stdout);
    assert_eq!(results.len(), 4, "{}", text(&out.stderr));
    for (status, said) in &results[..2] {
        assert_eq!(*status, ToolStatus::Error, "{said}");
        assert!(
            said.contains("at most every 3600 s ([schedules] min_interval_secs)"),
            "{said}"
        );
    }
    assert_eq!(results[2].0, ToolStatus::Ok, "{}", results[2].1);
    assert_eq!(results[3].0, ToolStatus::Error);
    assert!(
        results[3]
            .1
            .contains("this workspace has 1 schedules already, the most it may have ([schedules] max_per_workspace)"),
        "{}",
        results[3].1
    );
}

#[test]
fn heartbeat_runs_stay_out_of_mnemo_sessions_unless_asked() -> Result<(), Box<dyn std::error::Error>>
{
    let ws = Workspace::new();
    std::fs::create_dir_all(ws.path().join(".data"))?;
    let db_path = ws.path().join(".data/mnemo.db");
    let said = mnemo::llm::Message::user_text("check the disk");
    for (id, title) in [("aaaa1111", "my own work"), ("bbbb2222", "heartbeat disk")] {
        let mut db = cli_support::with_session(&db_path, ws.path(), id)?;
        db.append_messages(id, &[(1, &said, 3)])?;
        db.rename_session(id, title)?;
    }
    let mut db = mnemo::memory::Db::open(&db_path)?;
    db.job_finished("heartbeat:/x/disk.md", "reported", Some("bbbb2222"))?;
    drop(db);

    let listed = text(&ws.mnemo(&["sessions"], None).stdout);
    assert!(listed.contains("my own work"), "{listed}");
    assert!(!listed.contains("heartbeat disk"), "{listed}");
    let listed = text(&ws.mnemo(&["sessions", "--runs"], None).stdout);
    assert!(
        listed.contains("my own work") && listed.contains("heartbeat disk"),
        "{listed}"
    );
    Ok(())
}
