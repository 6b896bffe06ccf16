//! Bad capabilities are refused with a message the model can act on, and nothing else breaks:
//! an invalid schema, a name taken by a built-in tool, a script that fails, prints malformed
//! JSON, outlives the tool timeout (its background child killed with it) or prints a hundred
//! megabytes. Each time the session goes on to its next turn, the store holds no capability and
//! the conversation stored before is intact. A result is never cut silently: up to the byte
//! limit it arrives whole, past it the call is an error.
#![cfg(target_os = "linux")]

#[path = "suite/capability_support/mod.rs"]
mod capability_support;

use std::time::{Duration, Instant};

use capability_support::{
    Agent, Fallible, TestResult, create_args, finished, gone_within, running, scripted_chain,
    status,
};
use mnemo::memory::Store;
use mnemo::protocol::{ToolStatus, TurnStatus};
use serde_json::{Value, json};

/// `capability_create` arguments whose first example runs `code` (bash).
fn with_example(name: &str, code: &str) -> Value {
    let mut args = create_args(name, "bash", code);
    args["examples"] = json!([{"input": {}}]);
    args
}

/// A session that chats once, calls `capability_create` with `args` (which must be refused),
/// then has another turn. Checks that the session went on and the store holds no capability
/// and every message; returns what the model was told, and how long the call took.
async fn refused(args: Value, timeout: Duration) -> Fallible<(String, Duration)> {
    let dir = tempfile::tempdir()?;
    let ws = dir.path().canonicalize()?.join("ws");
    std::fs::create_dir(&ws)?;
    let store = Store::open(&dir.path().join("mnemo.db"))?;
    let turns = json!([
        {"text": "Hi, what should I do?"},
        {"tool_calls": [{"name": "capability_create", "arguments": args}]},
        {"text": "That did not work; I will do it by hand."},
        {"text": "Going on with the next step."}
    ]);
    let mut agent = Agent::start(scripted_chain(turns)?, &store, &ws, |settings| {
        settings.tool_timeout = timeout;
    })
    .await?;
    let first = agent.turn("hello").await?;
    assert_eq!(status(&first), Some(TurnStatus::Completed));

    let started = Instant::now();
    let events = agent.turn("save a tool for this").await?;
    let took = started.elapsed();
    assert_eq!(status(&events), Some(TurnStatus::Completed));
    let calls = finished(&events);
    assert_eq!(calls.len(), 1, "{calls:#?}");
    let (tool, outcome, message) = calls[0].clone();
    assert_eq!(
        (tool.as_str(), outcome),
        ("capability_create", ToolStatus::Error)
    );

    let next = agent.turn("next step please").await?;
    assert_eq!(status(&next), Some(TurnStatus::Completed));
    let session = agent.finish().await?;

    let id = session.id.clone();
    let (capabilities, messages) = store
        .call(move |db| Ok((db.capability_count()?, db.all_messages(&id)?)))
        .await?;
    assert_eq!(capabilities, 0, "a refused capability was stored");
    let texts: Vec<String> = messages.iter().map(|m| m.message.text()).collect();
    assert_eq!(messages.len(), 8, "{texts:#?}");
    assert_eq!(texts[0], "hello");
    assert_eq!(texts[1], "Hi, what should I do?");
    assert_eq!(texts[2], "save a tool for this");
    assert_eq!(texts[7], "Going on with the next step.");
    assert!(
        session.history().len() == messages.len(),
        "the working set lost messages"
    );
    Ok((message, took))
}

#[tokio::test]
async fn an_input_schema_that_is_not_an_object_is_refused() -> TestResult {
    let mut args = create_args("word-count", "bash", "wc -w");
    args["input_schema"] = json!({"type": "string"});
    let (message, _) = refused(args, Duration::from_secs(30)).await?;
    assert!(
        message.contains("invalid arguments for capability_create"),
        "{message}"
    );
    assert!(message.contains("\"type\": \"object\""), "{message}");
    Ok(())
}

#[tokio::test]
async fn a_name_taken_by_a_built_in_tool_is_refused() -> TestResult {
    let args = create_args("shell", "bash", "echo hi");
    let (message, _) = refused(args, Duration::from_secs(30)).await?;
    assert!(
        message.contains("clashes with the built-in tool `shell`"),
        "{message}"
    );
    Ok(())
}

