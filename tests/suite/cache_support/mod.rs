//! An in-test model server that plays a scripted session on the Anthropic or the OpenAI wire
//! and fills each answer's usage the way the real APIs account prompt caching
//! (`sim::CacheSim`), so tests and benches can see what a run of the real binary costs.

// Each test binary uses a different part of this module.
#![allow(dead_code)]

pub mod session;
pub mod sim;

use std::sync::{Arc, Mutex};

use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::task::JoinHandle;

pub use sim::{CacheSim, Usage};

/// Output tokens billed per answer (the answers here are short and alike).
pub const OUTPUT_TOKENS: u64 = 40;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Wire {
    Anthropic,
    OpenAi,
}

/// What the model answers at one step.
#[derive(Debug, Clone)]
pub enum Answer {
    Text(String),
    /// Tool calls: name and arguments.
    Tools(Vec<(String, Value)>),
}

impl Answer {
    pub fn tool(name: &str, input: Value) -> Self {
        Answer::Tools(vec![(name.to_string(), input)])
    }
}

/// One request the server answered, with its accounting.
#[derive(Debug, Clone)]
pub struct Exchange {
    pub body: Value,
    pub usage: Usage,
}

/// The script: the answer to request number `step` (from 0), given its body.
pub type Script = Box<dyn FnMut(usize, &Value) -> Answer + Send>;

struct Shared {
    sim: CacheSim,
    script: Script,
    exchanges: Vec<Exchange>,
}

pub struct CacheServer {
    pub base_url: String,
    wire: Wire,
    shared: Arc<Mutex<Shared>>,
    task: JoinHandle<()>,
}

impl CacheServer {
    pub async fn start(wire: Wire, script: Script) -> std::io::Result<Self> {
        let listener = TcpListener::bind("127.0.0.1:0").await?;
        let base_url = format!("http://{}", listener.local_addr()?);
        let shared = Arc::new(Mutex::new(Shared {
            sim: CacheSim::default(),
            script,
            exchanges: Vec::new(),
        }));
        let state = Arc::clone(&shared);
        let task = tokio::spawn(async move {
            while let Ok((socket, _)) = listener.accept().await {
                let state = Arc::clone(&state);
                tokio::spawn(async move {
                    // A failed exchange shows up as a client error in the test itself.
                    let _ = serve(socket, wire, state).await;
                });
            }
        });
        Ok(Self {
            base_url,
            wire,
            shared,
            task,
        })
    }

    pub fn exchanges(&self) -> Vec<Exchange> {
        self.shared
            .lock()
            .map(|s| s.exchanges.clone())
            .unwrap_or_default()
    }

    /// A provider of this server's wire that talks to it, for a session built in the test.
    pub fn provider(&self) -> Arc<dyn mnemo::llm::Provider> {
        let settings = mnemo::llm::ProviderSettings {
            base_url: match self.wire {
                Wire::Anthropic => self.base_url.clone(),
                Wire::OpenAi => format!("{}/v1", self.base_url),
            },
            model: "m".into(),
            api_key: Some("test-key".into()),
            ..Default::default()
        };
        match self.wire {
            Wire::Anthropic => Arc::new(mnemo::llm::anthropic::AnthropicProvider::new(settings)),
            Wire::OpenAi => Arc::new(mnemo::llm::openai::OpenAiProvider::new(settings)),
        }
    }

    /// The flags that point `mnemo` at this server, its key taken from `LLM_KEY`.
    pub fn flags(&self) -> Vec<String> {
        let (provider, url, model) = match self.wire {
            Wire::Anthropic => ("anthropic", self.base_url.clone(), "claude-sonnet-4-5"),
            Wire::OpenAi => ("openai", format!("{}/v1", self.base_url), "gpt-4.1"),
        };
        [
            "--provider",
            provider,
            "--base-url",
            &url,
            "--model",
            model,
            "--api-key-env",
            "LLM_KEY",
        ]
        .map(str::to_string)
        .to_vec()
    }
}

