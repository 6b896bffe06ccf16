//! Compaction in a small context window over many steps: one estimate (tool schemas counted)
//! triggers and sizes it, so it leaves the context at half the budget and does not run again
//! for many steps; archive entries hold whole turns; a message bigger than the budget is cut
//! (its whole text archived) rather than left to overflow every request.

use crate::agent_support;

use mnemo::memory::piece_index::Source;
use mnemo::memory::recall::RecallScope;
use std::sync::Arc;

use agent_support::settings;
use mnemo::agent::{AgentHandle, Session};
use mnemo::llm::Price;
use mnemo::llm::fallback::{ChainModel, FallbackChain, RetryPolicy};
use mnemo::llm::scripted::{Script, ScriptedProvider};
use mnemo::llm::{ContentBlock, Role};
use mnemo::memory::Store;
use mnemo::protocol::{CompactionKind, Event, Op, TurnStatus};
use serde_json::{Value, json};

type TestResult = Result<(), Box<dyn std::error::Error>>;

// Small enough that the fixed part (system prompt and the 21 static tool schemas, about 2,800
// tokens) and the kept tail weigh as they do in the smallest windows people use.
const WINDOW: u64 = 17_000;
const MAX_OUTPUT: u32 = 1024;

/// The budget the session computes for the window: less the output and a reserve.
fn budget() -> u64 {
    WINDOW - u64::from(MAX_OUTPUT) - 2000
}

/// A scripted model whose usage reports say its tokenizer counts `factor` times mnemo's own
/// estimate, as real providers' do (the estimate is then corrected by it).
fn scripted_counting(
    name: &str,
    turns: Vec<Value>,
    factor: f64,
) -> Result<ChainModel, serde_json::Error> {
    let script: Script =
        serde_json::from_value(json!({ "turns": turns, "prompt_token_factor": factor }))?;
    Ok(ChainModel {
        name: name.into(),
        provider: Arc::new(ScriptedProvider::new(script)),
        context_window: WINDOW,
        max_output_tokens: MAX_OUTPUT,
        price: Price::default(),
    })
}

fn scripted(name: &str, turns: Vec<Value>) -> Result<ChainModel, serde_json::Error> {
    let script: Script = serde_json::from_value(json!({ "turns": turns }))?;
    Ok(ChainModel {
        name: name.into(),
        provider: Arc::new(ScriptedProvider::new(script)),
        context_window: WINDOW,
        max_output_tokens: MAX_OUTPUT,
        price: Price::default(),
    })
}

/// A session whose model reads `steps` files of about 300 tokens each, one per step, then
/// answers, and counts 1.4 tokens for each one mnemo estimates; the compressor answers with a
/// summary every time it is asked.
async fn reading_session(
    dir: &std::path::Path,
    store: &Store,
    steps: usize,
) -> Result<AgentHandle, Box<dyn std::error::Error>> {
    let mut turns: Vec<Value> = (0..steps)
        .map(|i| {
            std::fs::write(
                dir.join(format!("notes{i}.txt")),
                format!("notes {i}: ").repeat(75),
            )?;
            Ok(json!({"tool_calls": [{"name": "read_file", "arguments": {"path": format!("notes{i}.txt")}}]}))
        })
        .collect::<Result<_, std::io::Error>>()?;
    turns.push(json!({"text": "all notes read"}));
    let summary =
        json!({"text": "{\"goal\": \"read the notes\", \"current_status\": \"reading\"}"});
    let compressor = scripted("compressor", vec![summary; steps])?;
    let chain = Arc::new(FallbackChain::new(
        vec![scripted_counting("model", turns, 1.4)?],
        RetryPolicy::default(),
    ));
    let mut s = settings(dir);
    s.max_steps = u32::try_from(steps)? + 5;
    s.repeat_limit = 1000;
    let mut session = Session::create(
        s,
        chain,
        mnemo::tools::builtin::builtin_tools(),
        store.clone(),
        None,
    )
    .await?;
    session.set_compressor(Some(compressor));
    Ok(mnemo::agent::spawn(session))
}

async fn turn(
    handle: &mut AgentHandle,
    text: &str,
) -> Result<Vec<Event>, Box<dyn std::error::Error>> {
    handle.ops.send(Op::user_input(text)).await?;
    let mut events = Vec::new();
    loop {
        let event = tokio::time::timeout(std::time::Duration::from_secs(60), handle.events.recv())
            .await?
            .ok_or("the agent ended")?;
        let done = matches!(event, Event::TurnFinished { .. });
        events.push(event);
        if done {
            return Ok(events);
        }
    }
}

