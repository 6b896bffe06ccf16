//! The dream through the Anthropic Message Batches API, against an in-test server that speaks
//! it: create, poll (`in_progress`, then `ended`), results as JSON lines; the shared context
//! block carries the cache breakpoint; a batch that never ends is cancelled at the (test-sized)
//! limit and the calls go to `/v1/messages` directly.

use crate::dream_support;

use std::collections::VecDeque;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use dream_support::{add_entries, chain, editor_json};
use mnemo::jobs::Dreamer;
use mnemo::jobs::dream_batch::BatchClient;
use mnemo::llm::ProviderSettings;
use mnemo::llm::anthropic::AnthropicProvider;
use mnemo::memory::Store;
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

type TestResult = Result<(), Box<dyn std::error::Error>>;

const KEY: &str = "sk-ant-test-dream-key";

/// What the server was asked.
#[derive(Debug, Clone)]
struct Seen {
    method: String,
    path: String,
    key: Option<String>,
    body: Value,
}

#[derive(Default)]
struct State {
    seen: Vec<Seen>,
    /// The texts the model answers, in order, whether batched or direct.
    answers: VecDeque<String>,
    /// Each batch's custom id and how often it was polled.
    batches: Vec<(String, usize)>,
}

/// A batch ends after this many polls (`usize::MAX`: never).
struct BatchServer {
    base_url: String,
    state: Arc<Mutex<State>>,
}

impl BatchServer {
    async fn start(answers: &[String], ends_after: usize) -> std::io::Result<Self> {
        let listener = TcpListener::bind("127.0.0.1:0").await?;
        let base_url = format!("http://{}", listener.local_addr()?);
        let state = Arc::new(Mutex::new(State {
            answers: answers.iter().cloned().collect(),
            ..State::default()
        }));
        let (shared, base) = (state.clone(), base_url.clone());
        tokio::spawn(async move {
            while let Ok((socket, _)) = listener.accept().await {
                let (state, base) = (shared.clone(), base.clone());
                tokio::spawn(async move {
                    let _ = serve(socket, &state, &base, ends_after).await;
                });
            }
        });
        Ok(Self { base_url, state })
    }

    fn seen(&self) -> Vec<Seen> {
        self.state
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .seen
            .clone()
    }

    fn settings(&self) -> ProviderSettings {
        ProviderSettings {
            base_url: self.base_url.clone(),
            model: "claude-haiku-4-5".into(),
            api_key: Some(KEY.into()),
            ..ProviderSettings::default()
        }
    }

    fn dreamer(&self, store: Store, dir: &std::path::Path, limit: Duration) -> Dreamer {
        let direct = Arc::new(AnthropicProvider::new(self.settings()));
        Dreamer::new(store, dir.join("memory"), chain(direct))
            .with_batch(BatchClient::new(self.settings(), limit))
    }
}

async fn serve(
    mut socket: TcpStream,
    state: &Mutex<State>,
    base: &str,
    ends_after: usize,
) -> std::io::Result<()> {
    let (method, path, key, body) = read_request(&mut socket).await?;
    let (content_type, reply) = respond(
        state,
        Seen {
            method,
            path,
            key,
            body,
        },
        base,
        ends_after,
    );
    let head = format!(
        "HTTP/1.1 200 OK\r\ncontent-type: {content_type}\r\ncontent-length: {}\r\n\
         connection: close\r\n\r\n",
        reply.len()
    );
    socket.write_all(head.as_bytes()).await?;
    socket.write_all(reply.as_bytes()).await?;
    socket.shutdown().await
}

