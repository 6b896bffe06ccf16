//! End-to-end `mnemo run` through the real binary on the scripted provider.

use crate::cli_support;
use crate::common;

use std::process::Command;

use cli_support::{Workspace, text};
use mnemo::protocol::Event;
use serde_json::json;

#[test]
fn run_reads_and_edits_a_file_and_reports_it() {
    let ws = Workspace::new();
    ws.write("greeting.txt", "hello world\n");
    let model = ws.script(json!({"turns": [
        {"tool_calls": [{"name": "read_file", "arguments": {"path": "greeting.txt"}}]},
        {"tool_calls": [{"name": "edit_file", "arguments":
            {"path": "greeting.txt", "old_string": "world", "new_string": "mnemo"}}]},
        {"text": "I changed the greeting to say hello mnemo."}
    ]}));
    let out = ws.mnemo(&["--model", &model, "run", "greet mnemo instead"], None);
    let stderr = text(&out.stderr);
    assert!(out.status.success(), "stderr: {stderr}");
    assert_eq!(ws.read("greeting.txt"), "hello mnemo\n");
    assert_eq!(
        text(&out.stdout).trim(),
        "I changed the greeting to say hello mnemo."
    );
    assert!(stderr.contains("• read_file greeting.txt"), "{stderr}");
    assert!(stderr.contains("✓ edit_file"), "{stderr}");
}

