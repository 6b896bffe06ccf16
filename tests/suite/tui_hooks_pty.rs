//! The Notification hook in a pseudo-terminal: when the agent puts an approval question to the
//! person, the person's hook hears of it in Claude Code's format (a desktop ping, a phone
//! message), beside the question, which still waits for the answer.

use crate::pty_support;

use pty_support::{Terminal, TestResult};

#[test]
fn a_notification_hook_hears_of_an_approval_question() -> TestResult {
    let dir = tempfile::tempdir()?;
    let root = dir.path().canonicalize()?;
    let heard = root.join("heard.json");
    std::fs::create_dir_all(root.join("config"))?;
    std::fs::write(
        root.join("config/config.toml"),
        format!(
            "[[hooks.Notification]]\nhooks = [{{ type = \"command\", command = \"cat > {}\" }}]\n",
            heard.display()
        ),
    )?;
    let script = root.join("script.json");
    std::fs::write(
        &script,
        r#"{"turns": [
            {"tool_calls": [{"name": "write_file", "arguments": {"path": "a.txt", "content": "x"}}]},
            {"text": "written"}
        ]}"#,
    )?;
    let model = format!("scripted:{}", script.display());
    let mut term = Terminal::spawn(&["--approval", "ask", "--model", &model], &root)?;
    term.wait_for("● idle")?;
    term.send("write a file\r")?;
    term.wait_for("Apply this change to a.txt?")?;
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    let input = loop {
        let text = std::fs::read_to_string(&heard).unwrap_or_default();
        if let Ok(value) = serde_json::from_str::<serde_json::Value>(&text) {
            break value;
        }
        if std::time::Instant::now() > deadline {
            return Err(format!("the hook heard nothing: {text:?}").into());
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    };
    assert_eq!(input["hook_event_name"], "Notification");
    assert_eq!(input["notification_type"], "permission_prompt");
    // `--approval ask` under Claude Code's name for it.
    assert_eq!(input["permission_mode"], "default");
    let message = input["message"].as_str().unwrap_or_default();
    assert!(message.contains("needs your permission"), "{input}");
    assert!(input["session_id"].as_str().is_some_and(|s| !s.is_empty()));
    // The question still waits for the person (who answers once keys count as answers).
    assert!(!root.join("a.txt").exists());
    std::thread::sleep(std::time::Duration::from_millis(600));
    term.send("1")?;
    term.wait_for("written")?;
    assert_eq!(std::fs::read_to_string(root.join("a.txt"))?, "x");
    term.quit()?;
    Ok(())
}
