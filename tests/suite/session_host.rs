//! The session host as front ends meet it: several attached front ends see one numbered
//! stream, a front end that detaches leaves the session running, a remote one that falls
//! behind is detached while the others and the agent go on, and stopping ends the session.

use crate::agent_support;

use std::sync::Arc;
use std::time::Duration;

use agent_support::settings;
use mnemo::agent::Session;
use mnemo::host::{Attachment, Delivery, SessionHost};
use mnemo::llm::scripted::{Script, ScriptedProvider};
use mnemo::memory::Store;
use mnemo::protocol::{Event, Op, SessionEvent};
use serde_json::json;

type TestResult = Result<(), Box<dyn std::error::Error>>;

async fn session(
    script: serde_json::Value,
) -> Result<(Session, tempfile::TempDir), Box<dyn std::error::Error>> {
    let script: Script = serde_json::from_value(script)?;
    let chain = agent_support::chain(Arc::new(ScriptedProvider::new(script)));
    let workspace = tempfile::tempdir()?;
    let root = workspace.path().canonicalize()?;
    let store = Store::open_in_memory()?;
    let session = Session::create(
        settings(&root),
        chain,
        mnemo::tools::builtin::builtin_tools(),
        store,
        None,
    )
    .await?;
    Ok((session, workspace))
}

/// Events until the turn ends (inclusive), within a limit.
async fn turn(attached: &mut Attachment) -> Result<Vec<SessionEvent>, Box<dyn std::error::Error>> {
    let mut seen = Vec::new();
    loop {
        let event = tokio::time::timeout(Duration::from_secs(20), attached.events.recv())
            .await?
            .ok_or("the stream ended")?;
        let done = matches!(event.event, Event::TurnFinished { .. });
        seen.push(event);
        if done {
            return Ok(seen);
        }
    }
}

#[tokio::test]
async fn attached_front_ends_share_one_numbered_stream_and_detaching_leaves_the_session()
-> TestResult {
    let (session, _ws) = session(json!({"turns": [
        {"when": "one", "chunks": ["a", "b", "c"]},
        {"when": "two", "text": "second reply"}
    ]}))
    .await?;
    let host = SessionHost::new();
    let mut first = host.start(session, Delivery::Wait).await;
    let id = first.session.clone();
    let mut second = host
        .attach(&id, Delivery::DropWhenBehind)
        .ok_or("not live")?;
    first.ops.send(Op::user_input("one")).await?;
    let a = turn(&mut first).await?;
    let b = turn(&mut second).await?;
    assert_eq!(a, b, "both front ends see the same events");
    let seqs: Vec<u64> = a.iter().map(|e| e.seq).collect();
    assert_eq!(seqs, (1..=a.len() as u64).collect::<Vec<_>>());
    assert!(a.iter().all(|e| e.session == id));

    // The first front end goes away; the session goes on for the other.
    drop(first);
    assert_eq!(host.live(), vec![id.clone()]);
    second.ops.send(Op::user_input("two")).await?;
    let later = turn(&mut second).await?;
    assert_eq!(later[0].seq, seqs.len() as u64 + 1, "no gap, no repeat");
    assert!(later.iter().any(|e| matches!(&e.event,
        Event::TurnFinished { message: Some(m), .. } if m.contains("second reply"))
        || matches!(&e.event, Event::TextDelta { text } if text.contains("second"))));

    let stopped = host.stop(&id, Duration::from_secs(5)).await;
    assert_eq!(stopped.map(|s| s.id), Some(id.clone()));
    assert!(host.live().is_empty());
    assert!(host.attach(&id, Delivery::Wait).is_none());
    Ok(())
}

#[tokio::test]
async fn a_remote_front_end_that_falls_behind_is_detached_while_the_session_goes_on() -> TestResult
{
    let chunks: Vec<String> = (0..3000).map(|i| format!("w{i} ")).collect();
    let (session, _ws) = session(json!({"turns": [{"chunks": chunks}]})).await?;
    let host = SessionHost::new();
    let mut reader = host.start(session, Delivery::Wait).await;
    let mut slow = host
        .attach(&reader.session, Delivery::DropWhenBehind)
        .ok_or("not live")?;
    reader.ops.send(Op::user_input("go")).await?;
    let all = turn(&mut reader).await?;
    assert!(all.len() > 3000, "{} events", all.len());
    // The slow one got what fitted its queue, in order, and then its stream ended.
    let mut got = Vec::new();
    while let Some(event) = slow.events.recv().await {
        got.push(event.seq);
    }
    assert!(
        !got.is_empty() && got.len() < all.len(),
        "{} of {}",
        got.len(),
        all.len()
    );
    assert_eq!(got, (1..=got.len() as u64).collect::<Vec<_>>());
    host.stop_all(Duration::from_secs(5)).await;
    Ok(())
}
