//! End to end: the real `mnemo` binary in a pseudo-terminal, with the scripted provider. What
//! reaches the terminal is parsed by vt100 and checked as a user would see it: a streamed
//! answer, a running tool pane, an injection marked as such, an interrupt, Ctrl+C twice to
//! quit with the terminal restored, and the same conversation again after `--resume ID`,
//! `--continue` or the picker of `--resume`, with archived messages in the pager; `/model`
//! switches the model of a session.

use std::path::Path;
use std::process::Command;
use std::time::Duration;

use mnemo::llm::{ContentBlock, Message};
use mnemo::memory::{Db, NewArchiveEntry, NewSession};

use crate::pty_support;

use pty_support::{Terminal, TestResult};

const SCRIPT: &str = r#"{"turns": [
  {"chunks": ["Streaming ", "the first ", "answer.\n"], "delay_ms": 60,
   "tool_calls": [{"name": "shell",
     "arguments": {"command": "for i in 1 2 3 4 5 6; do echo tick $i; sleep 0.4; done"}}]},
  {"chunks": ["Noted ", "the injection.\n", "Now ", "a ", "long ", "answer ", "that ", "will ",
              "be ", "interrupted ", "long ", "before ", "it ", "ends ", "because ", "each ",
              "word ", "takes ", "a ", "while ", "to ", "arrive."], "delay_ms": 400}
]}"#;

#[test]
fn a_session_streams_runs_a_tool_takes_an_injection_and_is_interrupted() -> TestResult {
    let dir = tempfile::tempdir()?;
    let script = dir.path().join("script.json");
    std::fs::write(&script, SCRIPT)?;
    let model = format!("scripted:{}", script.display());
    let mut term = Terminal::spawn(&["--model", &model], dir.path())?;

    term.wait_for("● idle")?;
    term.send("hello mnemo\r")?;
    term.wait_for("› hello mnemo")?;
    term.wait_for("Streaming the first answer.")?;
    term.wait_for("⋯ shell  for i in 1 2 3 4 5 6")?;
    term.wait_for("tick 2")?;

    term.send("also this\r")?;
    term.wait_for("↳ injecting: also this")?;
    term.wait_for("✓ shell")?;
    term.wait_for("› also this  (injected)")?;
    term.wait_for("Noted the injection.")?;
    term.wait_for("Now a long")?;

    term.send("\x1b")?;
    term.wait_for("■ Interrupted")?;
    term.wait_for("● idle")?;
    assert!(
        !term.contents().contains("arrive."),
        "the interrupted answer went on:\n{}",
        term.contents()
    );

    term.send("\x03")?;
    term.wait_for("Press Ctrl+C again to quit")?;
    term.send("\x03")?;
    let status = term.wait_exit()?;
    assert!(status.success(), "exit status {status:?}");
    let screen = term.contents();
    assert!(
        !screen.contains("Ask anything"),
        "the live area was left on the screen:\n{screen}"
    );
    assert!(
        screen.contains("› hello mnemo"),
        "the transcript stays:\n{screen}"
    );

    let id = latest_session_id(dir.path())?;
    let mut term = Terminal::spawn(&["--model", &model, "--resume", &id], dir.path())?;
    for text in [
        "Resumed session “hello mnemo”",
        "› hello mnemo",
        "Streaming the first answer.",
        "✓ shell  for i in 1 2 3 4 5 6",
        "tick 6",
        "› also this",
        "Noted the injection.",
        "● idle",
    ] {
        term.wait_for(text)?;
    }
    assert!(
        term.contents().contains(&id),
        "the status line names another session:\n{}",
        term.contents()
    );
    term.quit()
}

/// Runs `mnemo` to completion with the test's directories.
fn mnemo(dir: &Path, args: &[&str]) -> Result<String, Box<dyn std::error::Error>> {
    let output = Command::new(env!("CARGO_BIN_EXE_mnemo"))
        .args(args)
        .current_dir(dir)
        .env("MNEMO_CONFIG_DIR", dir.join("config"))
        .env("MNEMO_DATA_DIR", dir.join("data"))
        .output()?;
    if !output.status.success() {
        let err = String::from_utf8_lossy(&output.stderr);
        return Err(format!("mnemo {args:?} failed: {err}").into());
    }
    Ok(String::from_utf8(output.stdout)?)
}

/// The short id of the newest session of `dir`, from `mnemo sessions`.
fn latest_session_id(dir: &Path) -> Result<String, Box<dyn std::error::Error>> {
    let listing = mnemo(dir, &["sessions"])?;
    let id = listing
        .lines()
        .nth(1)
        .and_then(|line| line.split_whitespace().next())
        .ok_or_else(|| format!("no session listed:\n{listing}"))?;
    Ok(id.to_string())
}

