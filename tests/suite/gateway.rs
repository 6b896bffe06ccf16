//! The gateway as programs meet it, over a real Unix socket: the token, two clients on one
//! session seeing the same stream, an approval answered by one and seen resolved by the
//! other, reattaching from a sequence number, bad lines, and a slow client detached with a
//! lag notice while the others go on, which then goes on from its last event.

use crate::gateway_support;

use std::sync::Arc;

use gateway_support::{Client, serve};
use mnemo::config::{CliOverrides, Dirs};
use mnemo::gateway::{self, Listen};
use mnemo::host::SessionHost;
use serde_json::json;
use tokio_util::sync::CancellationToken;

type TestResult = Result<(), Box<dyn std::error::Error>>;

#[tokio::test]
async fn only_the_token_lets_a_client_in_and_the_token_file_is_private() -> TestResult {
    let mut served = serve(json!({"turns": []}), "").await?;
    let path = served.dir.path().join("data/gateway-token");
    use std::os::unix::fs::PermissionsExt;
    assert_eq!(
        std::fs::metadata(&path)?.permissions().mode() & 0o777,
        0o600
    );
    assert_eq!(
        std::fs::metadata(&served.socket)?.permissions().mode() & 0o777,
        0o600
    );
    assert_eq!(served.token.len(), 64);

    let (mut wrong, answer) = Client::connect(&served, Some("0000")).await?;
    assert!(
        answer["error"]
            .as_str()
            .is_some_and(|e| e.contains("wrong token")),
        "{answer}"
    );
    assert!(
        wrong.lines.next_line().await?.is_none(),
        "closed after one error line"
    );
    let (mut missing, _) = Client::connect(&served, None).await?;
    missing
        .send_raw(r#"{"id": 1, "op": {"op": "list_sessions"}}"#)
        .await?;
    let answer = missing.next().await?;
    assert!(
        answer["error"]
            .as_str()
            .is_some_and(|e| e.contains("token")),
        "{answer}"
    );

    let token = served.token.clone();
    let (mut right, answer) = Client::connect(&served, Some(&token)).await?;
    assert_eq!(answer["ok"], "authenticated");
    let listed = right
        .request(1, json!({"op": {"op": "list_sessions"}}), &mut Vec::new())
        .await?;
    assert_eq!(listed["ok"]["sessions"], json!([]));

    served.cancel.cancel();
    served.running.take();
    assert!(!path.exists(), "the token file is removed at shutdown");
    assert!(!served.socket.exists());
    Ok(())
}

#[tokio::test]
async fn a_listener_off_the_loopback_needs_tls() -> TestResult {
    let dir = tempfile::tempdir()?;
    let dirs = Dirs {
        config: Some(dir.path().join("cfg")),
        data: Some(dir.path().join("data")),
    };
    let loaded = mnemo::host::load_config_from(&dirs, dir.path(), &CliOverrides::default())?;
    let listen: Listen = "0.0.0.0:0".parse()?;
    let refused = gateway::start(
        SessionHost::new(),
        Arc::new(loaded),
        CliOverrides::default(),
        &gateway::GatewayOptions {
            listen: vec![listen],
            tls: None,
            jobs_changed: None,
            searcher: None,
            telegram_paired: None,
        },
        CancellationToken::new(),
    )
    .await;
    let message = refused.err().map(|e| e.to_string()).unwrap_or_default();
    assert!(message.contains("without TLS"), "{message}");
    assert!("unix:".parse::<Listen>().is_err() && "nonsense".parse::<Listen>().is_err());
    Ok(())
}

#[tokio::test]
async fn two_clients_share_a_session_an_approval_and_a_reconnect_misses_nothing() -> TestResult {
    let served = serve(
        json!({"turns": [
            {"when": "first", "chunks": ["one ", "two ", "three"]},
            {"when": "write it", "tool_calls": [{"name": "write_file",
                "arguments": {"path": "a.txt", "content": "a"}}]},
            {"text": "written"}
        ]}),
        "approval = \"ask\"\n",
    )
    .await?;
    let token = served.token.clone();
    let (mut a, _) = Client::connect(&served, Some(&token)).await?;
    let (mut b, _) = Client::connect(&served, Some(&token)).await?;
    let created = a
        .request(1, json!({"op": {"op": "create_session"}}), &mut Vec::new())
        .await?;
    let session = created["ok"]["session"]
        .as_str()
        .ok_or(format!("{created}"))?
        .to_string();
    let attached = b
        .request(
            1,
            json!({"session": session, "op": {"op": "attach"}}),
            &mut Vec::new(),
        )
        .await?;
    assert_eq!(attached["ok"]["session"], json!(session));

    let mut early = Vec::new();
    let sent = a
        .request(
            2,
            json!({"session": session, "op": {"op": "user_input", "text": "first"}}),
            &mut early,
        )
        .await?;
    assert_eq!(sent["ok"], "sent");
    let from_a = a.until_turn_finished(early).await?;
    let from_b = b.until_turn_finished(Vec::new()).await?;
    // B attached after the session started: it was told how the session started (seq 0,
    // outside the stream), then got the same events from there on, once, in order.
    assert_eq!(from_b[0]["seq"], json!(0));
    assert_eq!(from_b[0]["event"], from_a[0]["event"]);
    assert_eq!(from_a[1..], from_b[1..], "{from_b:#?}");
    let seqs: Vec<u64> = from_a.iter().filter_map(|e| e["seq"].as_u64()).collect();
    assert_eq!(seqs, (1..=seqs.len() as u64).collect::<Vec<_>>());

    // A third client reconnects from the middle: exactly the events after it.
    let middle = seqs[seqs.len() / 2];
    let (mut c, _) = Client::connect(&served, Some(&token)).await?;
    let mut replayed = Vec::new();
    c.request(
        1,
        json!({"session": session, "op": {"op": "attach", "from_seq": middle}}),
        &mut replayed,
    )
    .await?;
    let replayed = c.until_turn_finished(replayed).await?;
    assert_eq!(replayed[..], from_a[seqs.len() / 2 + 1..]);

    // An approval goes to every client; the first answer wins, the other sees it resolved.
    let mut early = Vec::new();
    a.request(
        3,
        json!({"session": session, "op": {"op": "user_input", "text": "write it"}}),
        &mut early,
    )
    .await?;
    let mut asked = None;
    while asked.is_none() {
        let event = match early.pop() {
            Some(event) => event,
            None => a.next().await?,
        };
        if event["event"]["type"] == "approval_requested" {
            asked = event["event"]["id"].as_str().map(str::to_string);
        }
    }
    let asked = asked.ok_or("no approval")?;
    let mut on_b = Vec::new();
    let answer = json!({"session": session, "op": {"op": "approval", "id": asked, "decision": "allow_once"}});
    let replied = b.request(7, answer, &mut on_b).await?;
    assert_eq!(replied["ok"], "sent", "{replied}");
    let on_a = a.until_turn_finished(Vec::new()).await?;
    assert!(
        on_a.iter()
            .any(|e| e["event"]["type"] == "approval_resolved"),
        "{on_a:#?}"
    );
    assert!(std::fs::read_to_string(served.dir.path().join("ws/a.txt"))? == "a");
    Ok(())
}

#[tokio::test]
async fn bad_lines_get_error_replies_and_the_connection_stays_usable() -> TestResult {
    let served = serve(json!({"turns": []}), "").await?;
    let token = served.token.clone();
    let (mut client, _) = Client::connect(&served, Some(&token)).await?;
    client.send_raw("{this is not json").await?;
    assert!(
        client.next().await?["error"]
            .as_str()
            .is_some_and(|e| e.contains("JSON"))
    );
    client.send_raw(&"x".repeat(2 * 1024 * 1024)).await?;
    assert!(
        client.next().await?["error"]
            .as_str()
            .is_some_and(|e| e.contains("longer"))
    );
    let unknown_op = client
        .request(5, json!({"op": {"op": "launch_missiles"}}), &mut Vec::new())
        .await?;
    assert!(
        unknown_op["error"]
            .as_str()
            .is_some_and(|e| e.contains("unknown"))
    );
    let unknown_session = client
        .request(
            6,
            json!({"session": "nope", "op": {"op": "interrupt"}}),
            &mut Vec::new(),
        )
        .await?;
    assert!(
        unknown_session["error"]
            .as_str()
            .is_some_and(|e| e.contains("unknown session"))
    );
    let listed = client
        .request(7, json!({"op": {"op": "list_sessions"}}), &mut Vec::new())
        .await?;
    assert_eq!(listed["ok"]["sessions"], json!([]));
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_slow_client_is_told_it_lagged_disconnected_and_goes_on_from_its_last_event() -> TestResult
{
    // Big events, paced, so the reading client keeps up and the other's buffers fill.
    let chunks: Vec<String> = (0..4_000)
        .map(|i| format!("{i:>6} {}", "x".repeat(1000)))
        .collect();
    let served = serve(json!({"turns": [{"chunks": chunks, "delay_ms": 1}]}), "").await?;
    let token = served.token.clone();
    let (mut fast, _) = Client::connect(&served, Some(&token)).await?;
    let (mut slow, _) = Client::connect(&served, Some(&token)).await?;
    let created = fast
        .request(1, json!({"op": {"op": "create_session"}}), &mut Vec::new())
        .await?;
    let session = created["ok"]["session"]
        .as_str()
        .ok_or("no session")?
        .to_string();
    slow.request(
        1,
        json!({"session": session, "op": {"op": "attach"}}),
        &mut Vec::new(),
    )
    .await?;
    let mut early = Vec::new();
    fast.request(
        2,
        json!({"session": session, "op": {"op": "user_input", "text": "go"}}),
        &mut early,
    )
    .await?;
    let all = fast.until_turn_finished(early).await?;
    assert!(all.len() > 4_000, "{}", all.len());

    // Only now does the slow one read: what fitted, in order, then the notice, then the end.
    let mut last_seq = None;
    let notice = loop {
        let line = slow.next().await?;
        if line.get("lagged_after_seq").is_some() {
            break line;
        }
        let seq = line["seq"].as_u64().ok_or(format!("{line}"))?;
        if seq == 0 {
            continue;
        }
        assert!(
            last_seq.is_none_or(|last| seq == last + 1),
            "{seq} after {last_seq:?}"
        );
        last_seq = Some(seq);
    };
    let last_seq = last_seq.ok_or("nothing before the notice")?;
    assert_eq!(notice["lagged_after_seq"], json!(last_seq));
    assert!((last_seq as usize) < all.len());
    assert!(
        slow.lines.next_line().await?.is_none(),
        "disconnected after the notice"
    );

    // It reconnects and goes on from its last event: the rest, exactly.
    let (mut again, _) = Client::connect(&served, Some(&token)).await?;
    let mut rest = Vec::new();
    again
        .request(
            1,
            json!({"session": session, "op": {"op": "attach", "from_seq": last_seq}}),
            &mut rest,
        )
        .await?;
    let rest = again.until_turn_finished(rest).await?;
    let expected: Vec<_> = all
        .iter()
        .filter(|e| e["seq"].as_u64() > Some(last_seq))
        .collect();
    assert_eq!(rest.iter().collect::<Vec<_>>(), expected);
    Ok(())
}
