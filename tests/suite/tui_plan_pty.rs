//! The agent's plan in a pseudo-terminal: while a step is open a small panel above the input
//! box shows it, the step in progress marked; each change is recorded in the transcript, and
//! once every step is done the panel goes.

use crate::pty_support;

use pty_support::{Terminal, TestResult};

/// The rows right above the input box's rule: where the live panels are.
fn above_input(term: &Terminal) -> Vec<String> {
    let screen = term.contents();
    let rows: Vec<&str> = screen.lines().collect();
    let rule = rows
        .iter()
        .rposition(|row| row.starts_with("────"))
        .unwrap_or(rows.len());
    rows[rule.saturating_sub(3)..rule]
        .iter()
        .map(|row| row.trim_end().to_string())
        .collect()
}

#[test]
fn the_plan_panel_shows_the_open_step_and_goes_when_all_are_done() -> TestResult {
    let dir = tempfile::tempdir()?;
    let script = dir.path().join("script.json");
    std::fs::write(
        &script,
        r#"{"turns": [
            {"when": "plan the fix", "tool_calls": [{"name": "todo", "arguments": {"items": [
                {"step": "read the parser", "status": "in_progress"},
                {"step": "fix the bug", "status": "pending"}]}}]},
            {"when": "plan the fix", "text": "Reading the parser first."},
            {"when": "finish it", "tool_calls": [{"name": "todo", "arguments": {"items": [
                {"step": "read the parser", "status": "done"},
                {"step": "fix the bug", "status": "done"}]}}]},
            {"when": "finish it", "text": "All done."}
        ]}"#,
    )?;
    let model = format!("scripted:{}", script.display());
    let mut term = Terminal::spawn(&["--model", &model], dir.path())?;
    term.wait_for("● idle")?;
    term.send("plan the fix\r")?;
    term.wait_for("Reading the parser first.")?;
    term.wait_for("● idle")?;
    let panel = above_input(&term);
    assert_eq!(
        panel,
        [
            "☰ Plan · 0 of 2 done",
            "  [>] read the parser",
            "  [ ] fix the bug"
        ],
        "{}",
        term.contents()
    );

    term.send("finish it\r")?;
    term.wait_for("All done.")?;
    term.wait_for("● idle")?;
    let panel = above_input(&term);
    assert!(
        panel
            .iter()
            .all(|row| !row.contains("[ ]") && !row.contains("[>]")),
        "{}",
        term.contents()
    );
    let rows = term.all_rows();
    assert!(
        rows.iter().any(|row| row.contains("☰ Plan · 2 of 2 done")),
        "{rows:#?}"
    );
    term.quit()?;
    Ok(())
}
