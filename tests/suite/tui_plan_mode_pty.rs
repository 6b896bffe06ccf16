//! Plan mode in a pseudo-terminal: Shift+Tab from auto turns it on, the agent's write is
//! refused while it plans, its plan is offered above the input box, and 1 carries it out in
//! the mode before plan mode, where the write happens.

use crate::pty_support;

use pty_support::{Terminal, TestResult};

#[test]
fn shift_tab_plans_and_an_approved_plan_is_carried_out() -> TestResult {
    let dir = tempfile::tempdir()?;
    let root = dir.path().canonicalize()?;
    let script = root.join("script.json");
    std::fs::write(
        &script,
        r#"{"turns": [
            {"when": "add a greeting", "tool_calls": [{"name": "write_file",
                "arguments": {"path": "hello.txt", "content": "hi"}}]},
            {"when": "add a greeting", "text": "Plan: write hello.txt with a greeting."},
            {"when": "The plan is approved", "tool_calls": [{"name": "write_file",
                "arguments": {"path": "hello.txt", "content": "hi"}}]},
            {"when": "The plan is approved", "text": "Greeting written."}
        ]}"#,
    )?;
    let model = format!("scripted:{}", script.display());
    let mut term = Terminal::spawn(&["--model", &model], &root)?;
    term.wait_for("● idle")?;
    term.send("\x1b[Z")?;
    term.wait_for("plan mode")?;
    term.send("add a greeting\r")?;
    term.wait_for("Carry out the plan above?")?;
    assert!(!root.join("hello.txt").exists(), "plan mode wrote a file");
    assert!(term.contents().contains("Plan: write hello.txt"));

    term.send("1")?;
    term.wait_for("Greeting written.")?;
    term.wait_for("● idle")?;
    assert_eq!(std::fs::read_to_string(root.join("hello.txt"))?, "hi");
    let rows = term.all_rows();
    let status = rows.iter().rfind(|row| row.contains("● idle"));
    assert!(
        status.is_some_and(|row| !row.contains("plan mode")),
        "{rows:#?}"
    );
    term.quit()?;
    Ok(())
}
