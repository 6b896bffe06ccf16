//! A deterministic provider that replays a script of turns, for tests and demos
//! (`mnemo --model scripted:path/to/script.json`). Each model call takes the next turn; a turn
//! with `when` is kept for a call whose latest user text contains it, so that concurrent
//! sessions (sub-agents) on one script each get their own answers.

use std::path::Path;
use std::sync::{Mutex, PoisonError};
use std::time::Duration;

use futures_util::future::BoxFuture;
use serde::Deserialize;
use serde_json::Value;

use super::{
    ContentBlock, EventStream, Message, ModelRequest, ModelResponse, Provider, ProviderError, Role,
    StopReason, StreamEvent, Usage, tool_input,
};

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Script {
    pub turns: Vec<ScriptTurn>,
    /// Reports the prompt of each request as this many times mnemo's own estimate of it, as a
    /// provider whose tokenizer counts differently would (turns without `usage` only).
    #[serde(default)]
    pub prompt_token_factor: Option<f64>,
}

/// One model response. Text comes from `chunks` (or `text`, split after each word), each
/// chunk `delay_ms` after the previous one; then the tool calls; an `error` fails the call,
/// after the chunks when there are any (a stream that breaks mid-response).
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ScriptTurn {
    /// Only for a request whose latest user text contains this.
    pub when: Option<String>,
    pub reasoning: Option<String>,
    pub text: Option<String>,
    pub chunks: Vec<String>,
    pub delay_ms: u64,
    pub tool_calls: Vec<ScriptToolCall>,
    pub error: Option<ScriptError>,
    pub usage: Option<Usage>,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ScriptToolCall {
    pub id: Option<String>,
    pub name: String,
    pub arguments: Value,
    /// Arguments as raw text, as a wire would deliver them (may be invalid JSON).
    pub arguments_raw: Option<String>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ScriptError {
    pub kind: ScriptErrorKind,
    #[serde(default)]
    pub message: String,
    #[serde(default)]
    pub retry_after_secs: Option<u64>,
}

#[derive(Debug, Clone, Copy, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ScriptErrorKind {
    Auth,
    RateLimit,
    Overloaded,
    Server,
    BadRequest,
    ContextTooLong,
    Timeout,
    Connection,
}

#[derive(Debug, thiserror::Error)]
pub enum ScriptLoadError {
    #[error("cannot read script {path}")]
    Read {
        path: String,
        source: std::io::Error,
    },
    #[error("invalid script {path}: {message}")]
    Invalid { path: String, message: String },
}

pub struct ScriptedProvider {
    turns: Vec<ScriptTurn>,
    prompt_token_factor: Option<f64>,
    /// Whether any turn has `when`; without, turns simply go in order.
    matching: bool,
    used: Mutex<Used>,
}

struct Used {
    taken: Vec<bool>,
    /// No turn before this one is left.
    first_free: usize,
}

impl ScriptedProvider {
    pub fn new(script: Script) -> Self {
        Self {
            matching: script.turns.iter().any(|t| t.when.is_some()),
            used: Mutex::new(Used {
                taken: vec![false; script.turns.len()],
                first_free: 0,
            }),
            turns: script.turns,
            prompt_token_factor: script.prompt_token_factor,
        }
    }

    /// Takes the first unused turn that fits `request`.
    fn take(&self, request: &ModelRequest) -> Option<usize> {
        let latest = match self.matching {
            true => latest_user_text(request),
            false => String::new(),
        };
        let mut used = self.used.lock().unwrap_or_else(PoisonError::into_inner);
        let start = used.first_free;
        let offset = self
            .turns
            .get(start..)?
            .iter()
            .enumerate()
            .position(|(i, turn)| {
                !used.taken[start + i]
                    && turn
                        .when
                        .as_ref()
                        .is_none_or(|w| latest.contains(w.as_str()))
            })?;
        let index = start + offset;
        used.taken[index] = true;
        while used.taken.get(used.first_free) == Some(&true) {
            used.first_free += 1;
        }
        Some(index)
    }
}

/// The latest text of a user message, leaving out the reminder mnemo adds at the end of a
/// request (it is not what the conversation said).
fn latest_user_text(request: &ModelRequest) -> String {
    request
        .messages
        .iter()
        .rev()
        .filter(|m| m.role == Role::User)
        .map(|m| {
            m.content
                .iter()
                .filter_map(|block| match block {
                    crate::llm::ContentBlock::Text { text }
                        if !text.starts_with(crate::llm::REMINDER_MARK) =>
                    {
                        Some(text.as_str())
                    }
                    _ => None,
                })
                .collect::<Vec<_>>()
                .join("\n")
        })
        .find(|text| !text.is_empty())
        .unwrap_or_default()
}

impl ScriptedProvider {
    /// Loads a `.toml` script, or JSON for any other extension.
    pub fn load(path: &Path) -> Result<Self, ScriptLoadError> {
        let shown = path.display().to_string();
        let text = std::fs::read_to_string(path).map_err(|source| ScriptLoadError::Read {
            path: shown.clone(),
            source,
        })?;
        let invalid = |message: String| ScriptLoadError::Invalid {
            path: shown.clone(),
            message,
        };
        let script = if path.extension().is_some_and(|e| e == "toml") {
            toml::from_str(&text).map_err(|e| invalid(e.to_string()))?
        } else {
            serde_json::from_str(&text).map_err(|e| invalid(e.to_string()))?
        };
        Ok(Self::new(script))
    }
}

impl Provider for ScriptedProvider {
    fn label(&self) -> &str {
        "scripted"
    }

    fn stream(&self, request: ModelRequest) -> BoxFuture<'_, Result<EventStream, ProviderError>> {
        let index = self.take(&request);
        let total = self.turns.len();
        let prompt_tokens = self
            .prompt_token_factor
            .map(|factor| (estimate_request(&request) as f64 * factor) as u64);
        Box::pin(async move {
            let Some((index, turn)) = index.and_then(|i| Some((i, self.turns.get(i)?.clone())))
            else {
                return Err(ProviderError::BadRequest {
                    message: format!(
                        "the script has no more turns for this request ({total} in all)"
                    ),
                });
            };
            let chunks = turn_chunks(&turn);
            if chunks.is_empty()
                && let Some(error) = &turn.error
            {
                return Err(error.to_provider_error());
            }
            Ok(replay(turn, chunks, index, prompt_tokens))
        })
    }
}

