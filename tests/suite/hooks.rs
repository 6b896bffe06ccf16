//! Hooks through the real binary on the scripted provider: the person's commands on the
//! session's events, in Claude Code's format, trusted only where the person trusted them.

use crate::cli_support;

use cli_support::{Workspace, text};
use mnemo::protocol::{Event, ToolStatus};
use serde_json::json;

fn events(stdout: &[u8]) -> Vec<Event> {
    text(stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect()
}

/// Each tool call's name, status and output (what the model was told).
fn results(events: &[Event]) -> Vec<(String, ToolStatus, String)> {
    events
        .iter()
        .filter_map(|e| match e {
            Event::ToolCallFinished {
                name,
                status,
                output,
                ..
            } => Some((name.clone(), *status, output.clone())),
            _ => None,
        })
        .collect()
}

fn hook_messages(events: &[Event]) -> Vec<String> {
    events
        .iter()
        .filter_map(|e| match e {
            Event::Hook { event, message } => Some(format!("{event}: {message}")),
            _ => None,
        })
        .collect()
}

fn user_config(ws: &Workspace, toml: &str) {
    std::fs::create_dir_all(ws.path().join(".cfg")).unwrap_or_else(|e| panic!("{e}"));
    ws.write(".cfg/config.toml", toml);
}

#[test]
fn a_pre_tool_hook_denies_rm_and_the_model_hears_why() {
    let ws = Workspace::new();
    ws.write("keep.txt", "precious\n");
    user_config(
        &ws,
        r#"
[[hooks.PreToolUse]]
matcher = "Bash"
hooks = [{ type = "command", command = "if grep -q '\"command\":\"rm '; then echo 'rm is not allowed here; move files to trash/ instead' >&2; exit 2; fi" }]
"#,
    );
    let model = ws.script(json!({"turns": [
        {"tool_calls": [{"name": "shell", "arguments": {"command": "rm keep.txt"}}]},
        {"tool_calls": [{"name": "shell", "arguments": {"command": "echo fine"}}]},
        {"text": "I left it."}
    ]}));
    let out = ws.mnemo(&["--model", &model, "run", "--json", "tidy up"], None);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(ws.read("keep.txt"), "precious\n");
    let events = events(&out.stdout);
    let results = results(&events);
    assert_eq!(results[0].1, ToolStatus::Error, "{results:?}");
    assert!(
        results[0]
            .2
            .contains("rm is not allowed here; move files to trash/ instead"),
        "{results:?}"
    );
    // The same hook lets other commands through.
    assert_eq!(results[1].1, ToolStatus::Ok, "{results:?}");
    assert!(results[1].2.contains("fine"), "{results:?}");
    let told = hook_messages(&events);
    assert!(
        told.iter()
            .any(|m| m.starts_with("PreToolUse: denied shell")),
        "{told:?}"
    );
}

const GUARD_PY: &str = r#"import json, sys
data = json.load(sys.stdin)
path = data.get("tool_input", {}).get("file_path", "")
if data.get("hook_event_name") == "PreToolUse" and path.endswith(".env"):
    print(json.dumps({"hookSpecificOutput": {
        "hookEventName": "PreToolUse",
        "permissionDecision": "deny",
        "permissionDecisionReason": "Do not write " + data["tool_name"] + " to secrets files"}}))
sys.exit(0)
"#;

fn claude_settings(ws: &Workspace, settings: serde_json::Value) {
    std::fs::create_dir_all(ws.path().join(".claude/hooks")).unwrap_or_else(|e| panic!("{e}"));
    ws.write(".claude/settings.json", &settings.to_string());
}

#[test]
fn a_claude_code_hook_script_runs_unchanged_in_a_trusted_workspace() {
    let ws = Workspace::new();
    claude_settings(
        &ws,
        json!({"hooks": {"PreToolUse": [{"matcher": "Edit|Write", "hooks": [
            {"type": "command", "command": "python3 \"$CLAUDE_PROJECT_DIR\"/.claude/hooks/guard.py"}
        ]}]}}),
    );
    ws.write(".claude/hooks/guard.py", GUARD_PY);
    assert!(ws.mnemo(&["trust"], None).status.success());
    let model = ws.script(json!({"turns": [
        {"tool_calls": [{"name": "write_file", "arguments": {"path": ".env", "content": "KEY=1"}}]},
        {"tool_calls": [{"name": "write_file", "arguments": {"path": "notes.txt", "content": "ok"}}]},
        {"text": "done"}
    ]}));
    let out = ws.mnemo(&["--model", &model, "run", "--json", "write"], None);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let results = results(&events(&out.stdout));
    assert!(!ws.path().join(".env").exists());
    assert!(
        results[0].2.contains("Do not write Write to secrets files"),
        "{results:?}"
    );
    assert_eq!(ws.read("notes.txt"), "ok");
}

#[test]
fn a_hook_that_fails_or_times_out_is_reported_and_the_turn_goes_on() {
    let ws = Workspace::new();
    user_config(
        &ws,
        r#"
[[hooks.PreToolUse]]
hooks = [
  { type = "command", command = "sleep 30", timeout = 1 },
  { type = "command", command = "echo broken >&2; exit 1" },
]
"#,
    );
    let model = ws.script(json!({"turns": [
        {"tool_calls": [{"name": "write_file", "arguments": {"path": "out.txt", "content": "x"}}]},
        {"text": "wrote it"}
    ]}));
    let started = std::time::Instant::now();
    let out = ws.mnemo(&["--model", &model, "run", "--json", "write"], None);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(started.elapsed() < std::time::Duration::from_secs(20));
    assert_eq!(ws.read("out.txt"), "x");
    let told = hook_messages(&events(&out.stdout));
    assert!(
        told.iter()
            .any(|m| m.contains("`sleep 30` timed out after 1 s")),
        "{told:?}"
    );
    assert!(
        told.iter().any(|m| m.contains("failed (exit 1): broken")),
        "{told:?}"
    );
}

#[test]
fn an_untrusted_workspaces_hooks_do_not_run_until_it_is_trusted() {
    let ws = Workspace::new();
    let hook = json!([{"hooks": [{"type": "command", "command": "touch claude-hook-ran"}]}]);
    claude_settings(&ws, json!({"hooks": {"SessionStart": hook}}));
    std::fs::create_dir_all(ws.path().join(".mnemo")).unwrap_or_else(|e| panic!("{e}"));
    ws.write(
        ".mnemo/config.toml",
        "[[hooks.SessionStart]]\nhooks = [{ type = \"command\", command = \"touch mnemo-hook-ran\" }]\n",
    );
    let model = ws.script(json!({"turns": [{"text": "hi"}]}));
    let out = ws.mnemo(&["--model", &model, "run", "hello"], None);
    let stderr = text(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(!ws.path().join("claude-hook-ran").exists());
    assert!(!ws.path().join("mnemo-hook-ran").exists());
    assert!(
        stderr.contains("do not run: the workspace is not trusted"),
        "{stderr}"
    );
    assert!(stderr.contains("hooks = "), "{stderr}");

    assert!(ws.mnemo(&["trust"], None).status.success());
    let out = ws.mnemo(&["--model", &model, "run", "hello"], None);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(ws.path().join("claude-hook-ran").exists());
    assert!(ws.path().join("mnemo-hook-ran").exists());

    // A changed settings file needs trusting again.
    std::fs::remove_file(ws.path().join("claude-hook-ran")).unwrap_or_else(|e| panic!("{e}"));
    let changed =
        json!([{"hooks": [{"type": "command", "command": "touch claude-hook-ran; true"}]}]);
    claude_settings(&ws, json!({"hooks": {"SessionStart": changed}}));
    let out = ws.mnemo(&["--model", &model, "run", "hello"], None);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(!ws.path().join("claude-hook-ran").exists());
}

#[test]
fn prompt_hooks_add_context_or_block_and_a_stop_hook_sends_the_turn_on_once() {
    let ws = Workspace::new();
    user_config(
        &ws,
        r#"
[[hooks.UserPromptSubmit]]
hooks = [{ type = "command", command = "if grep -q password; then echo 'prompts with passwords are not sent' >&2; exit 2; fi; echo 'branch: main'" }]

[[hooks.Stop]]
hooks = [{ type = "command", command = "if [ ! -e stopped-once ]; then touch stopped-once; echo '{\"decision\": \"block\", \"reason\": \"run the tests too\"}'; fi" }]
"#,
    );
    let model = ws.script(json!({"turns": [{"text": "done"}, {"text": "tests pass"}]}));
    let out = ws.mnemo(&["--model", &model, "run", "--json", "fix it"], None);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let first = events(&out.stdout);
    let said: Vec<String> = first
        .iter()
        .filter_map(|e| match e {
            Event::UserMessage { text, .. } => Some(format!("user: {text}")),
            Event::AssistantMessage { text } => Some(format!("model: {text}")),
            _ => None,
        })
        .collect();
    assert_eq!(
        said,
        [
            "user: fix it",
            "user: [hook context] branch: main",
            "model: done",
            "user: [Stop hook] run the tests too",
            "model: tests pass",
        ],
        "{said:?}"
    );

    let out = ws.mnemo(
        &["--model", &model, "run", "--json", "my password is x"],
        None,
    );
    let events = events(&out.stdout);
    assert!(
        !events.iter().any(|e| matches!(
            e,
            Event::AssistantMessage { .. } | Event::UserMessage { .. }
        )),
        "{events:?}"
    );
    assert!(
        events
            .iter()
            .any(|e| matches!(e, Event::TurnFinished { message: Some(m), .. }
            if m.contains("prompts with passwords are not sent"))),
        "{events:?}"
    );
}

#[test]
fn a_hook_can_ask_where_the_mode_would_not_and_allow_where_it_would_ask() {
    let ws = Workspace::new();
    user_config(
        &ws,
        r#"
[[hooks.PreToolUse]]
matcher = "Write"
hooks = [{ type = "command", command = "if grep -q 'asked.txt'; then d=ask; else d=allow; fi; echo \"{\\\"hookSpecificOutput\\\": {\\\"permissionDecision\\\": \\\"$d\\\", \\\"permissionDecisionReason\\\": \\\"check writes\\\"}}\"" }]
"#,
    );
    let model = ws.script(json!({"turns": [
        {"tool_calls": [{"name": "write_file", "arguments": {"path": "asked.txt", "content": "x"}}]},
        {"tool_calls": [{"name": "write_file", "arguments": {"path": "allowed.txt", "content": "y"}}]},
        {"text": "done"}
    ]}));
    // Under `ask` mnemo run cannot ask: what the hook asks about is denied, and says why;
    // what it allows is written without the question the mode would put.
    let out = ws.mnemo(
        &[
            "--approval",
            "ask",
            "--model",
            &model,
            "run",
            "--json",
            "write",
        ],
        None,
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    let results = results(&events(&out.stdout));
    assert!(!ws.path().join("asked.txt").exists());
    assert!(
        results[0]
            .2
            .contains("a PreToolUse hook asks: check writes"),
        "{results:?}"
    );
    assert_eq!(ws.read("allowed.txt"), "y");
}

#[test]
fn hooks_do_not_get_the_model_providers_keys() {
    let ws = Workspace::new();
    user_config(
        &ws,
        r#"
[[hooks.SessionStart]]
hooks = [{ type = "command", command = "env > hook-env.txt" }]
"#,
    );
    let model = ws.script(json!({"turns": [{"text": "done"}]}));
    let env = [
        ("ANTHROPIC_API_KEY", "anthropic-secret-value"),
        ("OPENAI_API_KEY", "openai-secret-value"),
        ("SLACK_WEBHOOK_URL", "https://hooks.example/keep"),
    ];
    let out = ws.mnemo_with(&["--model", &model, "run", "hi"], None, &env);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let seen = ws.read("hook-env.txt");
    assert!(
        seen.contains("SLACK_WEBHOOK_URL=https://hooks.example/keep"),
        "{seen}"
    );
    for secret in ["anthropic-secret-value", "openai-secret-value"] {
        assert!(!seen.contains(secret), "{secret} reached a hook");
    }
}
