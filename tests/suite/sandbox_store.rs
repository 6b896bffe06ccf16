//! mnemo's store stays hidden from sandboxed commands wherever it lives: with the database
//! outside the data directory (`--db`), its write-ahead log, shared memory and piece files are
//! as hidden as the database itself. Real bubblewrap, through the binary.
#![cfg(target_os = "linux")]

use crate::cli_support;
use crate::sandbox_support;

use cli_support::{Workspace, text};
use sandbox_support::host_dir;
use serde_json::json;

#[test]
fn a_sandboxed_command_cannot_read_the_wal_of_a_database_given_with_db() {
    let ws = Workspace::new();
    let store = host_dir().unwrap_or_else(|e| panic!("{e}"));
    let dir = store
        .path()
        .canonicalize()
        .unwrap_or_else(|e| panic!("{e}"));
    let db = dir.join("private.db");
    std::fs::write(dir.join("beside.txt"), "visible-neighbour").unwrap_or_else(|e| panic!("{e}"));
    let marker = "PRIVATE-PROMPT-MARKER-8231";
    let probe = format!(
        "cd {dir} && ls; cat beside.txt; echo; for f in private.db*; do printf '%s:' \"$f\"; \
         cat \"$f\" 2>/dev/null | grep -c {marker}; done",
        dir = dir.display()
    );
    let model = ws.script(json!({"turns": [
        {"tool_calls": [{"name": "shell", "arguments": {"command": format!("({probe}) > {}/seen.txt 2>&1", ws.path().display())}}]},
        {"text": "done"}
    ]}));
    let db_arg = db.display().to_string();
    let out = ws.mnemo(
        &[
            "--db",
            &db_arg,
            "--model",
            &model,
            "run",
            &format!("remember {marker}"),
        ],
        None,
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    let seen = std::fs::read_to_string(ws.path().join("seen.txt"))
        .unwrap_or_else(|e| panic!("{e}: {}{}", text(&out.stdout), text(&out.stderr)));
    assert!(seen.contains("visible-neighbour"), "{seen}");
    assert!(
        seen.contains("private.db-wal:"),
        "the WAL was there: {seen}"
    );
    for line in seen
        .lines()
        .filter(|l| l.starts_with("private.db") && l.contains(':'))
    {
        assert!(line.ends_with(":0"), "the store leaked: {seen}");
    }
}

#[test]
fn the_file_tools_refuse_the_wal_of_a_database_inside_the_workspace() {
    let ws = Workspace::new();
    std::fs::create_dir_all(ws.path().join("data")).unwrap_or_else(|e| panic!("{e}"));
    let model = ws.script(json!({"turns": [
        {"tool_calls": [{"name": "read_file", "arguments": {"path": "data/inside.db-wal"}}]},
        {"text": "done"}
    ]}));
    let db = ws.path().join("data/inside.db").display().to_string();
    let out = ws.mnemo(&["--db", &db, "--model", &model, "run", "read it"], None);
    let all = format!("{}{}", text(&out.stdout), text(&out.stderr));
    assert!(out.status.success(), "{all}");
    assert!(ws.path().join("data/inside.db-wal").exists(), "{all}");
    assert!(all.contains("hidden from the agent"), "{all}");
}
