//! Who gets into the gateway when others misbehave: wrong tokens from one client never keep
//! the owner out, a flood of connections that never send a token costs the flooder its own
//! connections, and a long line before the token is refused.

use crate::gateway_support;

use std::time::Duration;

use gateway_support::{Client, serve};
use serde_json::json;
use tokio::io::AsyncWriteExt;
use tokio::net::UnixStream;

type TestResult = Result<(), Box<dyn std::error::Error>>;

#[tokio::test]
async fn wrong_tokens_cost_only_their_own_connections_and_the_owner_still_gets_in() -> TestResult {
    let served = serve(json!({"turns": []}), "").await?;
    for attempt in 0..20 {
        let (mut wrong, answer) = Client::connect(&served, Some(&format!("{attempt:064}"))).await?;
        assert!(
            answer["error"]
                .as_str()
                .is_some_and(|e| e.contains("wrong token")),
            "{answer}"
        );
        assert!(wrong.lines.next_line().await?.is_none(), "closed");
    }
    let token = served.token.clone();
    let (mut owner, answer) = Client::connect(&served, Some(&token)).await?;
    assert_eq!(answer["ok"], "authenticated", "{answer}");
    let listed = owner
        .request(1, json!({"op": {"op": "list_sessions"}}), &mut Vec::new())
        .await?;
    assert_eq!(listed["ok"]["sessions"], json!([]));
    Ok(())
}

#[tokio::test]
async fn a_flood_of_silent_connections_does_not_keep_the_owner_out() -> TestResult {
    let served = serve(json!({"turns": []}), "").await?;
    let mut flood = Vec::new();
    for _ in 0..300 {
        flood.push(UnixStream::connect(&served.socket).await?);
    }
    let token = served.token.clone();
    let (mut owner, answer) = tokio::time::timeout(
        Duration::from_secs(5),
        Client::connect(&served, Some(&token)),
    )
    .await??;
    assert_eq!(answer["ok"], "authenticated", "{answer}");
    let listed = owner
        .request(1, json!({"op": {"op": "list_sessions"}}), &mut Vec::new())
        .await?;
    assert_eq!(listed["ok"]["sessions"], json!([]));

    // Most of the flood was closed by the gateway, each told why.
    let mut closed = 0;
    for stream in flood {
        let (read, _write) = stream.into_split();
        let mut lines = tokio::io::AsyncBufReadExt::lines(tokio::io::BufReader::new(read));
        let mut said = Vec::new();
        while let Ok(Ok(Some(line))) =
            tokio::time::timeout(Duration::from_millis(50), lines.next_line()).await
        {
            said.push(line);
        }
        if said.iter().any(|l| l.contains("too many connections")) {
            closed += 1;
        }
    }
    assert!(closed >= 300 - 64, "only {closed} of 300 were closed");
    Ok(())
}

#[tokio::test]
async fn a_long_line_before_the_token_is_refused() -> TestResult {
    let served = serve(json!({"turns": []}), "").await?;
    let (mut client, _) = Client::connect(&served, None).await?;
    let long = format!("{{\"token\": \"{}\"}}\n", "a".repeat(4096));
    client.write.write_all(long.as_bytes()).await?;
    let answer = client.next().await?;
    assert!(
        answer["error"]
            .as_str()
            .is_some_and(|e| e.contains("wrong token")),
        "{answer}"
    );
    assert!(client.lines.next_line().await?.is_none(), "closed");
    Ok(())
}

#[tokio::test]
async fn a_session_that_cannot_start_is_answered_and_the_client_goes_on() -> TestResult {
    let served = serve(json!({"turns": []}), "").await?;
    let broken = served.dir.path().join("broken");
    std::fs::create_dir_all(broken.join(".mnemo"))?;
    std::fs::write(
        broken.join(".mnemo/config.toml"),
        "[retry]\nconnect_timeout_secs = inf\n",
    )?;
    let token = served.token.clone();
    let (mut client, _) = Client::connect(&served, Some(&token)).await?;
    let answer = client
        .request(
            1,
            json!({"op": {"op": "create_session", "workspace": broken.display().to_string()}}),
            &mut Vec::new(),
        )
        .await?;
    assert!(answer["error"].is_string(), "{answer}");
    let listed = client
        .request(2, json!({"op": {"op": "list_sessions"}}), &mut Vec::new())
        .await?;
    assert_eq!(listed["ok"]["sessions"], json!([]));
    Ok(())
}