#[tokio::test]
async fn a_small_window_compacts_rarely_and_to_half_the_budget() -> TestResult {
    let dir = tempfile::tempdir()?;
    let ws = dir.path().canonicalize()?;
    let store = Store::open_in_memory()?;
    // Counted as real sessions count once the tokenizer has loaded, whatever ran before.
    assert!(mnemo::llm::tokens::wait_ready());
    let steps = 80;
    let mut handle = reading_session(&ws, &store, steps).await?;
    let events = turn(&mut handle, "read every notes file").await?;
    assert!(matches!(
        events.last(),
        Some(Event::TurnFinished {
            status: TurnStatus::Completed,
            ..
        })
    ));
    // Which step each compaction happened before, and what it left.
    let mut step = 0;
    let mut compactions: Vec<(usize, u64)> = Vec::new();
    for event in &events {
        match event {
            Event::ToolCallFinished { .. } => step += 1,
            Event::Compacted {
                tokens_after, kind, ..
            } => {
                assert_eq!(*kind, CompactionKind::Model);
                compactions.push((step, *tokens_after));
            }
            _ => {}
        }
    }
    assert!(
        !compactions.is_empty(),
        "a 17k window must compact in {steps} steps"
    );
    for (at, after) in &compactions {
        assert!(
            *after <= budget() / 2,
            "after step {at}: {after} > {}",
            budget() / 2
        );
    }
    for pair in compactions.windows(2) {
        assert!(
            pair[1].0 - pair[0].0 >= 8,
            "compactions thrash: {compactions:?}"
        );
    }
    assert!(compactions.len() <= steps / 8, "{compactions:?}");
    // The context gauge follows a compaction at once (`/compact` too), not the next call.
    for pair in events.windows(2) {
        if let [Event::Compacted { .. }, next] = pair {
            let Event::Usage {
                context_percent, ..
            } = next
            else {
                panic!("no gauge update after a compaction: {next:?}");
            };
            assert!(*context_percent <= 50.0, "{context_percent}");
        }
    }
    Ok(())
}

#[tokio::test]
async fn archive_entries_hold_whole_turns() -> TestResult {
    let dir = tempfile::tempdir()?;
    let ws = dir.path().canonicalize()?;
    let store = Store::open_in_memory()?;
    let mut handle = reading_session(&ws, &store, 6).await?;
    turn(&mut handle, "read the notes").await?;
    let mut s = settings(&ws);
    s.max_active_messages = 6;
    let mut turns = Vec::new();
    for i in 0..8 {
        turns.push(json!({"tool_calls": [{"name": "list_dir", "arguments": {}}]}));
        turns.push(json!({"text": format!("answer {i}")}));
    }
    let chain = Arc::new(FallbackChain::new(
        vec![scripted("model", turns)?],
        RetryPolicy::default(),
    ));
    let session = Session::create(
        s,
        chain,
        mnemo::tools::builtin::builtin_tools(),
        store.clone(),
        None,
    )
    .await?;
    let id = session.id.clone();
    let mut handle = mnemo::agent::spawn(session);
    for i in 0..8 {
        turn(&mut handle, &format!("question {i}")).await?;
    }
    let entries = store
        .call(move |db| {
            let hits = db.recall("answer", None, &RecallScope::everywhere(), 100)?;
            hits.iter()
                .filter(|hit| hit.source == Source::Archive)
                .map(|hit| db.archive_entry(hit.id))
                .collect::<Result<Vec<_>, _>>()
        })
        .await?;
    let ours: Vec<_> = entries
        .iter()
        .filter(|e| e.session_id.as_deref() == Some(id.as_str()))
        .collect();
    assert!(ours.len() >= 2, "{} entries", ours.len());
    for entry in ours {
        let first = entry.messages.first().ok_or("empty entry")?;
        let last = entry.messages.last().ok_or("empty entry")?;
        // The first message of the session stays in the working set, so the first entry
        // continues that turn; every other entry starts with a question.
        if entry.first_seq > 1 {
            assert!(first.text().starts_with("question"), "{:?}", entry.topic);
        }
        assert!(
            last.text().starts_with("answer"),
            "an entry ends mid-turn: {last:?}"
        );
        assert_ne!(entry.topic, "conversation without a user request");
        assert!(!entry.topic.is_empty());
    }
    Ok(())
}

#[tokio::test]
async fn a_message_bigger_than_the_budget_is_cut_and_kept_whole_in_the_archive() -> TestResult {
    let dir = tempfile::tempdir()?;
    let ws = dir.path().canonicalize()?;
    let store = Store::open_in_memory()?;
    let chain = Arc::new(FallbackChain::new(
        vec![scripted("model", vec![json!({"text": "noted"})])?],
        RetryPolicy::default(),
    ));
    let session = Session::create(
        settings(&ws),
        chain,
        mnemo::tools::builtin::builtin_tools(),
        store.clone(),
        None,
    )
    .await?;
    let id = session.id.clone();
    let mut handle = mnemo::agent::spawn(session);
    let paste = format!(
        "Here is the log:\n{}needle-in-the-middle\n{}end of log",
        "line of a very long log output\n".repeat(3000),
        "more log lines after the middle\n".repeat(3000)
    );
    let events = turn(&mut handle, &paste).await?;
    assert!(matches!(
        events.last(),
        Some(Event::TurnFinished {
            status: TurnStatus::Completed,
            ..
        })
    ));
    let (active, hits) = store
        .call(move |db| {
            let active = db.active_messages(&id)?;
            let hits = db.recall("needle", None, &RecallScope::everywhere(), 5)?;
            Ok((active, hits))
        })
        .await?;
    let first = &active[0];
    assert_eq!(first.message.role, Role::User);
    let text = first.message.text();
    assert!(text.starts_with("Here is the log:") && text.ends_with("end of log"));
    assert!(text.contains("too big for the context"), "not cut");
    assert!(!text.contains("needle-in-the-middle"));
    assert!(u64::from(first.tokens) <= budget() / 2, "{}", first.tokens);
    assert_eq!(hits.len(), 1, "the whole text is not in the archive");
    let whole = store.call(move |db| db.archive_entry(hits[0].id)).await?;
    let archived = whole.messages.iter().map(|m| m.text()).collect::<String>();
    assert_eq!(archived, paste);
    let answered = active.iter().any(|m| {
        m.message.role == Role::Assistant
            && m.message
                .content
                .iter()
                .any(|b| matches!(b, ContentBlock::Text { text } if text == "noted"))
    });
    assert!(answered);
    Ok(())
}
