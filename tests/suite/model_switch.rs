//! `Op::SetModel` over the gateway, as `mnemo attach` sends it: the session goes on with the
//! other model and its history, every client hears the change, and a model that cannot be
//! prepared leaves the old one in place with an error.

use crate::common;
use crate::gateway_support;

use common::{Reply, TestServer, openai_text};
use gateway_support::{Client, serve};
use serde_json::{Value, json};

type TestResult = Result<(), Box<dyn std::error::Error>>;

/// Sends `text` to `session` and returns the events up to the end of its turn.
async fn turn(
    client: &mut Client,
    id: u64,
    session: &str,
    text: &str,
) -> Result<Vec<Value>, Box<dyn std::error::Error>> {
    let mut early = Vec::new();
    let op = json!({"session": session, "op": {"op": "user_input", "text": text}});
    client.request(id, op, &mut early).await?;
    client.until_turn_finished(early).await
}

fn texts(events: &[Value]) -> Vec<&str> {
    events
        .iter()
        .filter(|e| e["event"]["type"] == "assistant_message")
        .filter_map(|e| e["event"]["text"].as_str())
        .collect()
}

/// Events until one of type `kind`, which is returned.
async fn until(client: &mut Client, kind: &str) -> Result<Value, Box<dyn std::error::Error>> {
    loop {
        let event = client.next().await?;
        if event["event"]["type"] == kind {
            return Ok(event["event"].clone());
        }
    }
}

#[tokio::test]
async fn set_model_sends_the_next_request_to_the_new_model_with_the_history() -> TestResult {
    let second = TestServer::start(vec![Reply::sse(&openai_text("from the second model"))]).await?;
    let config = format!(
        "[models.gpt]\nbase_url = \"{}/v1\"\ncontext_window = 64000\n",
        second.base_url
    );
    let served = serve(
        json!({"turns": [{"text": "from the first model"}]}),
        &config,
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
    b.request(
        1,
        json!({"session": session, "op": {"op": "attach"}}),
        &mut Vec::new(),
    )
    .await?;

    let first = turn(&mut a, 2, &session, "remember the word walrus").await?;
    assert_eq!(texts(&first), ["from the first model"]);
    b.until_turn_finished(Vec::new()).await?;

    let op = json!({"session": session, "op": {"op": "set_model", "model": "gpt"}});
    let sent = a.request(3, op, &mut Vec::new()).await?;
    assert_eq!(sent["ok"], "sent", "{sent}");
    let changed = until(&mut b, "model_changed").await?;
    assert_eq!(changed["model"], "gpt");
    assert_eq!(changed["context_window"], 64000);

    let second_turn = turn(&mut a, 4, &session, "which word?").await?;
    assert_eq!(texts(&second_turn), ["from the second model"]);
    let asked = second.only_request().json()?.to_string();
    assert!(asked.contains("remember the word walrus"), "{asked}");
    assert!(asked.contains("from the first model"), "{asked}");
    assert!(asked.contains("which word?"), "{asked}");

    // A client attaching now is told the session runs on the new model.
    let (mut c, _) = Client::connect(&served, Some(&token)).await?;
    let mut replayed = Vec::new();
    c.request(
        1,
        json!({"session": session, "op": {"op": "attach"}}),
        &mut replayed,
    )
    .await?;
    let started = match replayed.first() {
        Some(event) => event.clone(),
        None => c.next().await?,
    };
    assert_eq!(started["event"]["type"], "session_started", "{started}");
    assert_eq!(started["event"]["model"], "gpt", "{started}");
    Ok(())
}

#[tokio::test]
async fn an_unknown_model_is_refused_and_the_session_keeps_its_model() -> TestResult {
    let served = serve(
        json!({"turns": [{"text": "one"}, {"text": "still the first model"}]}),
        "",
    )
    .await?;
    let token = served.token.clone();
    let (mut a, _) = Client::connect(&served, Some(&token)).await?;
    let created = a
        .request(1, json!({"op": {"op": "create_session"}}), &mut Vec::new())
        .await?;
    let session = created["ok"]["session"]
        .as_str()
        .ok_or(format!("{created}"))?
        .to_string();
    turn(&mut a, 2, &session, "hello").await?;

    let op = json!({"session": session, "op": {"op": "set_model", "model": "no-such-model"}});
    a.request(3, op, &mut Vec::new()).await?;
    let error = until(&mut a, "error").await?;
    let message = error["message"].as_str().unwrap_or_default();
    assert!(
        message.contains("Cannot switch to no-such-model"),
        "{message}"
    );
    assert!(message.contains("still using scripted"), "{message}");

    let next = turn(&mut a, 4, &session, "again").await?;
    assert_eq!(texts(&next), ["still the first model"]);
    assert!(!next.iter().any(|e| e["event"]["type"] == "model_changed"));
    Ok(())
}
