//! The person's own slash command in a pseudo-terminal: `/` offers it with its description,
//! and `/NAME arg` sends the command's text, with the argument filled in, to the model.

use crate::pty_support;

use pty_support::{Terminal, TestResult};

#[test]
fn a_persons_command_is_offered_and_sends_its_expanded_prompt() -> TestResult {
    let dir = tempfile::tempdir()?;
    let root = dir.path().canonicalize()?;
    std::fs::create_dir_all(root.join("config/commands"))?;
    std::fs::write(
        root.join("config/commands/greet.md"),
        "---\ndescription: greet someone warmly\n---\nGreet $1 warmly, in $2 words.\n",
    )?;
    let script = root.join("script.json");
    std::fs::write(
        &script,
        r#"{"turns": [{"when": "Greet World warmly, in three words.", "text": "Hello there, World."}]}"#,
    )?;
    let model = format!("scripted:{}", script.display());
    let mut term = Terminal::spawn(&["--model", &model], &root)?;
    term.wait_for("● idle")?;
    term.send("/gre")?;
    term.wait_for("/greet")?;
    term.wait_for("greet someone warmly (your commands)")?;
    term.send("et World three\r")?;
    term.wait_for("Greet World warmly, in three words.")?;
    term.wait_for("Hello there, World.")?;
    term.send("/help\r")?;
    term.wait_for("Your commands (/NAME arguments):")?;
    term.quit()?;
    Ok(())
}
