//! `mnemo sessions`, `mnemo memory` and `--resume/--continue` through the real binary.

use std::path::Path;
use std::process::{Command, Output};

use serde_json::json;

type TestResult = Result<(), Box<dyn std::error::Error>>;

fn mnemo(ws: &Path, args: &[&str]) -> Result<Output, std::io::Error> {
    Command::new(env!("CARGO_BIN_EXE_mnemo"))
        .args(args)
        .current_dir(ws)
        .env("MNEMO_CONFIG_DIR", ws.join(".cfg"))
        .env("MNEMO_DATA_DIR", ws.join(".data"))
        .output()
}

fn stdout(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn script(ws: &Path, name: &str, turns: serde_json::Value) -> Result<String, std::io::Error> {
    let path = ws.join(name);
    std::fs::write(&path, json!({ "turns": turns }).to_string())?;
    Ok(format!("scripted:{}", path.display()))
}

#[test]
fn sessions_are_listed_exported_renamed_continued_and_removed() -> TestResult {
    let dir = tempfile::tempdir()?;
    let ws = dir.path();
    let model = script(ws, "one.json", json!([{"text": "The answer is 42."}]))?;
    let out = mnemo(
        ws,
        &[
            "--model",
            &model,
            "run",
            "What is the answer?\nSecond line.",
        ],
    )?;
    assert!(out.status.success());

    let list = stdout(&mnemo(ws, &["sessions"])?);
    assert!(list.contains("What is the answer?"), "{list}");
    assert!(list.contains("    2  "), "message count shown: {list}");
    assert!(
        list.contains(&format!("{model}  ")),
        "the model is not cut: {list}"
    );
    let id = list
        .lines()
        .nth(1)
        .and_then(|l| l.split_whitespace().next())
        .ok_or("no session listed")?
        .to_string();

    let md = stdout(&mnemo(ws, &["sessions", "export", &id, "--format", "md"])?);
    assert!(md.starts_with("# What is the answer?"), "{md}");
    assert!(md.contains("## Assistant\n\nThe answer is 42."), "{md}");
    let exported: serde_json::Value = serde_json::from_str(&stdout(&mnemo(
        ws,
        &["sessions", "export", &id, "--format", "json"],
    )?))?;
    assert_eq!(exported["messages"].as_array().map(Vec::len), Some(2));

    assert!(
        mnemo(ws, &["sessions", "rename", &id, "The big question"])?
            .status
            .success()
    );
    assert!(stdout(&mnemo(ws, &["sessions"])?).contains("The big question"));

    let model = script(ws, "two.json", json!([{"text": "Still 42."}]))?;
    let out = mnemo(
        ws,
        &["--model", &model, "run", "--continue", "Are you sure?"],
    )?;
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(stdout(&out).trim(), "Still 42.");
    assert!(stdout(&mnemo(ws, &["sessions"])?).contains("    4  "));

    let other = tempfile::tempdir()?;
    let everywhere = stdout(&mnemo(
        other.path(),
        &[
            "--db",
            &ws.join(".data/mnemo.db").display().to_string(),
            "sessions",
            "--all",
        ],
    )?);
    assert!(everywhere.contains("The big question"), "{everywhere}");

    assert!(mnemo(ws, &["sessions", "rm", &id])?.status.success());
    assert!(stdout(&mnemo(ws, &["sessions"])?).contains("no sessions yet"));
    let gone = mnemo(ws, &["sessions", "export", &id])?;
    assert_eq!(gone.status.code(), Some(2));
    Ok(())
}

#[test]
fn experiences_are_remembered_listed_deduplicated_and_forgotten() -> TestResult {
    let dir = tempfile::tempdir()?;
    let ws = dir.path();
    assert_eq!(
        stdout(&mnemo(
            ws,
            &["memory", "remember", "Use", "pnpm,", "not", "npm."]
        )?)
        .trim(),
        "remembered as #1"
    );
    assert_eq!(
        stdout(&mnemo(ws, &["memory", "remember", "use pnpm, not npm."])?).trim(),
        "already remembered as #1"
    );
    assert!(
        stdout(&mnemo(
            ws,
            &["memory", "remember", "--global", "Answer in English."]
        )?)
        .contains("#2")
    );
    let list = stdout(&mnemo(ws, &["memory", "list"])?);
    assert!(list.contains("project  Use pnpm, not npm."), "{list}");
    assert!(list.contains("global   Answer in English."), "{list}");
    assert!(mnemo(ws, &["memory", "forget", "1"])?.status.success());
    assert!(!stdout(&mnemo(ws, &["memory", "list"])?).contains("pnpm"));
    assert_eq!(
        mnemo(ws, &["memory", "forget", "1"])?.status.code(),
        Some(2)
    );
    Ok(())
}

#[test]
fn archive_search_never_fails_on_query_syntax() -> TestResult {
    let dir = tempfile::tempdir()?;
    let ws = dir.path();
    for query in [
        "\"unbalanced",
        "foo*",
        "-x",
        "a:b",
        "(x",
        "NEAR(",
        "AND",
        "***",
    ] {
        let out = mnemo(ws, &["memory", "search", query])?;
        assert!(
            out.status.success(),
            "{query}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(stdout(&out).contains("nothing remembered matches"));
    }
    Ok(())
}

#[test]
fn sessions_tree_shows_sub_agent_sessions_under_their_parent() -> TestResult {
    let dir = tempfile::tempdir()?;
    let ws = dir.path();
    let spawn = |prompt: &str| json!({"tool_calls": [{"name": "spawn_agent", "arguments": {"prompt": prompt}}]});
    let when = |key: &str, mut turn: serde_json::Value| {
        turn["when"] = json!(key);
        turn
    };
    let model = script(
        ws,
        "tree.json",
        json!([
            when("TOP", spawn("MIDDLE: ask below")),
            when("MIDDLE", spawn("BOTTOM: answer")),
            when("BOTTOM", json!({"text": "bottom answer"})),
            when("MIDDLE", json!({"text": "middle answer"})),
            when("TOP", json!({"text": "top answer"}))
        ]),
    )?;
    let out = mnemo(ws, &["--model", &model, "run", "TOP: start"])?;
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("⇢ sub-agent a1: MIDDLE: ask below"),
        "{stderr}"
    );
    assert!(
        stderr.contains("⇠ sub-agent a1 completed: middle answer"),
        "{stderr}"
    );

    let flat = stdout(&mnemo(ws, &["sessions"])?);
    assert_eq!(flat.lines().count(), 2, "only the top session: {flat}");
    let tree = stdout(&mnemo(ws, &["sessions", "--tree"])?);
    // The title column starts under its heading, after id, time, count and the whole model.
    let start = tree
        .lines()
        .next()
        .and_then(|h| h.find("TITLE"))
        .ok_or("no header")?;
    let titles: Vec<String> = tree
        .lines()
        .skip(1)
        .map(|line| line.chars().skip(start).collect())
        .collect();
    assert_eq!(
        titles,
        ["TOP: start", "└ MIDDLE: ask below", "  └ BOTTOM: answer"],
        "{tree}"
    );
    Ok(())
}

/// `mnemo status | head -1`: a reader that leaves early is no error. The commands write into a
/// pipe whose reading end is already closed, so their first write fails.
#[test]
fn listings_into_a_closed_pipe_exit_quietly() -> TestResult {
    let dir = tempfile::tempdir()?;
    let ws = dir.path();
    let model = script(ws, "one.json", json!([{"text": "The answer is 42."}]))?;
    assert!(
        mnemo(ws, &["--model", &model, "run", "What is the answer?"])?
            .status
            .success()
    );
    let commands: [&[&str]; 6] = [
        &["status"],
        &["config"],
        &["sessions"],
        &["sessions", "--all"],
        &["mcp", "list"],
        &["memory", "list"],
    ];
    for args in commands {
        let (reader, writer) = std::io::pipe()?;
        drop(reader);
        let out = Command::new(env!("CARGO_BIN_EXE_mnemo"))
            .args(args)
            .current_dir(ws)
            .env("MNEMO_CONFIG_DIR", ws.join(".cfg"))
            .env("MNEMO_DATA_DIR", ws.join(".data"))
            .stdout(writer)
            .stderr(std::process::Stdio::piped())
            .output()?;
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "{args:?}: {:?} {stderr}", out.status);
        assert!(stderr.is_empty(), "{args:?}: {stderr}");
    }
    Ok(())
}
