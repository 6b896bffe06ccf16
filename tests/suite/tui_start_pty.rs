//! What `mnemo` asks before its session screen opens, answered in a pseudo-terminal as a person
//! would: trusting a workspace whose `.mnemo/config.toml` asks for more than an untrusted one
//! gets, and working in a directory as broad as the home directory. Then the first screen:
//! what runs, under which rules, and the keys to begin with.

use crate::pty_support;

use pty_support::{Terminal, TestResult};

fn scripted(dir: &std::path::Path) -> Result<String, std::io::Error> {
    let script = dir.join("script.json");
    std::fs::write(&script, r#"{"turns": [{"text": "hello"}]}"#)?;
    Ok(format!("scripted:{}", script.display()))
}

#[test]
fn an_untrusted_workspace_is_asked_about_and_a_no_keeps_it_safe() -> TestResult {
    let dir = tempfile::tempdir()?;
    let model = scripted(dir.path())?;
    std::fs::create_dir(dir.path().join(".mnemo"))?;
    std::fs::write(
        dir.path().join(".mnemo/config.toml"),
        "approval = \"full\"\n[sandbox]\nnetwork = true\n",
    )?;
    let mut term = Terminal::spawn(&["--model", &model], dir.path())?;
    term.wait_for("asks for settings an untrusted workspace does not get")?;
    term.wait_for("approval = \"full\"")?;
    term.wait_for("Trust this workspace? [y/N]")?;
    term.send("n\r")?;
    term.wait_for("● idle")?;
    term.wait_for("ignored settings of")?;
    assert!(
        !term.contents().contains("full: no sandbox"),
        "{}",
        term.contents()
    );
    term.quit()?;
    assert!(!dir.path().join("config/trusted-workspaces.toml").exists());

    // Yes records the trust, and the next start asks nothing.
    let mut term = Terminal::spawn(&["--model", &model], dir.path())?;
    term.wait_for("Trust this workspace? [y/N]")?;
    term.send("y\r")?;
    term.wait_for("● idle")?;
    term.quit()?;
    let trusted = std::fs::read_to_string(dir.path().join("config/trusted-workspaces.toml"))?;
    assert!(trusted.contains("config_sha256"), "{trusted}");
    let mut term = Terminal::spawn(&["--model", &model], dir.path())?;
    term.wait_for("● idle")?;
    assert!(!term.contents().contains("Trust this workspace"));
    term.quit()?;
    Ok(())
}

#[test]
fn a_home_directory_workspace_needs_a_yes() -> TestResult {
    let dir = tempfile::tempdir()?;
    let model = scripted(dir.path())?;
    let home = dir.path().join("home");
    std::fs::create_dir(&home)?;
    let home_text = home.display().to_string();
    let args = ["--model", model.as_str(), "-C", home_text.as_str()];
    let mut term = Terminal::spawn_with(&args, dir.path(), &[("HOME", &home_text)])?;
    term.wait_for("is your home directory")?;
    term.wait_for("Let the agent work here anyway? [y/N]")?;
    term.send("\r")?;
    let status = term.wait_exit()?;
    assert!(!status.success());

    let mut term = Terminal::spawn_with(&args, dir.path(), &[("HOME", &home_text)])?;
    term.wait_for("Let the agent work here anyway? [y/N]")?;
    term.send("y\r")?;
    term.wait_for("● idle")?;
    term.quit()?;
    Ok(())
}

#[test]
fn continue_after_an_empty_launch_resumes_the_real_session() -> TestResult {
    let dir = tempfile::tempdir()?;
    let script = dir.path().join("script.json");
    std::fs::write(&script, r#"{"turns": [{"text": "The answer is 42."}]}"#)?;
    let model = format!("scripted:{}", script.display());
    let mut term = Terminal::spawn(&["--model", &model], dir.path())?;
    term.wait_for("● idle")?;
    term.send("what is the answer\r")?;
    term.wait_for("The answer is 42.")?;
    term.wait_for("● idle")?;
    term.quit()?;
    term.wait_for("saved · mnemo --resume ")?;

    // A launch where nothing is typed leaves nothing behind, and says nothing on exit.
    let mut term = Terminal::spawn(&["--model", &model], dir.path())?;
    term.wait_for("● idle")?;
    term.quit()?;
    assert!(!term.contents().contains("saved · mnemo --resume"));

    let mut term = Terminal::spawn(&["--model", &model, "--continue"], dir.path())?;
    term.wait_for("Resumed session “what is the answer”")?;
    term.wait_for("The answer is 42.")?;
    term.quit()?;
    Ok(())
}

#[test]
fn the_first_screen_says_what_runs_under_which_rules_and_the_keys() -> TestResult {
    let dir = tempfile::tempdir()?;
    let model = scripted(dir.path())?;
    let mut term = Terminal::spawn(&["--model", &model], dir.path())?;
    term.wait_for("● idle")?;
    let version = env!("CARGO_PKG_VERSION");
    term.wait_for(&format!("mnemo {version} · {model}"))?;
    term.wait_for("auto · workspace-write · network off")?;
    term.wait_for("Enter send · Tab queue · Esc interrupt · / commands")?;
    term.quit()?;

    // The rules follow the flags, and the flags' model is the current one in /model.
    let args = ["--model", model.as_str(), "--approval", "ask", "--network"];
    let mut term = Terminal::spawn(&args, dir.path())?;
    term.wait_for("ask · workspace-write · network on")?;
    term.send("/model")?;
    term.wait_for("/model")?;
    term.send("\r")?;
    term.wait_for("Switch the model")?;
    let rows = term.all_rows();
    let listed = rows
        .iter()
        .find(|row| row.contains(&model) && row.contains("in use"));
    assert!(
        listed.is_some_and(|row| row.ends_with("(current)")),
        "{rows:#?}"
    );
    term.send("\x1b")?;
    term.wait_gone("Switch the model")?;
    term.quit()?;
    Ok(())
}
