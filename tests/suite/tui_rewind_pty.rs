//! Rewind in a pseudo-terminal: the agent edits two files over two turns; Esc Esc on the empty
//! box lists the turns, and rewinding the first restores both files and the conversation,
//! putting the rewound prompt back into the box.

use crate::pty_support;

use pty_support::{Terminal, TestResult, command};

#[test]
fn esc_esc_rewinds_two_edited_files_and_the_conversation() -> TestResult {
    let dir = tempfile::tempdir()?;
    let root = dir.path().canonicalize()?;
    std::fs::write(root.join("a.txt"), "alpha\n")?;
    std::fs::write(root.join("b.txt"), "beta\n")?;
    let script = root.join("script.json");
    std::fs::write(
        &script,
        r#"{"turns": [
            {"tool_calls": [{"name": "edit_file", "arguments":
                {"path": "a.txt", "old_string": "alpha", "new_string": "ALPHA"}}]},
            {"text": "Edited a.txt."},
            {"tool_calls": [{"name": "edit_file", "arguments":
                {"path": "b.txt", "old_string": "beta", "new_string": "BETA"}}]},
            {"text": "Edited b.txt."},
            {"text": "Asked again after the rewind."}
        ]}"#,
    )?;
    let model = format!("scripted:{}", script.display());
    let mut term = Terminal::spawn(&["--model", &model, "--approval", "auto"], &root)?;
    term.wait_for("● idle")?;
    term.send("shout the first file\r")?;
    term.wait_for("Edited a.txt.")?;
    term.wait_for("● idle")?;
    term.send("shout the second file\r")?;
    term.wait_for("Edited b.txt.")?;
    term.wait_for("● idle")?;
    assert_eq!(std::fs::read_to_string(root.join("a.txt"))?, "ALPHA\n");
    assert_eq!(std::fs::read_to_string(root.join("b.txt"))?, "BETA\n");

    term.send("\x1b")?;
    std::thread::sleep(std::time::Duration::from_millis(150));
    term.send("\x1b")?;
    term.wait_for("Rewind to before a turn")?;
    // Newest first: the second turn with its file, then the first.
    term.wait_for("2  shout the second file  [b.txt]")?;
    term.wait_for("1  shout the first file  [a.txt]")?;
    term.send("\x1b[B")?;
    term.send("\r")?;
    term.wait_for("conversation and files changed since")?;
    term.send("\r")?;
    term.wait_for("Rewound to before turn 1")?;
    term.wait_for("restored a.txt")?;
    term.wait_for("restored b.txt")?;
    assert_eq!(std::fs::read_to_string(root.join("a.txt"))?, "alpha\n");
    assert_eq!(std::fs::read_to_string(root.join("b.txt"))?, "beta\n");

    // The rewound prompt is back in the box: Enter sends it again.
    term.send("\r")?;
    term.wait_for("Asked again after the rewind.")?;
    term.wait_for("● idle")?;
    term.quit()?;

    let listed = command(&root, &["sessions"]).output()?;
    let listed = String::from_utf8_lossy(&listed.stdout).into_owned();
    let id = listed
        .lines()
        .nth(1)
        .and_then(|l| l.split_whitespace().next())
        .ok_or_else(|| format!("no session listed: {listed}"))?
        .to_string();
    let exported = command(&root, &["sessions", "export", &id, "--format", "json"]).output()?;
    let exported: serde_json::Value = serde_json::from_slice(&exported.stdout)?;
    let messages = exported["messages"].as_array().cloned().unwrap_or_default();
    // Only the prompt sent again and its answer: both rewound turns are gone from the store.
    assert_eq!(messages.len(), 2, "{messages:#?}");
    let stored = exported.to_string();
    assert!(stored.contains("shout the first file"), "{stored}");
    assert!(!stored.contains("shout the second file"), "{stored}");
    Ok(())
}