impl Drop for CacheServer {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// Tokens outside the cache a request may have beyond what it adds: one block (the working
/// checkpoint riding at the end), and on OpenAI one 128-token step of its cache.
pub fn allowance(wire: Wire) -> u64 {
    match wire {
        Wire::Anthropic => 150,
        Wire::OpenAi => 150 + 128,
    }
}

/// Checks that each of `exchanges` after the first (but `skip`, a request after a rewrite
/// such as a compaction) costs only what it adds: what it does not read from the cache is at
/// most its growth over the one before plus the allowance.
pub fn growth_only(wire: Wire, exchanges: &[Exchange], skip: Option<usize>) -> Result<(), String> {
    for (at, pair) in exchanges.windows(2).enumerate() {
        if Some(at + 1) == skip {
            continue;
        }
        let (before, now) = (pair[0].usage, pair[1].usage);
        let grown = now.total().saturating_sub(before.total());
        let fresh = now.write + now.input;
        if fresh > grown + allowance(wire) {
            return Err(format!(
                "{wire:?} request {}: {fresh} tokens not read from the cache for {grown} \
                 added ({now:?}, before: {before:?})",
                at + 1
            ));
        }
    }
    Ok(())
}

/// The totals of a run: input tokens by kind, and dollars at Sonnet prices.
#[derive(Debug, Clone, Copy, Default)]
pub struct Totals {
    pub requests: usize,
    pub usage: Usage,
    pub cost: f64,
}

impl Totals {
    pub fn of(exchanges: &[Exchange]) -> Self {
        let mut totals = Totals::default();
        for exchange in exchanges {
            totals.requests += 1;
            totals.usage.input += exchange.usage.input;
            totals.usage.write += exchange.usage.write;
            totals.usage.read += exchange.usage.read;
            totals.cost += exchange.usage.cost(OUTPUT_TOKENS);
        }
        totals
    }

