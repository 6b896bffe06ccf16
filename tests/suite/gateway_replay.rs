//! Reattaching from a sequence number older than the daemon keeps in memory: the journaled
//! events come first, then the kept ones, then live ones, with no gap and no repeat while the
//! session keeps streaming; and after a daemon restart a client goes on from its last
//! sequence number, the numbering continuing.

use crate::gateway_support;

use std::time::Duration;

use gateway_support::{Client, restart, serve};
use mnemo::host::{Attachment, Delivery};
use mnemo::protocol::{Event, Op};
use serde_json::{Value, json};

type TestResult = Result<(), Box<dyn std::error::Error>>;
type AnyResult<T> = Result<T, Box<dyn std::error::Error>>;

/// An event as a client reads it off the wire.
fn as_read(event: &mnemo::protocol::SessionEvent) -> AnyResult<Value> {
    Ok(serde_json::from_str(&serde_json::to_string(event)?)?)
}

/// The events of `attached` until a turn ends, as a client reads them.
async fn turn(attached: &mut Attachment) -> AnyResult<Vec<Value>> {
    let mut seen = Vec::new();
    loop {
        let event = tokio::time::timeout(Duration::from_secs(30), attached.events.recv())
            .await?
            .ok_or("the stream ended")?;
        let done = matches!(event.event, Event::TurnFinished { .. });
        seen.push(as_read(&event)?);
        if done {
            return Ok(seen);
        }
    }
}

async fn create(client: &mut Client) -> AnyResult<String> {
    let created = client
        .request(1, json!({"op": {"op": "create_session"}}), &mut Vec::new())
        .await?;
    let session = created["ok"]["session"]
        .as_str()
        .ok_or(format!("{created}"))?;
    Ok(session.to_string())
}

fn seqs(events: &[Value]) -> Vec<u64> {
    events.iter().filter_map(|e| e["seq"].as_u64()).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn attaching_from_before_the_kept_window_replays_from_the_journal_while_events_arrive()
-> TestResult {
    // More events than the daemon keeps in memory (4,096), then a paced turn that is still
    // streaming while a client reattaches from near the start.
    let many: Vec<String> = (0..5_000).map(|i| format!("w{i} ")).collect();
    let paced: Vec<String> = (0..300).map(|i| format!("p{i} ")).collect();
    let served = serve(
        json!({"turns": [
            {"when": "many", "chunks": many},
            {"when": "paced", "chunks": paced, "delay_ms": 3}
        ]}),
        "",
    )
    .await?;
    let token = served.token.clone();
    let (mut creator, _) = Client::connect(&served, Some(&token)).await?;
    let session = create(&mut creator).await?;
    // The reference: in the daemon's process, attached from the start, waited for.
    let mut reference = served
        .host
        .attach(&session, Delivery::Wait)
        .ok_or("not live")?;
    creator
        .request(
            2,
            json!({"session": session, "op": {"op": "detach"}}),
            &mut Vec::new(),
        )
        .await?;
    reference.ops.send(Op::user_input("many")).await?;
    let mut seen = turn(&mut reference).await?;
    assert!(seen.len() > 5_000, "{}", seen.len());

    reference.ops.send(Op::user_input("paced")).await?;
    // The paced turn has begun streaming when the client reattaches.
    while !seen
        .last()
        .is_some_and(|e| e["event"]["type"] == "text_delta" && e["event"]["text"] == "p5 ")
    {
        let event = tokio::time::timeout(Duration::from_secs(30), reference.events.recv())
            .await?
            .ok_or("the stream ended")?;
        seen.push(as_read(&event)?);
    }
    let (mut late, _) = Client::connect(&served, Some(&token)).await?;
    let mut replayed = Vec::new();
    let attached = late
        .request(
            1,
            json!({"session": session, "op": {"op": "attach", "from_seq": 10}}),
            &mut replayed,
        )
        .await?;
    assert_eq!(attached["ok"]["session"], json!(session), "{attached}");
    seen.extend(turn(&mut reference).await?);
    let end = *seqs(&seen).last().ok_or("no events")?;
    while seqs(&replayed).last() != Some(&end) {
        replayed.push(late.next().await?);
    }

    let after_ten: Vec<Value> = seen
        .into_iter()
        .filter(|e| e["seq"].as_u64() > Some(10))
        .collect();
    assert_eq!(seqs(&replayed), seqs(&after_ten), "no gap and no repeat");
    assert_eq!(replayed, after_ten);
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn after_a_daemon_restart_a_client_goes_on_from_its_last_sequence_number() -> TestResult {
    let script = json!({"turns": [
        {"when": "first", "chunks": ["one ", "two ", "three"]},
        {"when": "second", "chunks": ["four ", "five"]}
    ]});
    let served = serve(script.clone(), "").await?;
    let token = served.token.clone();
    let (mut client, _) = Client::connect(&served, Some(&token)).await?;
    let session = create(&mut client).await?;
    let mut early = Vec::new();
    client
        .request(
            2,
            json!({"session": session, "op": {"op": "user_input", "text": "first"}}),
            &mut early,
        )
        .await?;
    let before = client.until_turn_finished(early).await?;
    let last = *seqs(&before).last().ok_or("no events")?;
    assert_eq!(seqs(&before), (1..=last).collect::<Vec<_>>());

    drop(client);
    let served = restart(served, script).await?;
    let token = served.token.clone();

    // From its last event: only what comes after, numbered on.
    let (mut client, _) = Client::connect(&served, Some(&token)).await?;
    let mut resumed = Vec::new();
    let attached = client
        .request(
            1,
            json!({"session": session, "op": {"op": "attach", "from_seq": last}}),
            &mut resumed,
        )
        .await?;
    assert_eq!(attached["ok"]["session"], json!(session), "{attached}");
    client
        .request(
            2,
            json!({"session": session, "op": {"op": "user_input", "text": "second"}}),
            &mut resumed,
        )
        .await?;
    let resumed = client.until_turn_finished(resumed).await?;
    let numbers = seqs(&resumed);
    let end = last + numbers.len() as u64;
    assert_eq!(numbers, (last + 1..=end).collect::<Vec<_>>());
    assert_eq!(
        resumed[0]["event"]["type"], "session_started",
        "{resumed:#?}"
    );
    assert!(
        resumed
            .iter()
            .any(|e| e["event"]["type"] == "text_delta" && e["event"]["text"] == "five"),
        "{resumed:#?}"
    );

    // From further back: the events the old daemon handed out come from the journal first.
    let (mut another, _) = Client::connect(&served, Some(&token)).await?;
    let mut again = Vec::new();
    another
        .request(
            1,
            json!({"session": session, "op": {"op": "attach", "from_seq": last - 2}}),
            &mut again,
        )
        .await?;
    while seqs(&again).last() != Some(&end) {
        again.push(another.next().await?);
    }
    assert_eq!(again[..2], before[before.len() - 2..]);
    assert_eq!(again[2..], resumed[..]);
    Ok(())
}
