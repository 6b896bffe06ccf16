//! `mnemo sessions rewind` through the real binary: the files the agent changed go back (a
//! file it created is removed), the conversation goes back, and shell commands are named.

use crate::cli_support;

use cli_support::{Workspace, text};
use serde_json::json;

fn session_id(ws: &Workspace) -> String {
    let list = text(&ws.mnemo(&["sessions"], None).stdout);
    list.lines()
        .nth(1)
        .and_then(|l| l.split_whitespace().next())
        .unwrap_or_else(|| panic!("no session listed: {list}"))
        .to_string()
}

fn messages(ws: &Workspace, id: &str) -> usize {
    let out = ws.mnemo(&["sessions", "export", id, "--format", "json"], None);
    let exported: serde_json::Value =
        serde_json::from_str(&text(&out.stdout)).unwrap_or_else(|e| panic!("{e}"));
    exported["messages"].as_array().map_or(0, Vec::len)
}

#[test]
fn sessions_rewind_restores_files_removes_created_ones_and_takes_back_the_conversation() {
    let ws = Workspace::new();
    ws.write("a.txt", "one\n");
    let model = ws.script(json!({"turns": [
        {"tool_calls": [
            {"id": "e1", "name": "edit_file",
             "arguments": {"path": "a.txt", "old_string": "one", "new_string": "two"}},
            {"id": "w1", "name": "write_file", "arguments": {"path": "sub/new.txt", "content": "fresh\n"}},
            {"id": "s1", "name": "shell", "arguments": {"command": "echo side-effect"}}
        ]},
        {"text": "Changed a.txt and made sub/new.txt."}
    ]}));
    let run = ws.mnemo(
        &[
            "--model",
            &model,
            "--approval",
            "auto",
            "run",
            "first change",
        ],
        None,
    );
    assert!(run.status.success(), "{}", text(&run.stderr));
    let model = ws.script(json!({"turns": [
        {"tool_calls": [{"name": "write_file", "arguments": {"path": "a.txt", "content": "three\n"}}]},
        {"text": "Rewrote a.txt."}
    ]}));
    let run = ws.mnemo(
        &[
            "--model",
            &model,
            "--approval",
            "auto",
            "run",
            "--continue",
            "second change",
        ],
        None,
    );
    assert!(run.status.success(), "{}", text(&run.stderr));
    assert_eq!(ws.read("a.txt"), "three\n");
    let id = session_id(&ws);
    let before = messages(&ws, &id);

    let listed = text(&ws.mnemo(&["sessions", "rewind", &id], None).stdout);
    assert!(
        listed.contains("first change") && listed.contains("second change"),
        "{listed}"
    );
    assert!(listed.contains("a.txt, sub/new.txt"), "{listed}");

    let files_only = ws.mnemo(&["sessions", "rewind", &id, "2", "--files"], None);
    assert!(files_only.status.success(), "{}", text(&files_only.stderr));
    assert_eq!(ws.read("a.txt"), "two\n");
    assert_eq!(messages(&ws, &id), before, "--files keeps the conversation");

    let both = ws.mnemo(&["sessions", "rewind", &id, "1"], None);
    let said = text(&both.stdout);
    assert!(both.status.success(), "{}", text(&both.stderr));
    assert_eq!(ws.read("a.txt"), "one\n");
    assert!(
        !ws.path().join("sub/new.txt").exists(),
        "the created file is removed"
    );
    assert!(
        said.contains("restored a.txt") && said.contains("removed sub/new.txt"),
        "{said}"
    );
    assert!(
        said.contains("$ echo side-effect"),
        "the shell command is named: {said}"
    );
    assert!(
        said.contains("first change"),
        "the rewound prompt is shown: {said}"
    );
    assert_eq!(
        messages(&ws, &id),
        0,
        "the conversation is back to before turn 1"
    );

    let again = ws.mnemo(&["sessions", "rewind", &id, "1"], None);
    assert!(!again.status.success());
    assert!(
        text(&again.stderr).contains("turn 1 is not recorded"),
        "{}",
        text(&again.stderr)
    );
}

#[test]
fn removing_a_session_removes_what_it_kept_for_rewinding() {
    let ws = Workspace::new();
    ws.write("a.txt", "one\n");
    let model = ws.script(json!({"turns": [
        {"tool_calls": [{"name": "write_file", "arguments": {"path": "a.txt", "content": "two\n"}}]},
        {"text": "Rewrote a.txt."}
    ]}));
    let run = ws.mnemo(&["--model", &model, "run", "change it"], None);
    assert!(run.status.success(), "{}", text(&run.stderr));
    let id = session_id(&ws);
    // The listing shows the id's first characters; the directory has the whole id.
    let kept = std::fs::read_dir(ws.path().join(".data/rewind"))
        .unwrap_or_else(|e| panic!("nothing was kept: {e}"))
        .filter_map(Result::ok)
        .map(|e| e.path())
        .find(|p| {
            p.file_name()
                .is_some_and(|n| n.to_string_lossy().starts_with(&id))
        })
        .unwrap_or_else(|| panic!("the first content of a.txt was not kept"));

    let removed = ws.mnemo(&["sessions", "rm", &id], None);
    assert!(removed.status.success(), "{}", text(&removed.stderr));
    assert!(!kept.exists(), "the session's rewind data stayed behind");
}

#[test]
fn a_rewound_conversation_reads_a_nested_agents_md_again() {
    let ws = Workspace::new();
    std::fs::create_dir_all(ws.path().join("sub")).unwrap_or_else(|e| panic!("{e}"));
    ws.write("sub/AGENTS.md", "SUB-RULE\n");
    ws.write("sub/x.txt", "x\n");
    let read = json!({"turns": [
        {"tool_calls": [{"name": "read_file", "arguments": {"path": "sub/x.txt"}}]},
        {"text": "Read it."}
    ]});
    let model = ws.script(read.clone());
    let first = ws.mnemo(&["--model", &model, "run", "read sub/x.txt"], None);
    let told = "instructions from sub/AGENTS.md added to the conversation";
    assert!(
        text(&first.stderr).contains(told),
        "{}",
        text(&first.stderr)
    );
    let id = session_id(&ws);
    let rewound = ws.mnemo(&["sessions", "rewind", &id, "1", "--conversation"], None);
    assert!(rewound.status.success(), "{}", text(&rewound.stderr));
    let model = ws.script(read);
    let again = ws.mnemo(
        &["--model", &model, "run", "--resume", &id, "read it again"],
        None,
    );
    assert!(
        text(&again.stderr).contains(told),
        "the rewound conversation no longer has the file: {}",
        text(&again.stderr)
    );
}
