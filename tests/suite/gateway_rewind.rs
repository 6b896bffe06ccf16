//! Rewind through the protocol over a served gateway: `Op::ListTurns` lists the turn with the
//! file it changed, `Op::Rewind` puts the file back and says so in `Event::Rewound`.

use crate::gateway_support;

use std::sync::Arc;
use std::time::Duration;

use gateway_support::serve;
use mnemo::gateway::client::GatewayClient;
use mnemo::host::api::HostApi;
use mnemo::host::{Attachment, Delivery, OpenOptions, SessionChoice};
use mnemo::protocol::{Event, Op, RewindWhat};
use serde_json::json;

type TestResult = Result<(), Box<dyn std::error::Error>>;

const OPTIONS: OpenOptions = OpenOptions {
    approval_mode: None,
    questions: false,
    delivery: Delivery::Wait,
};

/// The next event `wanted` picks, within a limit.
async fn next<T>(attached: &mut Attachment, wanted: impl Fn(Event) -> Option<T>) -> Option<T> {
    let found = tokio::time::timeout(Duration::from_secs(20), async {
        while let Some(event) = attached.events.recv().await {
            if let Some(found) = wanted(event.event) {
                return Some(found);
            }
        }
        None
    });
    found.await.ok().flatten()
}

#[tokio::test]
async fn a_remote_front_end_lists_turns_and_rewinds_a_file() -> TestResult {
    let served = serve(
        json!({"turns": [
            {"tool_calls": [{"name": "write_file", "arguments": {"path": "notes.txt", "content": "new\n"}}]},
            {"text": "Wrote it."}
        ]}),
        "",
    )
    .await?;
    let notes = served.loaded.workspace.join("notes.txt");
    std::fs::write(&notes, "old\n")?;
    let token = served.dir.path().join("data/gateway-token");
    let remote: Arc<dyn HostApi> =
        Arc::new(GatewayClient::connect_unix(&served.socket, &token).await?);
    let cli = mnemo::config::CliOverrides::default();
    let mut attached = remote
        .open(&served.loaded, &cli, SessionChoice::New, OPTIONS)
        .await?;
    let text = "write the notes".to_string();
    attached.ops.send(Op::user_input(text)).await?;
    let finished = next(&mut attached, |e| {
        matches!(e, Event::TurnFinished { .. }).then_some(())
    });
    assert!(finished.await.is_some(), "the turn finished");
    assert_eq!(std::fs::read_to_string(&notes)?, "new\n");

    attached.ops.send(Op::ListTurns).await?;
    let turns = next(&mut attached, |e| match e {
        Event::Turns { turns } => Some(turns),
        _ => None,
    })
    .await
    .ok_or("no turns listed")?;
    assert_eq!(turns.len(), 1);
    assert_eq!(turns[0].prompt, "write the notes");
    assert_eq!(turns[0].files, vec!["notes.txt"]);

    let (turn, what) = (1, RewindWhat::Files);
    attached.ops.send(Op::Rewind { turn, what }).await?;
    let report = next(&mut attached, |e| match e {
        Event::Rewound { report, .. } => Some(report),
        _ => None,
    })
    .await
    .ok_or("no rewind report")?;
    assert_eq!(report.restored, vec!["notes.txt"]);
    assert_eq!(report.prompt, None, "the conversation stays");
    assert_eq!(std::fs::read_to_string(&notes)?, "old\n");
    Ok(())
}