/// The answer to one request: the content type and the body.
fn respond(
    state: &Mutex<State>,
    seen: Seen,
    base: &str,
    ends_after: usize,
) -> (&'static str, String) {
    let Seen {
        method, path, body, ..
    } = seen.clone();
    let mut state = state.lock().unwrap_or_else(PoisonError::into_inner);
    state.seen.push(seen);
    let batch = |id: usize, status: &str| {
        json!({
            "id": format!("msgbatch_{id}"), "type": "message_batch",
            "processing_status": status,
            "results_url": (status == "ended")
                .then(|| format!("{base}/v1/messages/batches/msgbatch_{id}/results")),
        })
        .to_string()
    };
    let parts: Vec<&str> = path.trim_start_matches("/v1/messages").split('/').collect();
    match (method.as_str(), parts.as_slice()) {
        ("POST", [""]) => {
            let text = state.answers.pop_front().unwrap_or_default();
            ("text/event-stream", sse(&text))
        }
        ("POST", ["", "batches"]) => {
            let custom_id = body["requests"][0]["custom_id"]
                .as_str()
                .unwrap_or("")
                .to_string();
            state.batches.push((custom_id, 0));
            let status = if ends_after == 0 {
                "ended"
            } else {
                "in_progress"
            };
            ("application/json", batch(state.batches.len(), status))
        }
        ("POST", ["", "batches", _, "cancel"]) => ("application/json", "{}".to_string()),
        ("GET", ["", "batches", id, "results"]) => {
            let index = batch_index(id);
            let custom_id = state.batches[index].0.clone();
            let text = state.answers.pop_front().unwrap_or_default();
            let line = json!({"custom_id": custom_id, "result": {"type": "succeeded", "message": {
                "id": "msg_1", "type": "message", "role": "assistant", "model": "claude-haiku-4-5",
                "content": [{"type": "text", "text": text}], "stop_reason": "end_turn",
                "usage": {"input_tokens": 100, "output_tokens": 20, "cache_read_input_tokens": 900}
            }}});
            ("application/x-jsonl", format!("{line}\n"))
        }
        ("GET", ["", "batches", id]) => {
            let index = batch_index(id);
            state.batches[index].1 += 1;
            let ended = state.batches[index].1 >= ends_after;
            let status = if ended { "ended" } else { "in_progress" };
            ("application/json", batch(index + 1, status))
        }
        _ => ("application/json", "{\"error\":\"unexpected\"}".to_string()),
    }
}

fn batch_index(id: &str) -> usize {
    id.trim_start_matches("msgbatch_")
        .parse::<usize>()
        .unwrap_or(1)
        .saturating_sub(1)
}

/// A Messages API stream answering `text`.
fn sse(text: &str) -> String {
    let events = [
        (
            "message_start",
            json!({"type": "message_start", "message": {"id": "msg_d", "type": "message", "role": "assistant", "content": [], "model": "claude-haiku-4-5", "usage": {"input_tokens": 10, "output_tokens": 1}}}),
        ),
        (
            "content_block_start",
            json!({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}),
        ),
        (
            "content_block_delta",
            json!({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": text}}),
        ),
        (
            "content_block_stop",
            json!({"type": "content_block_stop", "index": 0}),
        ),
        (
            "message_delta",
            json!({"type": "message_delta", "delta": {"stop_reason": "end_turn"}, "usage": {"output_tokens": 5}}),
        ),
        ("message_stop", json!({"type": "message_stop"})),
    ];
    events
        .iter()
        .map(|(name, data)| format!("event: {name}\ndata: {data}\n\n"))
        .collect()
}

async fn read_request(
    socket: &mut TcpStream,
) -> std::io::Result<(String, String, Option<String>, Value)> {
    let mut buf = Vec::new();
    let mut chunk = [0u8; 8192];
    let head_end = loop {
        if let Some(pos) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            break pos;
        }
        let n = socket.read(&mut chunk).await?;
        if n == 0 {
            return Err(std::io::ErrorKind::UnexpectedEof.into());
        }
        buf.extend_from_slice(&chunk[..n]);
    };
    let head = String::from_utf8_lossy(&buf[..head_end]).into_owned();
    let mut lines = head.split("\r\n");
    let mut first = lines.next().unwrap_or_default().split(' ');
    let method = first.next().unwrap_or_default().to_string();
    let path = first.next().unwrap_or_default().to_string();
    let headers: Vec<(String, String)> = lines
        .filter_map(|line| line.split_once(':'))
        .map(|(n, v)| (n.trim().to_ascii_lowercase(), v.trim().to_string()))
        .collect();
    let header = |name: &str| {
        headers
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.clone())
    };
    let length: usize = header("content-length")
        .and_then(|v| v.parse().ok())
        .unwrap_or(0);
    let mut body = buf[head_end + 4..].to_vec();
    while body.len() < length {
        let n = socket.read(&mut chunk).await?;
        if n == 0 {
            break;
        }
        body.extend_from_slice(&chunk[..n]);
    }
    let body = serde_json::from_slice(&body).unwrap_or(Value::Null);
    Ok((method, path, header("x-api-key"), body))
}