/// mnemo's own estimate of a request's prompt: system prompt, messages and tool schemas.
fn estimate_request(request: &ModelRequest) -> u64 {
    let system = u64::from(super::tokens::estimate_text(&request.system));
    let messages: u64 = request
        .messages
        .iter()
        .map(|m| u64::from(super::tokens::estimate_message(m)))
        .sum();
    let tools: u64 = request
        .tools
        .iter()
        .map(|spec| {
            let schema = serde_json::to_string(spec).unwrap_or_default();
            u64::from(super::tokens::estimate_text(&schema))
        })
        .sum();
    system + messages + tools
}

fn turn_chunks(turn: &ScriptTurn) -> Vec<String> {
    if !turn.chunks.is_empty() {
        return turn.chunks.clone();
    }
    match &turn.text {
        Some(text) => text.split_inclusive(' ').map(str::to_string).collect(),
        None => Vec::new(),
    }
}

fn replay(
    turn: ScriptTurn,
    chunks: Vec<String>,
    index: usize,
    prompt_tokens: Option<u64>,
) -> EventStream {
    let delay = Duration::from_millis(turn.delay_ms);
    let mut steps: Vec<Result<StreamEvent, ProviderError>> = Vec::new();
    if let Some(reasoning) = &turn.reasoning {
        steps.push(Ok(StreamEvent::ReasoningDelta(reasoning.clone())));
    }
    steps.extend(chunks.iter().map(|c| Ok(StreamEvent::TextDelta(c.clone()))));
    match &turn.error {
        Some(error) => steps.push(Err(error.to_provider_error())),
        None => {
            let mut response = response(&turn, &chunks, index);
            if let (None, Some(tokens)) = (turn.usage, prompt_tokens) {
                response.usage.input_tokens = tokens;
            }
            steps.push(Ok(StreamEvent::Completed(response)));
        }
    }
    let stream = futures_util::stream::unfold(
        (steps.into_iter(), true),
        move |(mut steps, first)| async move {
            let item = steps.next()?;
            if !first && !delay.is_zero() {
                tokio::time::sleep(delay).await;
            }
            Some((item, (steps, false)))
        },
    );
    Box::pin(stream)
}

fn response(turn: &ScriptTurn, chunks: &[String], index: usize) -> ModelResponse {
    let mut content = Vec::new();
    if let Some(reasoning) = &turn.reasoning {
        content.push(ContentBlock::Thinking {
            thinking: reasoning.clone(),
            signature: None,
        });
    }
    let text: String = chunks.concat();
    if !text.is_empty() {
        content.push(ContentBlock::Text { text: text.clone() });
    }
    for (n, call) in turn.tool_calls.iter().enumerate() {
        let input = match &call.arguments_raw {
            Some(raw) => tool_input(raw.clone()),
            None if call.arguments.is_null() => Value::Object(Default::default()),
            None => call.arguments.clone(),
        };
        content.push(ContentBlock::ToolUse {
            id: call
                .id
                .clone()
                .unwrap_or_else(|| format!("call_{index}_{n}")),
            name: call.name.clone(),
            input,
        });
    }
    let usage = turn.usage.unwrap_or(Usage {
        output_tokens: (text.len() as u64).div_ceil(4),
        ..Usage::default()
    });
    let stop_reason = if turn.tool_calls.is_empty() {
        StopReason::EndTurn
    } else {
        StopReason::ToolUse
    };
    ModelResponse {
        message: Message::assistant(content),
        usage,
        stop_reason,
    }
}

impl ScriptError {
    fn to_provider_error(&self) -> ProviderError {
        let message = if self.message.is_empty() {
            "scripted failure".to_string()
        } else {
            self.message.clone()
        };
        match self.kind {
            ScriptErrorKind::Auth => ProviderError::Auth {
                status: 401,
                message,
            },
            ScriptErrorKind::RateLimit => ProviderError::RateLimit {
                retry_after: self.retry_after_secs.map(Duration::from_secs),
                message,
            },
            ScriptErrorKind::Overloaded => ProviderError::Overloaded { message },
            ScriptErrorKind::Server => ProviderError::Server {
                status: 500,
                message,
            },
            ScriptErrorKind::BadRequest => ProviderError::BadRequest { message },
            ScriptErrorKind::ContextTooLong => ProviderError::ContextTooLong { message },
            ScriptErrorKind::Timeout => ProviderError::Timeout(message),
            ScriptErrorKind::Connection => ProviderError::Connection(message),
        }
    }
}