#[test]
fn continue_model_switch_and_the_picker_reopen_a_stored_session() -> TestResult {
    let dir = tempfile::tempdir()?;
    let first = dir.path().join("first.json");
    std::fs::write(&first, r#"{"turns": [{"text": "The answer is 42."}]}"#)?;
    let other = dir.path().join("other.json");
    std::fs::write(&other, r#"{"turns": [{"text": "Other model here."}]}"#)?;
    let model = format!("scripted:{}", first.display());
    mnemo(
        dir.path(),
        &["--model", &model, "run", "what is the answer"],
    )?;

    let mut term = Terminal::spawn(&["--model", &model, "--continue"], dir.path())?;
    term.wait_for("› what is the answer")?;
    term.wait_for("The answer is 42.")?;
    term.wait_for("● idle")?;
    term.send(&format!("/model scripted:{}\r", other.display()))?;
    term.wait_for("other.json · ")?;
    term.send("and who are you?\r")?;
    term.wait_for("› and who are you?")?;
    term.wait_for("Other model here.")?;
    term.wait_for("● idle")?;
    term.quit()?;

    let mut term = Terminal::spawn(&["--model", &model, "--resume"], dir.path())?;
    term.wait_for("Resume a session")?;
    term.wait_for("what is the answer")?;
    term.wait_for("4 messages")?;
    term.send("\r")?;
    term.wait_for("› and who are you?")?;
    term.wait_for("Other model here.")?;
    term.wait_for("● idle")?;
    term.quit()?;

    let mut term = Terminal::spawn(&["--model", &model, "--resume"], dir.path())?;
    term.wait_for("Esc new session")?;
    term.send("\x1b")?;
    term.wait_for("New session")?;
    term.wait_for("● idle")?;
    term.send("/resume\r")?;
    term.wait_for("Esc close")?;
    term.wait_for("what is the answer")?;
    // The new session holds no message yet: it is neither stored nor listed.
    assert!(
        !term.contents().contains("(untitled)"),
        "{}",
        term.contents()
    );
    term.send("\x1b")?;
    term.wait_gone("Esc close")?;
    term.quit()
}

#[test]
fn in_ask_mode_a_write_waits_for_the_users_answer() -> TestResult {
    let dir = tempfile::tempdir()?;
    let script = dir.path().join("script.json");
    std::fs::write(
        &script,
        r#"{"turns": [
          {"tool_calls": [{"name": "write_file",
            "arguments": {"path": "plan.md", "content": "step one\n"}}]},
          {"tool_calls": [{"name": "write_file",
            "arguments": {"path": "secret.md", "content": "nope\n"}}]},
          {"text": "All done."}
        ]}"#,
    )?;
    let model = format!("scripted:{}", script.display());
    let mut term = Terminal::spawn(&["--approval", "ask", "--model", &model], dir.path())?;
    term.wait_for("● idle")?;
    term.send("write the plan\r")?;
    term.wait_for("Apply this change to plan.md?")?;
    term.wait_for("1 + step one")?;
    term.wait_for("waiting for approval")?;
    assert!(
        !dir.path().join("plan.md").exists(),
        "written before the answer"
    );
    // Keys in a question's first moments are ignored (they were typed for something else).
    let grace = Duration::from_millis(600);
    std::thread::sleep(grace);
    term.send("1")?;
    term.wait_for("Apply this change to secret.md?")?;
    std::thread::sleep(grace);
    term.send("3")?;
    term.wait_for("All done.")?;
    assert_eq!(
        std::fs::read_to_string(dir.path().join("plan.md"))?,
        "step one\n"
    );
    assert!(
        !dir.path().join("secret.md").exists(),
        "a denied write happened"
    );
    term.wait_for("Denied by you · write_file: secret.md")?;
    term.wait_for("denied by you")?;
    term.quit()
}

#[test]
fn a_sentence_typed_while_a_question_is_open_is_typed_and_answers_nothing() -> TestResult {
    let dir = tempfile::tempdir()?;
    std::fs::write(dir.path().join("hello.txt"), "hello\n")?;
    let script = dir.path().join("script.json");
    std::fs::write(
        &script,
        r#"{"turns": [
          {"tool_calls": [{"name": "shell", "arguments": {"command": "rm -f hello.txt"}}]},
          {"text": "Left it alone."}
        ]}"#,
    )?;
    let model = format!("scripted:{}", script.display());
    let mut term = Terminal::spawn(&["--approval", "ask", "--model", &model], dir.path())?;
    term.wait_for("● idle")?;
    term.send("tidy up\r")?;
    term.wait_for("Run this command?")?;
    term.wait_for("waiting for approval")?;
    // A second later, well past the first moments, a person types a sentence into the box.
    std::thread::sleep(Duration::from_secs(1));
    term.send("yes but first tell me why")?;
    term.wait_for("› yes but first tell me why")?;
    std::thread::sleep(Duration::from_millis(500));
    assert!(dir.path().join("hello.txt").exists(), "the command ran");
    assert!(
        term.contents().contains("Run this command?"),
        "{}",
        term.contents()
    );
    // Emptied again, the box takes a sentence opening with the answer `a` once was, whole.
    term.send(&"\x7f".repeat(25))?;
    term.wait_gone("yes but first")?;
    term.send("also check")?;
    term.wait_for("› also check")?;
    assert!(
        !term.contents().contains("not offered"),
        "{}",
        term.contents()
    );
    assert!(dir.path().join("hello.txt").exists(), "the command ran");
    // Alt+n answers while typing; the sentence stays in the box.
    term.send("\x1bn")?;
    term.wait_for("Denied by you · shell: rm -f hello.txt")?;
    term.wait_for("Left it alone.")?;
    assert!(
        term.contents().contains("› also check"),
        "{}",
        term.contents()
    );
    assert!(
        dir.path().join("hello.txt").exists(),
        "a denied command ran"
    );
    term.send(&"\x7f".repeat(10))?;
    term.wait_gone("› also check")?;
    term.quit()
}

