//! The person's own slash commands through `mnemo run`: `/NAME args` reaches the model as the
//! command's text with `$1`, `$2` and `$ARGUMENTS` filled in; a workspace's command runs only
//! once the workspace is trusted.

use crate::cli_support;

use cli_support::{Workspace, text};
use mnemo::protocol::Event;
use serde_json::json;

fn user_messages(stdout: &[u8]) -> Vec<String> {
    text(stdout)
        .lines()
        .filter_map(|l| serde_json::from_str::<Event>(l).ok())
        .filter_map(|e| match e {
            Event::UserMessage { text, .. } => Some(text),
            _ => None,
        })
        .collect()
}

#[test]
fn run_expands_a_persons_command_with_its_arguments() {
    let ws = Workspace::new();
    std::fs::create_dir_all(ws.path().join(".cfg/commands")).unwrap_or_else(|e| panic!("{e}"));
    ws.write(
        ".cfg/commands/greet.md",
        "---\ndescription: Greet someone\n---\nSay hello to $1 at $2 (asked: $ARGUMENTS).\n",
    );
    let model = ws.script(json!({"turns": [
        {"when": "Say hello to Ada at the lab (asked: Ada \"the lab\").", "text": "Hello, Ada!"}
    ]}));
    let out = ws.mnemo(
        &["--model", &model, "run", "--json", "/greet Ada \"the lab\""],
        None,
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(
        user_messages(&out.stdout),
        vec!["Say hello to Ada at the lab (asked: Ada \"the lab\")."]
    );
    assert!(
        text(&out.stdout).contains("Hello, Ada!"),
        "the model got the expanded prompt"
    );
}

#[test]
fn a_workspace_command_runs_only_in_a_trusted_workspace() {
    let ws = Workspace::new();
    std::fs::create_dir_all(ws.path().join(".mnemo/commands")).unwrap_or_else(|e| panic!("{e}"));
    ws.write(".mnemo/commands/wipe.md", "Write the file $1.\n");
    let script = json!({"turns": [
        {"tool_calls": [{"name": "write_file", "arguments": {"path": "wiped.txt", "content": "x"}}]},
        {"text": "Done."}
    ]});
    let model = ws.script(script.clone());
    let out = ws.mnemo(
        &[
            "--model",
            &model,
            "--approval",
            "auto",
            "run",
            "/wipe wiped.txt",
        ],
        None,
    );
    assert!(!out.status.success(), "the untrusted command must not run");
    let said = text(&out.stderr);
    assert!(
        said.contains("/wipe is a command of this workspace") && said.contains("mnemo trust"),
        "{said}"
    );
    assert!(
        !ws.path().join("wiped.txt").exists(),
        "the model was never asked"
    );

    assert!(ws.mnemo(&["trust"], None).status.success());
    let model = ws.script(script);
    let out = ws.mnemo(
        &[
            "--model",
            &model,
            "--approval",
            "auto",
            "run",
            "--json",
            "/wipe wiped.txt",
        ],
        None,
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(
        user_messages(&out.stdout),
        vec!["Write the file wiped.txt."]
    );
    assert!(ws.path().join("wiped.txt").exists());
}

#[test]
fn a_commands_model_answers_its_turn() {
    let ws = Workspace::new();
    let other = ws.path().join("other.json");
    std::fs::write(
        &other,
        json!({"turns": [{"text": "from the other model"}]}).to_string(),
    )
    .unwrap_or_else(|e| panic!("{e}"));
    let other = format!("scripted:{}", other.display());
    std::fs::create_dir_all(ws.path().join(".cfg/commands")).unwrap_or_else(|e| panic!("{e}"));
    ws.write(
        ".cfg/commands/quick.md",
        &format!("---\nmodel: {other}\n---\nAnswer quickly: $ARGUMENTS\n"),
    );
    let model = ws.script(json!({"turns": [{"text": "from the session's model"}]}));
    let out = ws.mnemo(&["--model", &model, "run", "--json", "/quick why?"], None);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let stdout = text(&out.stdout);
    assert!(stdout.contains("from the other model"), "{stdout}");
    let switches: Vec<String> = stdout
        .lines()
        .filter_map(|l| serde_json::from_str::<Event>(l).ok())
        .filter_map(|e| match e {
            Event::ModelChanged { model, .. } => Some(model),
            _ => None,
        })
        .collect();
    // Going back happens after the turn ends, when `mnemo run` has stopped listening.
    assert_eq!(
        switches.first(),
        Some(&other),
        "the turn ran on the command's model"
    );
    assert!(!stdout.contains("from the session's model"), "{stdout}");
}
