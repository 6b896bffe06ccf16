//! Compaction and the turn report through a real session: a model-written summary replaces
//! the older middle of the conversation, a failing compressor falls back to a mechanical
//! summary, and nothing leaves the store.

use crate::agent_support;

use std::sync::Arc;

use agent_support::{chain, settings};
use mnemo::agent::{AgentHandle, Session};
use mnemo::llm::scripted::{Script, ScriptedProvider};
use mnemo::memory::Store;
use mnemo::protocol::{CompactionKind, Event, Op};
use serde_json::json;

type TestResult = Result<(), Box<dyn std::error::Error>>;

async fn start(
    turns: serde_json::Value,
    store: &Store,
    ws: &std::path::Path,
) -> Result<AgentHandle, Box<dyn std::error::Error>> {
    let script: Script = serde_json::from_value(json!({ "turns": turns }))?;
    let mut tools = mnemo::tools::builtin::builtin_tools();
    tools.register(mnemo::tools::turn_report::TurnReport);
    let session = Session::create(
        settings(ws),
        chain(Arc::new(ScriptedProvider::new(script))),
        tools,
        store.clone(),
        None,
    )
    .await?;
    Ok(mnemo::agent::spawn(session))
}

async fn until(
    handle: &mut AgentHandle,
    done: impl Fn(&Event) -> bool,
) -> Result<Vec<Event>, Box<dyn std::error::Error>> {
    let mut seen = Vec::new();
    while let Some(event) =
        tokio::time::timeout(std::time::Duration::from_secs(20), handle.events.recv()).await?
    {
        let stop = done(&event);
        seen.push(event);
        if stop {
            return Ok(seen);
        }
    }
    Err("agent ended".into())
}

async fn turns(handle: &mut AgentHandle, count: usize) -> TestResult {
    for i in 0..count {
        handle
            .ops
            .send(Op::user_input(format!("step {i} of the refactor")))
            .await?;
        until(handle, |e| matches!(e, Event::TurnFinished { .. })).await?;
    }
    Ok(())
}

async fn finish(mut handle: AgentHandle) -> Result<Session, Box<dyn std::error::Error>> {
    handle.ops.send(Op::Shutdown).await?;
    while handle.events.recv().await.is_some() {}
    Ok(handle.task.await?)
}

#[tokio::test]
async fn compact_replaces_the_middle_with_a_model_summary_and_keeps_the_first_message() -> TestResult
{
    let dir = tempfile::tempdir()?;
    let ws = dir.path().canonicalize()?;
    let store = Store::open(&dir.path().join("db.sqlite"))?;
    let details = "checked the call sites and updated them. ".repeat(20);
    let mut script: Vec<_> = (0..8)
        .map(|i| json!({"text": format!("did step {i}: {details}")}))
        .collect();
    script.push(json!({"text": r#"{"goal": "Refactor the parser", "instruction": "keep the API", "completed": ["steps 0-2"], "current_status": "halfway", "likely_next_work": ["step 8"], "relevant_files": ["src/parser.rs"], "remember": ["The parser tests live in tests/parse.rs"]}"#}));
    script.push(json!({"text": "continuing"}));
    let mut handle = start(json!(script), &store, &ws).await?;
    turns(&mut handle, 8).await?;

    handle.ops.send(Op::Compact).await?;
    let events = until(&mut handle, |e| matches!(e, Event::Compacted { .. })).await?;
    let Some(Event::Compacted {
        tokens_before,
        tokens_after,
        kind,
        archive_id,
    }) = events.last().cloned()
    else {
        return Err("no compaction".into());
    };
    assert_eq!(kind, CompactionKind::Model);
    assert!(
        tokens_after < tokens_before,
        "{tokens_before} -> {tokens_after}"
    );
    turns(&mut handle, 1).await?;
    let session = finish(handle).await?;

    let history = session.history();
    assert_eq!(
        history[0].text(),
        "step 0 of the refactor",
        "the first message stays"
    );
    assert_eq!(
        history.len(),
        1 + 10 + 2,
        "first message, ten recent, the new turn"
    );
    assert!(
        session
            .system_prompt()
            .contains("The parser tests live in tests/parse.rs")
    );

    let id = session.id.clone();
    let (all, entry) = store
        .call(move |db| Ok((db.all_messages(&id)?, db.archive_entry(archive_id)?)))
        .await?;
    assert_eq!(all.len(), 18, "nothing left the store");
    assert!(
        entry.summary.contains("Goal: Refactor the parser"),
        "{}",
        entry.summary
    );
    assert_eq!(entry.messages.len(), 16 - 1 - 10);
    Ok(())
}

#[tokio::test]
async fn a_failing_compressor_falls_back_to_a_mechanical_summary() -> TestResult {
    let dir = tempfile::tempdir()?;
    let ws = dir.path().canonicalize()?;
    let store = Store::open(&dir.path().join("db.sqlite"))?;
    let mut script: Vec<_> = (0..7)
        .map(|i| json!({"text": format!("did step {i}")}))
        .collect();
    script.push(json!({"error": {"kind": "server", "message": "compressor down"}}));
    let mut handle = start(json!(script), &store, &ws).await?;
    turns(&mut handle, 7).await?;
    handle.ops.send(Op::Compact).await?;
    let events = until(&mut handle, |e| matches!(e, Event::Compacted { .. })).await?;
    assert!(matches!(
        events.last(),
        Some(Event::Compacted {
            kind: CompactionKind::Mechanical,
            ..
        })
    ));
    let session = finish(handle).await?;
    assert_eq!(session.history().len(), 11);
    Ok(())
}

#[tokio::test]
async fn a_turn_report_ends_the_turn_and_updates_topic_and_memory() -> TestResult {
    let dir = tempfile::tempdir()?;
    let ws = dir.path().canonicalize()?;
    let store = Store::open(&dir.path().join("db.sqlite"))?;
    let script = json!([
        {"text": "Done: the flag is renamed.", "tool_calls": [{"name": "turn_report", "arguments": {
            "did_success": true, "current_topic": "renaming CLI flags",
            "memory_notes": ["Flags are defined in src/cli.rs"], "should_compress": false}}]},
        {"text": "never used"}
    ]);
    let mut handle = start(script, &store, &ws).await?;
    handle.ops.send(Op::user_input("rename the flag")).await?;
    let events = until(&mut handle, |e| matches!(e, Event::TurnFinished { .. })).await?;
    let answers = events
        .iter()
        .filter(|e| matches!(e, Event::AssistantMessage { .. }))
        .count();
    assert_eq!(answers, 1, "no extra model call after the report");
    let session = finish(handle).await?;
    let (id, project) = (session.id.clone(), ws.display().to_string());
    let (row, experiences) = store
        .call(move |db| Ok((db.session(&id)?, db.experiences(Some(&project))?)))
        .await?;
    assert_eq!(row.subtitle.as_deref(), Some("renaming CLI flags"));
    assert_eq!(experiences[0].text, "Flags are defined in src/cli.rs");
    Ok(())
}