#[tokio::test]
async fn both_dream_calls_go_through_the_batch_api_sharing_one_cached_block() -> TestResult {
    let dir = tempfile::tempdir()?;
    let store = Store::open_in_memory()?;
    store.call(|db| add_entries(db, "redis", 3)).await?;
    let answers = [
        "Redis moved to port 6380 (entry 2).".to_string(),
        editor_json("- redis on 6380", "- terse"),
    ];
    let server = BatchServer::start(&answers, 1).await?;
    let dreamer = server.dreamer(store.clone(), dir.path(), Duration::from_secs(2));

    let report = dreamer.run().await?;
    assert_eq!((report.batches, report.batched_calls), (1, 2), "{report:?}");
    assert!(report.notices.is_empty(), "{:?}", report.notices);
    let memory = std::fs::read_to_string(dir.path().join("memory/MEMORY.md"))?;
    assert_eq!(memory, "- redis on 6380\n");
    assert_eq!(store.call(|db| db.dream_cursor()).await?, 3);

    let seen = server.seen();
    let route: Vec<(&str, &str)> = seen
        .iter()
        .map(|s| (s.method.as_str(), s.path.as_str()))
        .collect();
    assert_eq!(
        route,
        [
            ("POST", "/v1/messages/batches"),
            ("GET", "/v1/messages/batches/msgbatch_1"),
            ("GET", "/v1/messages/batches/msgbatch_1/results"),
            ("POST", "/v1/messages/batches"),
            ("GET", "/v1/messages/batches/msgbatch_2"),
            ("GET", "/v1/messages/batches/msgbatch_2/results"),
        ]
    );
    assert!(seen.iter().all(|s| s.key.as_deref() == Some(KEY)));
    let analyst = &seen[0].body["requests"][0];
    let editor = &seen[3].body["requests"][0];
    assert_eq!(analyst["custom_id"], "dream-analyst-3");
    assert_eq!(editor["custom_id"], "dream-editor-3-1");
    for request in [analyst, editor] {
        let params = &request["params"];
        assert_eq!(params["model"], "claude-haiku-4-5");
        assert!(
            params.get("stream").is_none(),
            "a batch request cannot stream"
        );
        assert_eq!(params["system"][0]["cache_control"]["type"], "ephemeral");
        assert!(params["system"][1].get("cache_control").is_none());
    }
    // The editor reads the very block the analyst's request cached.
    assert_eq!(
        analyst["params"]["system"][0],
        editor["params"]["system"][0]
    );
    let shared = analyst["params"]["system"][0]["text"]
        .as_str()
        .unwrap_or_default();
    assert!(
        shared.contains("## Entry 3") && shared.contains("redis 2"),
        "{shared}"
    );
    assert!(
        analyst["params"]["system"][1]["text"]
            .as_str()
            .unwrap_or_default()
            .contains("analyst")
    );
    assert!(
        editor["params"]["system"][1]["text"]
            .as_str()
            .unwrap_or_default()
            .contains("editor")
    );
    let message = editor["params"]["messages"][0]["content"][0]["text"]
        .as_str()
        .unwrap_or_default();
    assert!(message.contains("port 6380 (entry 2)"), "{message}");
    Ok(())
}

#[tokio::test]
async fn a_batch_that_never_ends_is_cancelled_and_the_calls_made_directly() -> TestResult {
    let dir = tempfile::tempdir()?;
    let store = Store::open_in_memory()?;
    store.call(|db| add_entries(db, "dns", 2)).await?;
    let answers = [
        "dns analysis".to_string(),
        editor_json("- dns via unbound", ""),
    ];
    let server = BatchServer::start(&answers, usize::MAX).await?;
    let dreamer = server.dreamer(store.clone(), dir.path(), Duration::from_millis(150));

    let report = dreamer.run().await?;
    assert_eq!((report.batches, report.batched_calls), (1, 0), "{report:?}");
    assert_eq!(report.notices.len(), 2, "{:?}", report.notices);
    assert!(report.notices[0].contains("did not end in time"));
    let memory = std::fs::read_to_string(dir.path().join("memory/MEMORY.md"))?;
    assert_eq!(memory, "- dns via unbound\n");

    let seen = server.seen();
    let count = |method: &str, path: &str| {
        seen.iter()
            .filter(|s| s.method == method && s.path == path)
            .count()
    };
    assert_eq!(count("POST", "/v1/messages/batches"), 2);
    assert!(
        count("GET", "/v1/messages/batches/msgbatch_1") >= 2,
        "polled until the limit"
    );
    assert_eq!(count("POST", "/v1/messages/batches/msgbatch_1/cancel"), 1);
    assert_eq!(count("POST", "/v1/messages/batches/msgbatch_2/cancel"), 1);
    assert_eq!(count("POST", "/v1/messages"), 2, "both calls made directly");
    let direct = seen
        .iter()
        .find(|s| s.path == "/v1/messages")
        .ok_or("no direct call")?;
    assert_eq!(direct.body["stream"], true);
    assert_eq!(direct.key.as_deref(), Some(KEY));
    let system = direct.body["system"][0]["text"]
        .as_str()
        .unwrap_or_default();
    assert!(system.contains("## Entry 2") && system.contains("You are the analyst"));
    Ok(())
}
