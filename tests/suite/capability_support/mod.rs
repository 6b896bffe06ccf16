//! Helpers for the capability tests: Anthropic SSE bodies for scripted replies, sessions on a
//! store the test keeps, a front end that drains events (live tool output only counted), and
//! readers of recorded request bodies.

// Each test binary uses a different part of this module.
#![allow(dead_code)]

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use mnemo::agent::{AgentHandle, Session, SessionSettings};
use mnemo::config::Config;
use mnemo::llm::Price;
use mnemo::llm::Provider;
use mnemo::llm::fallback::{ChainModel, FallbackChain, RetryPolicy};
use mnemo::llm::scripted::{Script, ScriptedProvider};
use mnemo::memory::Store;
use mnemo::protocol::{Event, Op, ToolStatus, TurnStatus};
use mnemo::sandbox::{ApprovalMode, Confinement};
use mnemo::tools::Approvals;
use serde_json::{Value, json};

pub type TestResult = Result<(), Box<dyn std::error::Error>>;
pub type Fallible<T> = Result<T, Box<dyn std::error::Error>>;

/// sha256("hello world").
pub const HELLO_SHA256: &str = "b94d27b9934d3e08a52e52d7da7dabfac484efe37a5380ee9088f7ace2efcde9";

/// A python3 capability: `{"text": ...}` on stdin, the hex SHA-256 of the text on stdout.
pub const SHA256_CODE: &str = "import hashlib, json, sys\n\
    args = json.load(sys.stdin)\n\
    print(hashlib.sha256(args[\"text\"].encode()).hexdigest())\n";

/// The arguments of a `capability_create` call saving `sha256-hash`, with an example.
pub fn sha256_create_args() -> Value {
    json!({
        "name": "sha256-hash",
        "description": "Hex SHA-256 digest of a text",
        "input_schema": {
            "type": "object",
            "properties": {"text": {"type": "string"}},
            "required": ["text"]
        },
        "language": "python3",
        "code": SHA256_CODE,
        "tags": ["crypto", "hash"],
        "examples": [{"input": {"text": "hello world"}, "output": HELLO_SHA256}]
    })
}

/// The arguments of a `capability_create` call without examples (nothing runs at creation).
pub fn create_args(name: &str, language: &str, code: &str) -> Value {
    json!({
        "name": name,
        "description": format!("test capability {name}"),
        "input_schema": {"type": "object", "properties": {}},
        "language": language,
        "code": code,
    })
}

fn sse_event(name: &str, data: &Value) -> String {
    format!("event: {name}\ndata: {data}\n\n")
}

fn message_start(id: &str) -> String {
    sse_event(
        "message_start",
        &json!({"type": "message_start", "message": {
            "id": format!("msg_{id}"), "type": "message", "role": "assistant",
            "model": "claude-sonnet-4-5-20250929", "content": [],
            "stop_reason": null, "stop_sequence": null,
            "usage": {"input_tokens": 1200, "cache_creation_input_tokens": 0,
                      "cache_read_input_tokens": 0, "output_tokens": 1,
                      "service_tier": "standard"}}}),
    )
}

fn message_end(stop_reason: &str, output_tokens: u32) -> String {
    let delta = json!({"type": "message_delta",
        "delta": {"stop_reason": stop_reason, "stop_sequence": null},
        "usage": {"output_tokens": output_tokens}});
    sse_event("message_delta", &delta)
        + &sse_event("message_stop", &json!({"type": "message_stop"}))
}

