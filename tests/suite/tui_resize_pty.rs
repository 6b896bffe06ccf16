//! Resizing while a reply streams: the real binary in a pseudo-terminal, shrunk from 40 to 15
//! rows and from 120 to 80 columns mid-stream. Every line of the stored reply is in the
//! terminal's scrollback and screen exactly once, in order, with no rule or status line
//! left behind in the transcript.

use std::path::Path;
use std::time::Duration;

use mnemo::memory::Db;

use crate::pty_support;

use pty_support::{Terminal, TestResult};

const LINES: usize = 90;

/// A reply of short numbered list items, streamed word by word.
fn script(dir: &Path) -> Result<(String, String), Box<dyn std::error::Error>> {
    let reply: String = (1..=LINES)
        .map(|n| format!("- item {n:02} of the reply with a few words\n"))
        .chain(["\nEND OF REPLY\n".to_string()])
        .collect();
    let chunks: Vec<String> = reply.split_inclusive(' ').map(str::to_string).collect();
    let script = serde_json::json!({"turns": [{"chunks": chunks, "delay_ms": 8}]});
    let path = dir.join("script.json");
    std::fs::write(&path, script.to_string())?;
    Ok((format!("scripted:{}", path.display()), reply))
}

/// The reply's item lines as the terminal holds them, in order.
fn items_shown(rows: &[String]) -> Vec<String> {
    rows.iter()
        .filter_map(|row| row.find("item ").map(|at| row[at..].to_string()))
        .collect()
}

fn stored_reply(dir: &Path) -> Result<String, Box<dyn std::error::Error>> {
    let db = Db::open(&dir.join("data").join("mnemo.db"))?;
    let sessions = db.list_sessions(None, 10)?;
    let session = sessions.first().ok_or("no session was stored")?;
    let messages = db.active_messages(&session.id)?;
    let reply = messages
        .iter()
        .rev()
        .find(|m| m.message.role == mnemo::llm::Role::Assistant)
        .ok_or("no reply was stored")?;
    Ok(reply.message.text())
}

fn resize_during_a_stream(steps: &[(u16, u16)], start: (u16, u16)) -> TestResult {
    let dir = tempfile::tempdir()?;
    let (model, reply) = script(dir.path())?;
    let mut term = Terminal::spawn_sized(&["--model", &model], dir.path(), &[], start)?;
    term.wait_for("● idle")?;
    term.send("list the items\r")?;
    // The screen is full (the live area at its bottom) before the first resize.
    term.wait_for("item 40")?;
    for (n, &(rows, cols)) in steps.iter().enumerate() {
        term.resize(rows, cols)?;
        term.wait_for(&format!("item {:02}", 50 + 10 * n))?;
    }
    term.wait_for("END OF REPLY")?;
    term.wait_for("● idle")?;
    std::thread::sleep(Duration::from_millis(200));
    let rows = term.all_rows();
    term.quit()?;

    let stored = stored_reply(dir.path())?;
    assert_eq!(stored.trim_end(), reply.trim_end());
    let expected: Vec<String> = stored
        .lines()
        .filter_map(|line| line.strip_prefix("- ").map(str::to_string))
        .collect();
    assert_eq!(
        items_shown(&rows),
        expected,
        "the terminal holds:\n{}",
        rows.join("\n")
    );
    // The rule and the status line (" ● streaming …"; a reply's own marker sits in column 0)
    // are drawn once, under the transcript.
    let transcript_end = rows
        .iter()
        .position(|row| row.contains("END OF REPLY"))
        .ok_or("the reply's end is not in the terminal")?;
    let leftovers: Vec<&String> = rows[..transcript_end]
        .iter()
        .filter(|row| row.contains("───") || row.starts_with(" ● ") || row.contains("Ask anything"))
        .collect();
    assert!(
        leftovers.is_empty(),
        "left in the transcript: {leftovers:?}"
    );
    Ok(())
}

#[test]
fn shrinking_from_40_to_15_rows_mid_stream_loses_no_line() -> TestResult {
    resize_during_a_stream(&[(15, 100)], (40, 100))
}

#[test]
fn narrowing_from_120_to_80_columns_mid_stream_loses_no_line() -> TestResult {
    resize_during_a_stream(&[(30, 80)], (30, 120))
}

#[test]
fn growing_and_shrinking_both_ways_mid_stream_loses_no_line() -> TestResult {
    resize_during_a_stream(&[(15, 80), (40, 120), (20, 60)], (40, 120))
}