    /// The share of input tokens read from the cache, 0 to 1.
    pub fn read_share(&self) -> f64 {
        self.usage.read as f64 / self.usage.total().max(1) as f64
    }
}

async fn serve(
    mut socket: TcpStream,
    wire: Wire,
    state: Arc<Mutex<Shared>>,
) -> std::io::Result<()> {
    let body = read_body(&mut socket).await?;
    let body: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
    let (answer, usage) = {
        let mut shared = state
            .lock()
            .map_err(|_| std::io::Error::other("poisoned"))?;
        let step = shared.exchanges.len();
        let answer = (shared.script)(step, &body);
        let usage = match wire {
            Wire::Anthropic => shared.sim.anthropic(&body),
            Wire::OpenAi => shared.sim.openai(&body),
        };
        shared.exchanges.push(Exchange {
            body: body.clone(),
            usage,
        });
        (answer, usage)
    };
    let sse = match wire {
        Wire::Anthropic => anthropic_sse(&answer, usage),
        Wire::OpenAi => openai_sse(&answer, usage),
    };
    let head = format!(
        "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncontent-length: {}\r\n\
         connection: close\r\n\r\n",
        sse.len()
    );
    socket.write_all(head.as_bytes()).await?;
    socket.write_all(sse.as_bytes()).await?;
    socket.shutdown().await
}

/// The body of one HTTP/1.1 request with a content-length.
async fn read_body(socket: &mut TcpStream) -> std::io::Result<Vec<u8>> {
    let mut data = Vec::new();
    let mut buf = [0u8; 16 * 1024];
    loop {
        let n = socket.read(&mut buf).await?;
        if n == 0 {
            return Ok(Vec::new());
        }
        data.extend_from_slice(&buf[..n]);
        let Some(end) = data.windows(4).position(|w| w == b"\r\n\r\n") else {
            continue;
        };
        let head = String::from_utf8_lossy(&data[..end]).to_ascii_lowercase();
        let length: usize = head
            .lines()
            .find_map(|l| l.strip_prefix("content-length:"))
            .and_then(|v| v.trim().parse().ok())
            .unwrap_or(0);
        while data.len() < end + 4 + length {
            let n = socket.read(&mut buf).await?;
            if n == 0 {
                break;
            }
            data.extend_from_slice(&buf[..n]);
        }
        return Ok(data[end + 4..].to_vec());
    }
}

fn event(name: &str, data: Value) -> String {
    format!("event: {name}\ndata: {data}\n\n")
}

fn anthropic_sse(answer: &Answer, usage: Usage) -> String {
    let usage_json = json!({
        "input_tokens": usage.input,
        "cache_creation_input_tokens": usage.write,
        "cache_read_input_tokens": usage.read,
        "output_tokens": OUTPUT_TOKENS,
    });
    let mut sse = event(
        "message_start",
        json!({"type": "message_start", "message": {"id": "msg_1", "type": "message",
            "role": "assistant", "content": [], "model": "claude-sonnet-4-5",
            "stop_reason": null, "usage": usage_json}}),
    );
    let stop = match answer {
        Answer::Text(text) => {
            sse.push_str(&event(
                "content_block_start",
                json!({"type": "content_block_start",
                "index": 0, "content_block": {"type": "text", "text": ""}}),
            ));
            sse.push_str(&event(
                "content_block_delta",
                json!({"type": "content_block_delta",
                "index": 0, "delta": {"type": "text_delta", "text": text}}),
            ));
            sse.push_str(&event(
                "content_block_stop",
                json!({"type": "content_block_stop", "index": 0}),
            ));
            "end_turn"
        }
        Answer::Tools(calls) => {
            for (index, (name, input)) in calls.iter().enumerate() {
                sse.push_str(&event(
                    "content_block_start",
                    json!({"type": "content_block_start",
                    "index": index, "content_block": {"type": "tool_use",
                    "id": format!("toolu_{index}_{name}"), "name": name, "input": {}}}),
                ));
                sse.push_str(&event(
                    "content_block_delta",
                    json!({"type": "content_block_delta",
                    "index": index, "delta": {"type": "input_json_delta",
                    "partial_json": input.to_string()}}),
                ));
                sse.push_str(&event(
                    "content_block_stop",
                    json!({"type": "content_block_stop", "index": index}),
                ));
            }
            "tool_use"
        }
    };
    sse.push_str(&event(
        "message_delta",
        json!({"type": "message_delta", "delta": {"stop_reason": stop}, "usage": usage_json}),
    ));
    sse.push_str(&event("message_stop", json!({"type": "message_stop"})));
    sse
}

fn chunk(delta: Value, finish: Option<&str>) -> String {
    let data = json!({"id": "c1", "object": "chat.completion.chunk",
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]});
    format!("data: {data}\n\n")
}

fn openai_sse(answer: &Answer, usage: Usage) -> String {
    let mut sse = String::new();
    let finish = match answer {
        Answer::Text(text) => {
            sse.push_str(&chunk(json!({"role": "assistant", "content": text}), None));
            "stop"
        }
        Answer::Tools(calls) => {
            for (index, (name, input)) in calls.iter().enumerate() {
                sse.push_str(&chunk(
                    json!({"tool_calls": [{"index": index, "id": format!("call_{index}_{name}"),
                        "type": "function",
                        "function": {"name": name, "arguments": input.to_string()}}]}),
                    None,
                ));
            }
            "tool_calls"
        }
    };
    sse.push_str(&chunk(json!({}), Some(finish)));
    let usage = json!({"id": "c1", "object": "chat.completion.chunk", "choices": [],
        "usage": {"prompt_tokens": usage.total(), "completion_tokens": OUTPUT_TOKENS,
            "prompt_tokens_details": {"cached_tokens": usage.read}}});
    sse.push_str(&format!("data: {usage}\n\ndata: [DONE]\n\n"));
    sse
}