/// An Anthropic stream answering with one tool call, its arguments in two deltas as the
/// service sends them.
pub fn sse_tool_use(id: &str, name: &str, input: &Value) -> String {
    let arguments = input.to_string();
    let mut half = arguments.len() / 2;
    while !arguments.is_char_boundary(half) {
        half += 1;
    }
    let (first, second) = arguments.split_at(half);
    let mut body = message_start(id);
    body += &sse_event(
        "content_block_start",
        &json!({"type": "content_block_start", "index": 0, "content_block": {
            "type": "tool_use", "id": format!("toolu_{id}"), "name": name, "input": {}}}),
    );
    for piece in ["", first, second] {
        body += &sse_event(
            "content_block_delta",
            &json!({"type": "content_block_delta", "index": 0,
                    "delta": {"type": "input_json_delta", "partial_json": piece}}),
        );
    }
    body += &sse_event(
        "content_block_stop",
        &json!({"type": "content_block_stop", "index": 0}),
    );
    body + &message_end("tool_use", 60)
}

/// An Anthropic stream answering with text only.
pub fn sse_text(id: &str, text: &str) -> String {
    let mut body = message_start(id);
    body += &sse_event(
        "content_block_start",
        &json!({"type": "content_block_start", "index": 0,
                "content_block": {"type": "text", "text": ""}}),
    );
    body += &sse_event(
        "content_block_delta",
        &json!({"type": "content_block_delta", "index": 0,
                "delta": {"type": "text_delta", "text": text}}),
    );
    body += &sse_event(
        "content_block_stop",
        &json!({"type": "content_block_stop", "index": 0}),
    );
    body + &message_end("end_turn", 12)
}

/// A chain of one model, retrying without waits.
pub fn chain_of(provider: Arc<dyn Provider>) -> Arc<FallbackChain> {
    let quick = RetryPolicy {
        base_delay: Duration::from_millis(1),
        max_delay: Duration::from_millis(5),
        ..RetryPolicy::default()
    };
    Arc::new(FallbackChain::new(
        vec![ChainModel {
            name: "model".into(),
            provider,
            context_window: 200_000,
            max_output_tokens: 1024,
            price: Price::default(),
        }],
        quick,
    ))
}

/// A chain of the scripted model playing `turns`.
pub fn scripted_chain(turns: Value) -> Fallible<Arc<FallbackChain>> {
    let script: Script = serde_json::from_value(json!({ "turns": turns }))?;
    Ok(chain_of(Arc::new(ScriptedProvider::new(script))))
}

/// The default configuration's approvals (sandboxed, network off) in `mode`, with a front end
/// that answers questions.
pub fn approvals(mode: ApprovalMode) -> Arc<Approvals> {
    let config = Config::default();
    let approvals = Approvals::confined(
        config.sandbox.config(),
        mode,
        Arc::new(Confinement::from_section(&config.sandbox)),
    );
    approvals.enable_questions();
    Arc::new(approvals)
}

/// A running session with a front end that keeps every event but live tool output, of which
/// it only counts the bytes (a capability may print a hundred megabytes).
pub struct Agent {
    pub handle: AgentHandle,
    pub output_bytes: usize,
}

impl Agent {
    /// A new session in `ws` on `store`, with the default configuration changed by `tweak`.
    pub async fn start(
        chain: Arc<FallbackChain>,
        store: &Store,
        ws: &Path,
        tweak: impl FnOnce(&mut SessionSettings),
    ) -> Fallible<Self> {
        let mut settings =
            SessionSettings::from_config(ws.to_path_buf(), "test".into(), &Config::default());
        tweak(&mut settings);
        let tools = mnemo::tools::builtin::builtin_tools();
        let session = Session::create(settings, chain, tools, store.clone(), None).await?;
        Ok(Self::spawn(session))
    }

    /// Runs `session` with this front end.
    pub fn spawn(session: Session) -> Self {
        Self {
            handle: mnemo::agent::spawn(session),
            output_bytes: 0,
        }
    }

    pub async fn send(&self, op: Op) -> TestResult {
        self.handle.ops.send(op).await?;
        Ok(())
    }

