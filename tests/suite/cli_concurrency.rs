//! Several `mnemo` processes at once on one database: a second process on a session that is
//! open elsewhere is refused before it sends anything, saying so and keeping the prompt; many
//! processes opening a new database together all get in.

use std::io::Read;
use std::path::Path;
use std::process::{Command, Stdio};

use serde_json::json;

type TestResult = Result<(), Box<dyn std::error::Error>>;

fn mnemo(dir: &Path) -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_mnemo"));
    command
        .current_dir(dir)
        .env("MNEMO_CONFIG_DIR", dir.join("cfg"))
        .env("MNEMO_DATA_DIR", dir.join("data"))
        .stdin(Stdio::null());
    command
}

#[test]
fn a_second_process_on_an_open_session_is_refused_and_keeps_its_prompt() -> TestResult {
    let dir = tempfile::tempdir()?;
    let script = dir.path().join("script.json");
    let words: Vec<String> = (0..60).map(|i| format!("w{i} ")).collect();
    std::fs::write(
        &script,
        json!({"turns": [
            {"when": "hello", "text": "first answer"},
            {"when": "keep going", "chunks": words, "delay_ms": 50},
            {"when": "my important question", "text": "answered"}
        ]})
        .to_string(),
    )?;
    let model = format!("scripted:{}", script.display());
    let first = mnemo(dir.path())
        .args(["--model", &model, "run", "hello"])
        .output()?;
    assert!(first.status.success());

    let mut running = mnemo(dir.path())
        .args(["--model", &model, "run", "--continue", "keep going"])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()?;
    let mut stdout = running.stdout.take().ok_or("no stdout")?;
    let mut seen = [0u8; 8];
    stdout.read_exact(&mut seen)?;

    let second = mnemo(dir.path())
        .args([
            "--model",
            &model,
            "run",
            "--continue",
            "my important question",
        ])
        .output()?;
    let stderr = String::from_utf8_lossy(&second.stderr);
    assert_eq!(second.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains(&format!("is open in mnemo pid {}", running.id())),
        "{stderr}"
    );
    assert!(stderr.contains("mnemo sessions fork"), "{stderr}");
    assert!(stderr.contains("nothing was sent"), "{stderr}");
    assert!(stderr.contains("my important question"), "{stderr}");
    assert!(!stderr.contains("UNIQUE"), "{stderr}");

    let mut rest = String::new();
    stdout.read_to_string(&mut rest)?;
    assert!(running.wait()?.success());
    assert!(
        rest.contains("w59"),
        "the first process was disturbed: {rest}"
    );
    // Once it is closed, the session takes the next prompt.
    let third = mnemo(dir.path())
        .args([
            "--model",
            &model,
            "run",
            "--continue",
            "my important question",
        ])
        .output()?;
    assert!(
        third.status.success(),
        "{}",
        String::from_utf8_lossy(&third.stderr)
    );
    Ok(())
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

#[test]
fn a_killed_holder_is_taken_over_without_losing_a_message_and_a_fork_goes_on_beside_it()
-> TestResult {
    let dir = tempfile::tempdir()?;
    let script = dir.path().join("script.json");
    let words: Vec<String> = (0..400).map(|i| format!("w{i} ")).collect();
    std::fs::write(
        &script,
        json!({"turns": [
            {"when": "hello", "text": "first answer"},
            {"when": "keep going", "chunks": words, "delay_ms": 50},
            {"when": "in the fork", "text": "fork answer"},
            {"when": "after the kill", "text": "taken over"}
        ]})
        .to_string(),
    )?;
    let model = format!("scripted:{}", script.display());
    let first = mnemo(dir.path())
        .args(["--model", &model, "run", "hello"])
        .output()?;
    assert!(first.status.success(), "{}", text(&first.stderr));

    let mut running = mnemo(dir.path())
        .args(["--model", &model, "run", "--continue", "keep going"])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()?;
    let mut stdout = running.stdout.take().ok_or("no stdout")?;
    let mut seen = [0u8; 8];
    stdout.read_exact(&mut seen)?;

    // While it runs: a read-only view and a fork.
    let sessions = text(&mnemo(dir.path()).args(["sessions"]).output()?.stdout);
    let id = sessions
        .split_whitespace()
        .find(|word| word.len() >= 8 && word.chars().all(|c| c.is_ascii_hexdigit() || c == '-'))
        .ok_or(format!("no session id in {sessions}"))?
        .to_string();
    let view = mnemo(dir.path())
        .args(["sessions", "export", &id])
        .output()?;
    assert!(
        text(&view.stdout).contains("keep going"),
        "{}",
        text(&view.stderr)
    );
    let fork = mnemo(dir.path()).args(["sessions", "fork", &id]).output()?;
    let forked = text(&fork.stdout);
    assert!(fork.status.success(), "{}", text(&fork.stderr));
    let fork_id = forked
        .split_whitespace()
        .nth(3)
        .ok_or(format!("no id in {forked}"))?
        .trim_end_matches(['(', ' '])
        .to_string();
    let in_fork = mnemo(dir.path())
        .args([
            "--model",
            &model,
            "run",
            "--resume",
            &fork_id,
            "in the fork",
        ])
        .output()?;
    assert!(in_fork.status.success(), "{}", text(&in_fork.stderr));
    let fork_view = text(
        &mnemo(dir.path())
            .args(["sessions", "export", &fork_id])
            .output()?
            .stdout,
    );
    assert!(
        fork_view.contains("first answer") && fork_view.contains("fork answer"),
        "{fork_view}"
    );

    running.kill()?;
    running.wait()?;
    let after = mnemo(dir.path())
        .args(["--model", &model, "run", "--resume", &id, "after the kill"])
        .output()?;
    assert!(after.status.success(), "{}", text(&after.stderr));
    assert!(text(&after.stdout).contains("taken over"));
    let whole = text(
        &mnemo(dir.path())
            .args(["sessions", "export", &id])
            .output()?
            .stdout,
    );
    for said in [
        "hello",
        "first answer",
        "keep going",
        "after the kill",
        "taken over",
    ] {
        assert!(whole.contains(said), "`{said}` lost: {whole}");
    }
    assert!(
        !whole.contains("fork answer"),
        "the fork stays apart: {whole}"
    );
    Ok(())
}

#[test]
fn processes_opening_a_new_database_together_all_get_in() -> TestResult {
    let dir = tempfile::tempdir()?;
    let children = (0..12)
        .map(|_| {
            mnemo(dir.path())
                .args(["sessions"])
                .stdout(Stdio::null())
                .stderr(Stdio::piped())
                .spawn()
        })
        .collect::<Result<Vec<_>, _>>()?;
    for child in children {
        let out = child.wait_with_output()?;
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    Ok(())
}