#[test]
fn json_mode_prints_every_event_as_a_json_line() {
    let ws = Workspace::new();
    let model = ws.script(json!({"turns": [{"chunks": ["a", "b"]}]}));
    let out = ws.mnemo(
        &["--model", &model, "run", "--json"],
        Some("prompt from stdin"),
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    let events: Vec<Event> = text(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect();
    assert!(matches!(events.first(), Some(Event::SessionStarted { .. })));
    assert!(events.iter().any(|e| matches!(e,
        Event::UserMessage { text, .. } if text == "prompt from stdin")));
    assert!(matches!(events.last(), Some(Event::TurnFinished { .. })));
}

#[test]
fn a_missing_key_fails_with_a_one_line_reason_naming_the_variable() {
    let ws = Workspace::new();
    let out = ws.mnemo(&["--model", "claude-sonnet", "run", "hi"], None);
    assert_eq!(out.status.code(), Some(2));
    let stderr = text(&out.stderr);
    assert!(stderr.contains("ANTHROPIC_API_KEY"), "{stderr}");
    assert_eq!(stderr.trim().lines().count(), 1, "{stderr}");
}

#[test]
fn an_unknown_model_is_rejected_and_the_known_ones_listed() {
    let ws = Workspace::new();
    let out = ws.mnemo(&["--model", "nope", "run", "hi"], None);
    assert_eq!(out.status.code(), Some(2));
    let stderr = text(&out.stderr);
    assert!(
        stderr.contains("unknown model `nope`") && stderr.contains("claude-sonnet"),
        "{stderr}"
    );
}

#[test]
fn loop_detection_and_provider_failure_give_distinct_exit_codes() {
    let ws = Workspace::new();
    let call = json!({"tool_calls": [{"name": "list_dir", "arguments": {"path": "."}}]});
    let model = ws.script(json!({"turns": [call, call, call]}));
    let out = ws.mnemo(&["--model", &model, "run", "loop"], None);
    assert_eq!(out.status.code(), Some(4), "{}", text(&out.stderr));
    assert!(text(&out.stderr).contains("loop detected"));

    let model = ws.script(json!({"turns": [{"error": {"kind": "server", "message": "boom"}}]}));
    let out = ws.mnemo(&["--model", &model, "run", "fail"], None);
    assert_eq!(out.status.code(), Some(1));
    assert!(text(&out.stderr).contains("boom"));
}

#[test]
fn a_broken_workspace_config_names_file_line_and_key() {
    let ws = Workspace::new();
    std::fs::create_dir_all(ws.path().join(".mnemo")).unwrap_or_else(|e| panic!("{e}"));
    ws.write(".mnemo/config.toml", "[agent]\nmax_steps = -3\n");
    let out = ws.mnemo(&["config"], None);
    assert_eq!(out.status.code(), Some(2));
    let stderr = text(&out.stderr);
    assert!(
        stderr.contains(".mnemo/config.toml")
            && stderr.contains("line 2")
            && stderr.contains("agent.max_steps"),
        "{stderr}"
    );
}

#[test]
fn config_lists_models_and_key_availability() {
    let ws = Workspace::new();
    let out = ws.mnemo(&["config"], None);
    assert!(out.status.success());
    let stdout = text(&out.stdout);
    assert!(
        stdout.contains("missing: set ANTHROPIC_API_KEY (default)"),
        "{stdout}"
    );
    assert!(stdout.contains("[models.ollama]"), "{stdout}");
}

#[test]
fn the_sandbox_policy_from_the_command_line_reaches_the_shell_tool() {
    let ws = Workspace::new();
    let model = ws.script(json!({"turns": [
        {"tool_calls": [{"name": "shell", "arguments": {"command": "touch made-here"}}]},
        {"text": "tried"}
    ]}));
    let out = ws.mnemo(
        &["--sandbox", "read-only", "--model", &model, "run", "touch"],
        None,
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(
        !ws.path().join("made-here").exists(),
        "read-only let the shell write"
    );
    assert!(
        text(&out.stderr).contains("✗ shell"),
        "{}",
        text(&out.stderr)
    );

    let out = ws.mnemo(&["--model", &model, "run", "touch"], None);
    assert!(out.status.success());
    assert!(
        ws.path().join("made-here").exists(),
        "workspace-write must allow it"
    );
}

#[test]
fn headless_run_denies_what_needs_a_question_and_says_so() {
    let ws = Workspace::new();
    let model = ws.script(json!({"turns": [
        {"tool_calls": [{"name": "write_file", "arguments": {"path": "asked.txt", "content": "x"}}]},
        {"text": "could not write"}
    ]}));
    let out = ws.mnemo(
        &["--approval", "ask", "--model", &model, "run", "write"],
        None,
    );
    let stderr = text(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(!ws.path().join("asked.txt").exists());
    assert!(
        stderr.contains("✗ write_file: not run: this needs the user's approval"),
        "{stderr}"
    );

    let out = ws.mnemo(
        &["--approval", "read-only", "--model", &model, "run", "w"],
        None,
    );
    assert!(text(&out.stderr).contains("this session is read-only"));
    assert!(!ws.path().join("asked.txt").exists());

    let out = ws.mnemo(&["--model", &model, "run", "write"], None);
    assert!(out.status.success());
    assert_eq!(
        ws.read("asked.txt"),
        "x",
        "auto (the default) writes unasked"
    );
}

#[test]
fn a_missing_sandbox_is_reported_at_start_not_at_the_first_command() {
    let ws = Workspace::new();
    let model = ws.script(json!({"turns": [{"text": "hi"}]}));
    let empty_path = ws.path().join("no-tools");
    std::fs::create_dir(&empty_path).unwrap_or_else(|e| panic!("{e}"));
    let run = |extra: &[&str]| {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_mnemo"));
        cmd.args(extra)
            .args(["--model", &model, "run", "hello"])
            .current_dir(ws.path())
            .env("PATH", &empty_path)
            .env("MNEMO_CONFIG_DIR", ws.path().join(".cfg"))
            .env("MNEMO_DATA_DIR", ws.path().join(".data"));
        cmd.output().unwrap_or_else(|e| panic!("{e}"))
    };
    let out = run(&[]);
    let stderr = text(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(
        stderr.contains(
            "note: commands are refused because the sandbox cannot run: bwrap is not \
             installed; install it with `sudo apt-get install bubblewrap`"
        ),
        "{stderr}"
    );
    let out = run(&["--approval", "full"]);
    assert!(!text(&out.stderr).contains("sandbox cannot run"));
}

#[test]
fn a_headless_run_waits_for_background_sub_agents_and_their_report() {
    let ws = Workspace::new();
    let model = ws.script(json!({"turns": [
        {"when": "PARENT", "tool_calls": [{"name": "spawn_agent",
            "arguments": {"prompt": "HELPER: slow work", "background": true}}]},
        {"when": "PARENT", "text": "Started a helper."},
        {"when": "HELPER", "chunks": ["helper ", "result"], "delay_ms": 300},
        {"when": "[sub-agent a1", "text": "Final: helper result."}
    ]}));
    let out = ws.mnemo(&["--model", &model, "run", "PARENT: get help"], None);
    let stderr = text(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    let stdout = text(&out.stdout);
    assert!(stdout.contains("Started a helper."), "{stdout}");
    assert!(
        stdout.trim_end().ends_with("Final: helper result."),
        "{stdout}"
    );
    assert!(
        stderr.contains("… waiting for 1 sub-agent in the background"),
        "{stderr}"
    );
}

#[test]
fn the_configured_compressor_model_is_resolved_at_launch() {
    let ws = Workspace::new();
    let model = ws.script(json!({"turns": [{"text": "hi"}]}));
    std::fs::create_dir_all(ws.path().join(".cfg")).unwrap_or_else(|e| panic!("{e}"));
    ws.write(
        ".cfg/config.toml",
        "[agent]\ncompressor_model = \"no-such-compressor\"\n",
    );
    let out = ws.mnemo(&["--model", &model, "run", "hi"], None);
    assert!(!out.status.success());
    let stderr = text(&out.stderr);
    assert!(
        stderr.contains("unknown model `no-such-compressor`"),
        "{stderr}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stream_cut_and_retried_ends_with_the_whole_reply_once() {
    let server = common::flaky_server()
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    let ws = Workspace::new();
    std::fs::create_dir_all(ws.path().join(".cfg")).unwrap_or_else(|e| panic!("{e}"));
    std::fs::write(
        ws.path().join(".cfg/config.toml"),
        "[retry]\nbase_delay_secs = 0.05\n",
    )
    .unwrap_or_else(|e| panic!("{e}"));
    let url = format!("{}/v1", server.base_url);
    let out = tokio::task::spawn_blocking(move || {
        let args = ["--provider", "openai", "--base-url", &url];
        let out = ws.mnemo(
            &[&args[..], &["--model", "local", "run", "hi"]].concat(),
            None,
        );
        drop(ws);
        out
    })
    .await
    .unwrap_or_else(|e| panic!("{e}"));
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    assert!(out.status.success(), "{stderr}");
    assert_eq!(server.requests().len(), 2, "the cut stream was asked again");
    let lines: Vec<&str> = stdout.lines().collect();
    assert_eq!(lines, ["Hello from ", common::FLAKY_ANSWER], "{stdout}");
    assert!(
        stderr.contains("(the answer above broke off and starts over)"),
        "the broken line is marked: {stderr}"
    );
    assert!(
        stderr.contains("↻ openai:local: "),
        "the retry is said: {stderr}"
    );
}

#[test]
fn a_database_of_a_newer_mnemo_is_refused_in_one_line_that_says_why_once() {
    let ws = Workspace::new();
    let data = ws.path().join(".data");
    std::fs::create_dir_all(&data).unwrap_or_else(|e| panic!("{e}"));
    rusqlite::Connection::open(data.join("mnemo.db"))
        .and_then(|db| db.pragma_update(None, "user_version", 999))
        .unwrap_or_else(|e| panic!("{e}"));
    let model = ws.script(json!({"turns": [{"text": "never sent"}]}));
    let out = ws.mnemo(&["--model", &model, "run", "hi"], None);
    let stderr = text(&out.stderr);
    assert!(!out.status.success(), "{stderr}");
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert_eq!(stderr.matches("schema version 999").count(), 1, "{stderr}");
    assert!(stderr.contains("upgrade mnemo"), "{stderr}");
}