    /// Events until one matches `done` (included).
    pub async fn until(&mut self, mut done: impl FnMut(&Event) -> bool) -> Fallible<Vec<Event>> {
        let mut seen = Vec::new();
        loop {
            let next = tokio::time::timeout(Duration::from_secs(120), self.handle.events.recv());
            let event = match next.await {
                Ok(Some(event)) => event,
                Ok(None) => return Err(format!("the agent ended; seen: {seen:#?}").into()),
                Err(_) => return Err(format!("no event for 120 s; seen: {seen:#?}").into()),
            };
            if let Event::ToolOutput { chunk, .. } = &event {
                self.output_bytes += chunk.len();
                continue;
            }
            let stop = done(&event);
            seen.push(event);
            if stop {
                return Ok(seen);
            }
        }
    }

    /// Sends `text` and returns the events of the turn it starts.
    pub async fn turn(&mut self, text: &str) -> Fallible<Vec<Event>> {
        self.send(Op::user_input(text)).await?;
        self.until(|e| matches!(e, Event::TurnFinished { .. }))
            .await
    }

    /// Shuts the agent down and returns its session.
    pub async fn finish(mut self) -> Fallible<Session> {
        self.send(Op::Shutdown).await?;
        while self.handle.events.recv().await.is_some() {}
        Ok(self.handle.task.await?)
    }
}

/// How the turn of `events` ended.
pub fn status(events: &[Event]) -> Option<TurnStatus> {
    events.iter().rev().find_map(|e| match e {
        Event::TurnFinished { status, .. } => Some(*status),
        _ => None,
    })
}

/// Every finished tool call: (tool, status, what the model was told).
pub fn finished(events: &[Event]) -> Vec<(String, ToolStatus, String)> {
    events
        .iter()
        .filter_map(|e| match e {
            Event::ToolCallFinished {
                name,
                status,
                output,
                ..
            } => Some((name.clone(), *status, output.clone())),
            _ => None,
        })
        .collect()
}

/// Every `ToolsChanged`: (added, removed).
pub fn tools_changed(events: &[Event]) -> Vec<(Vec<String>, Vec<String>)> {
    events
        .iter()
        .filter_map(|e| match e {
            Event::ToolsChanged { added, removed } => Some((added.clone(), removed.clone())),
            _ => None,
        })
        .collect()
}

/// The tool names a request body offers, in order.
pub fn tool_names(body: &Value) -> Vec<String> {
    body["tools"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|t| t["name"].as_str().map(String::from))
        .collect()
}

/// The `tools` array of a request body exactly as it was sent. Outside strings (where quotes
/// are escaped) these two markers only occur as the body's own keys.
pub fn raw_tools(body: &[u8]) -> Fallible<&[u8]> {
    let find = |needle: &[u8], from: usize| {
        body[from..]
            .windows(needle.len())
            .position(|w| w == needle)
            .map(|at| at + from)
    };
    let start = find(b",\"tools\":[", 0).ok_or("the request has no tools")? + 9;
    let end = find(b"],\"messages\":[", start).ok_or("no messages after the tools")? + 1;
    Ok(&body[start..end])
}

/// The tool results of the last message of a request body: (content, is_error).
pub fn last_results(body: &Value) -> Vec<(String, bool)> {
    let last = body["messages"].as_array().and_then(|m| m.last());
    last.and_then(|m| m["content"].as_array())
        .into_iter()
        .flatten()
        .filter(|b| b["type"] == "tool_result")
        .map(|b| {
            let content = b["content"].as_str().unwrap_or_default().to_string();
            (content, b["is_error"].as_bool().unwrap_or(false))
        })
        .collect()
}

/// Whether a process whose command line holds `needle` runs (`pgrep -f`).
pub fn running(needle: &str) -> bool {
    std::process::Command::new("pgrep")
        .args(["-f", needle])
        .output()
        .is_ok_and(|out| out.status.success())
}

/// Waits up to `limit` for every process with `needle` on its command line to be gone; a
/// killed process can take a moment to be reaped.
pub async fn gone_within(needle: &str, limit: Duration) -> bool {
    let deadline = tokio::time::Instant::now() + limit;
    while running(needle) {
        if tokio::time::Instant::now() >= deadline {
            return false;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    true
}