#[tokio::test]
async fn a_script_that_fails_its_example_is_refused_with_exit_code_and_stderr() -> TestResult {
    let code = "echo 'cannot parse the input' >&2; exit 3";
    let (message, _) = refused(with_example("parse-it", code), Duration::from_secs(30)).await?;
    assert!(
        message.contains("`parse-it` was not saved: its first example failed"),
        "{message}"
    );
    assert!(message.contains("exit code 3"), "{message}");
    assert!(message.contains("cannot parse the input"), "{message}");
    Ok(())
}

#[tokio::test]
async fn a_script_that_prints_malformed_json_is_refused() -> TestResult {
    let code = r#"echo '{"digest": "abc", '"#;
    let (message, _) = refused(with_example("half-json", code), Duration::from_secs(30)).await?;
    assert!(message.contains("malformed JSON"), "{message}");
    assert!(message.contains(r#"{"digest": "abc","#), "{message}");
    Ok(())
}

#[tokio::test]
async fn a_script_past_the_timeout_is_killed_with_its_background_child() -> TestResult {
    // Durations no other process uses, to find these sleeps on the host.
    let pid = std::process::id();
    let (child, foreground) = (format!("sleep 100.{pid}"), format!("sleep 101.{pid}"));
    let code = format!("{child} & echo 'child started' >&2; {foreground}; echo '{{}}'");
    let timeout = Duration::from_secs(2);
    let (message, took) = refused(with_example("slow-one", &code), timeout).await?;
    assert!(message.contains("was not saved"), "{message}");
    assert!(message.contains("timed out after 2 s"), "{message}");
    assert!(message.contains("child started"), "{message}");
    assert!(took < Duration::from_secs(30), "{took:?}");
    for sleeper in [&child, &foreground] {
        assert!(
            gone_within(sleeper, Duration::from_secs(5)).await,
            "`{sleeper}` outlived the capability"
        );
    }
    assert!(!running(&child));
    Ok(())
}

#[tokio::test]
async fn a_script_printing_a_hundred_megabytes_is_refused_with_the_byte_count() -> TestResult {
    let code = "head -c 100000000 /dev/zero | tr '\\0' x";
    let timeout = Duration::from_secs(90);
    let (message, took) = refused(with_example("flood", code), timeout).await?;
    assert!(message.contains("printed 100000000 bytes"), "{message}");
    assert!(
        message.len() < 4096,
        "the error is short: {} bytes",
        message.len()
    );
    assert!(took < timeout, "{took:?}");
    // Only head and tail of the output are kept: this process never held the hundred megabytes.
    let peak = peak_rss_kib()?;
    assert!(peak < 100_000, "peak resident memory {peak} KiB");
    Ok(())
}

/// This process's peak resident memory.
fn peak_rss_kib() -> Fallible<u64> {
    let status = std::fs::read_to_string("/proc/self/status")?;
    let line = status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .ok_or("no VmHWM")?;
    Ok(line.trim().trim_end_matches("kB").trim().parse()?)
}

/// What the model is told for a call of a capability printing `size` bytes of `x`.
async fn call_printing(size: usize) -> Fallible<(ToolStatus, String)> {
    let dir = tempfile::tempdir()?;
    let ws = dir.path().canonicalize()?;
    let store = Store::open_in_memory()?;
    let code = format!("head -c {size} /dev/zero | tr '\\0' x");
    let create = create_args("many-x", "bash", &code);
    let turns = json!([
        {"tool_calls": [{"name": "capability_create", "arguments": create}]},
        {"tool_calls": [{"name": "cap_many_x", "arguments": {}}]},
        {"text": "done"}
    ]);
    let mut agent = Agent::start(scripted_chain(turns)?, &store, &ws, |_| {}).await?;
    let events = agent.turn("print a lot").await?;
    agent.finish().await?;
    let (tool, outcome, output) = finished(&events).pop().ok_or("no call")?;
    assert_eq!(tool, "cap_many_x");
    Ok((outcome, output))
}

#[tokio::test]
async fn a_result_at_the_byte_limit_arrives_whole_and_one_byte_more_is_refused() -> TestResult {
    let limit = mnemo::tools::capability_run::MAX_RESULT_BYTES;
    let (outcome, output) = call_printing(limit).await?;
    assert_eq!(outcome, ToolStatus::Ok);
    // Whole: not cut in the middle with a note.
    assert_eq!(output.len(), limit, "{}", output.replace("xxxxxxxx", ""));
    let (outcome, output) = call_printing(limit + 1).await?;
    assert_eq!(outcome, ToolStatus::Error);
    assert!(
        output.contains(&format!("printed {} bytes", limit + 1)),
        "{output}"
    );
    Ok(())
}