#[test]
fn a_background_sub_agent_shows_as_a_pane_and_reports_back() -> TestResult {
    let dir = tempfile::tempdir()?;
    let script = dir.path().join("script.json");
    std::fs::write(
        &script,
        r#"{"turns": [
          {"when": "PARENT", "tool_calls": [{"name": "spawn_agent",
            "arguments": {"prompt": "HELPER: slow work", "background": true}}]},
          {"when": "PARENT", "text": "Started a helper."},
          {"when": "HELPER", "chunks": ["helper ", "result"], "delay_ms": 1000},
          {"when": "[sub-agent a1", "text": "The helper said: helper result."}
        ]}"#,
    )?;
    let model = format!("scripted:{}", script.display());
    let mut term = Terminal::spawn(&["--model", &model], dir.path())?;
    term.wait_for("● idle")?;
    term.send("PARENT: get help\r")?;
    term.wait_for("Started a helper.")?;
    term.wait_for("↳ a1  HELPER: slow work")?;
    term.wait_for("Sub-agent a1 completed: helper result")?;
    term.wait_for("The helper said: helper result.")?;
    term.wait_gone("↳ a1")?;
    term.quit()
}

#[test]
fn without_a_key_the_session_opens_with_the_first_run_panel() -> TestResult {
    let dir = tempfile::tempdir()?;
    let config = dir.path().join("config");
    std::fs::create_dir_all(&config)?;
    std::fs::write(
        config.join("config.toml"),
        "default_model = \"keyed\"\n[models.keyed]\nprovider = \"openai\"\nmodel = \"m\"\n\
         base_url = \"https://api.example.com/v1\"\napi_key_env = \"MNEMO_TEST_NO_SUCH_KEY\"\n",
    )?;
    let mut term = Terminal::spawn(&[], dir.path())?;
    term.wait_for("Set up a model")?;
    term.wait_for("export MNEMO_TEST_NO_SUCH_KEY=")?;
    term.wait_for("mnemo --model ollama")?;
    term.send("/quit\r")?;
    let status = term.wait_exit()?;
    assert!(status.success(), "exit status {status:?}");
    Ok(())
}

#[test]
fn the_pager_of_a_resumed_session_holds_its_archived_messages() -> TestResult {
    let dir = tempfile::tempdir()?;
    let mut db = Db::open(&dir.path().join("data").join("mnemo.db"))?;
    let id = "5e5510b0-0000-4000-8000-000000000036".to_string();
    db.create_session(NewSession {
        id: id.clone(),
        parent_id: None,
        cwd: dir.path().canonicalize()?.display().to_string(),
        model: "scripted".into(),
        title: "Questions".into(),
    })?;
    let messages: Vec<Message> = (0..36)
        .map(|n| match n % 2 {
            0 => Message::user_text(format!("question {}", n / 2)),
            _ => Message::assistant(vec![ContentBlock::Text {
                text: format!("answer {}", n / 2),
            }]),
        })
        .collect();
    let rows: Vec<_> = messages
        .iter()
        .enumerate()
        .map(|(seq, message)| (seq as i64, message, 5))
        .collect();
    db.append_messages(&id, &rows)?;
    db.archive_messages(NewArchiveEntry {
        session_id: id.clone(),
        topic: "the first questions".into(),
        summary: "questions 0 to 14".into(),
        messages: messages[..30].to_vec(),
        token_count: 150,
        importance: 0.5,
        first_seq: 0,
        last_seq: 29,
        started_at: 1,
        ended_at: 2,
    })?;
    drop(db);

    let script = dir.path().join("script.json");
    std::fs::write(&script, r#"{"turns": [{"text": "hi"}]}"#)?;
    let model = format!("scripted:{}", script.display());
    let mut term = Terminal::spawn(&["--model", &model, "--resume", &id[..8]], dir.path())?;
    term.wait_for("30 earlier messages are in the pager (Ctrl+T)")?;
    term.wait_for("› question 17")?;
    term.wait_for("answer 17")?;
    term.wait_for("● idle")?;
    assert!(
        !term.contents().contains("› question 14"),
        "an archived message reached the scrollback:\n{}",
        term.contents()
    );
    // The whole session is read after the prompt is ready: the pager's top shows it.
    term.send("\x14")?;
    term.wait_sending("› question 0", "g")?;
    term.send("q")?;
    term.wait_for("● idle")?;
    term.send("/memory first questions\r")?;
    term.wait_for("Archive entries for “first questions”")?;
    term.wait_for("the first questions")?;
    term.quit()
}
