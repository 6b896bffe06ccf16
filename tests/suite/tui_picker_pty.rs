//! The session lists in a pseudo-terminal: `/sessions` lists every directory's sessions,
//! `/resume` picks among this directory's, showing the chosen one's last message, and renames
//! one with Ctrl+R, which the store keeps.

use crate::pty_support;

use std::process::Command;

use pty_support::{Terminal, TestResult};

fn mnemo(dir: &std::path::Path, args: &[&str]) -> Result<String, Box<dyn std::error::Error>> {
    let out = Command::new(env!("CARGO_BIN_EXE_mnemo"))
        .args(args)
        .current_dir(dir)
        .env("MNEMO_CONFIG_DIR", dir.join("config"))
        .env("MNEMO_DATA_DIR", dir.join("data"))
        .output()?;
    if !out.status.success() {
        return Err(format!("{args:?}: {}", String::from_utf8_lossy(&out.stderr)).into());
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

#[test]
fn sessions_lists_every_directory_and_resume_previews_and_renames() -> TestResult {
    let dir = tempfile::tempdir()?;
    let root = dir.path().canonicalize()?;
    let script = root.join("script.json");
    std::fs::write(
        &script,
        r#"{"turns": [
            {"when": "where is the parser", "text": "The parser lives in src/parse.rs"},
            {"when": "a question elsewhere", "text": "answered elsewhere"}
        ]}"#,
    )?;
    let model = format!("scripted:{}", script.display());
    let other = root.join("other");
    std::fs::create_dir(&other)?;
    let other_text = other.display().to_string();
    mnemo(&root, &["--model", &model, "run", "where is the parser"])?;
    let elsewhere = [
        "-C",
        &other_text,
        "--model",
        &model,
        "run",
        "a question elsewhere",
    ];
    mnemo(&root, &elsewhere)?;

    let mut term = Terminal::spawn(&["--model", &model], &root)?;
    term.wait_for("● idle")?;
    term.send("/sessions\r")?;
    term.wait_for("Recent sessions of every directory")?;
    let rows = term.all_rows();
    let row = |title: &str| rows.iter().find(|r| r.contains(title)).cloned();
    let here = row("where is the parser").unwrap_or_default();
    assert!(here.ends_with("· here"), "{rows:#?}");
    let away = row("a question elsewhere").unwrap_or_default();
    assert!(away.ends_with(&format!("· {other_text}")), "{rows:#?}");

    term.send("/resume\r")?;
    // Only this directory's session: the other one is not offered.
    term.wait_for("Resume a session  1 of 1")?;
    term.send("parser")?;
    term.wait_for("↳ The parser lives in src/parse.rs")?;
    term.send("\x12")?;
    term.wait_for("new title: where is the parser")?;
    term.send(&"\x7f".repeat("where is the parser".len()))?;
    term.send("parser notes\r")?;
    term.wait_for("is now titled “parser notes”")?;
    term.wait_for("› parser notes")?;
    term.send("\x1b")?;
    term.wait_gone("Resume a session")?;
    term.quit()?;

    let listed = mnemo(&root, &["sessions"])?;
    assert!(listed.contains("parser notes"), "{listed}");
    Ok(())
}
