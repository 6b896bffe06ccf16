//! The canonical conversation model. Every provider maps its wire format to and from these
//! types, so the agent, the store and the front ends never see a provider's JSON.

use std::borrow::Cow;
use std::sync::Arc;

use serde::{Deserialize, Serialize};
use serde_json::Value;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Role {
    User,
    Assistant,
}

/// One block of a message. Tool results travel in user messages, as on the Anthropic wire.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ContentBlock {
    Text {
        text: String,
    },
    Thinking {
        thinking: String,
        /// Anthropic signs thinking blocks; the signature must be sent back unchanged.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        signature: Option<String>,
    },
    ToolUse {
        id: String,
        name: String,
        /// The parsed arguments. When the model sent text that is not valid JSON, this holds
        /// that raw text as a string, and the executor answers with an error result.
        input: Value,
    },
    ToolResult {
        tool_use_id: String,
        content: String,
        #[serde(default)]
        is_error: bool,
    },
    /// An image the person attached, or one a tool call returned (then `tool_use_id` names it).
    Image(crate::llm::image::ImageBlock),
    /// A provider's own tool call or result (Anthropic's web search), kept verbatim.
    Server(crate::llm::server_tool::ServerBlock),
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Message {
    pub role: Role,
    pub content: Vec<ContentBlock>,
}

impl Message {
    pub fn user_text(text: impl Into<String>) -> Self {
        Self {
            role: Role::User,
            content: vec![ContentBlock::Text { text: text.into() }],
        }
    }

    pub fn assistant(content: Vec<ContentBlock>) -> Self {
        Self {
            role: Role::Assistant,
            content,
        }
    }

    /// The text blocks joined, without thinking or tool blocks.
    pub fn text(&self) -> String {
        let mut out = String::new();
        for block in &self.content {
            if let ContentBlock::Text { text } = block {
                out.push_str(text);
            }
        }
        out
    }

    /// The tool calls of an assistant message, in order.
    pub fn tool_calls(&self) -> impl Iterator<Item = ToolCall<'_>> {
        self.content.iter().filter_map(|block| match block {
            ContentBlock::ToolUse { id, name, input } => Some(ToolCall { id, name, input }),
            _ => None,
        })
    }
}

/// A borrowed view of a `ToolUse` block.
#[derive(Debug, Clone, Copy)]
pub struct ToolCall<'a> {
    pub id: &'a str,
    pub name: &'a str,
    pub input: &'a Value,
}

pub use crate::protocol::Usage;

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StopReason {
    EndTurn,
    ToolUse,
    MaxTokens,
    StopSequence,
    Refusal,
    /// The provider paused a long turn of its own tools; sending the reply back resumes it.
    Paused,
    Other(String),
}

/// A tool as the model sees it. Cheap to clone: a built-in tool's description is static and
/// its schema shared by every registry (a daemon holds many sessions, each with its tools).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ToolSpec {
    pub name: String,
    pub description: Cow<'static, str>,
    pub input_schema: Arc<Value>,
}

/// Everything a provider needs for one model call.
#[derive(Debug, Clone)]
pub struct ModelRequest {
    pub system: String,
    /// Shared with the session's history, so building a request copies no message.
    pub messages: Vec<std::sync::Arc<Message>>,
    pub tools: std::sync::Arc<[ToolSpec]>,
    /// How many of `tools` come first and change only with the configuration (the rest are
    /// capabilities that come and go): prompt caching stops after them. `usize::MAX`: all.
    pub static_tools: usize,
    pub max_output_tokens: u32,
    /// Trailing content blocks of the last message that change from step to step (the working
    /// checkpoint and nudges): no cache breakpoint goes on them, so the next step reads what
    /// comes before them from the cache.
    pub volatile_tail: usize,
    /// Whether the model may call the tools offered. Forbidding calls keeps the tools in the
    /// request (a history holding tool calls needs them, and the cached prefix stays).
    pub tool_calls: ToolCalls,
    /// Whether a provider with a search of its own may offer it (the session may reach the
    /// web, and no `web_search` tool is configured instead).
    pub server_search: bool,
}

/// Whether a request lets the model call its tools.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum ToolCalls {
    #[default]
    Allowed,
    Forbidden,
}

/// A finished model response.
#[derive(Debug, Clone, PartialEq)]
pub struct ModelResponse {
    pub message: Message,
    pub usage: Usage,
    pub stop_reason: StopReason,
}

/// What a provider stream yields: deltas to show at once, then the whole response.
#[derive(Debug, Clone, PartialEq)]
pub enum StreamEvent {
    TextDelta(String),
    ReasoningDelta(String),
    /// The usage of the response so far, as the provider reports it while streaming; what an
    /// attempt that breaks off has already cost.
    Usage(Usage),
    /// A provider's own tool ran (its call and result are in the message too).
    ServerTool(crate::llm::server_tool::ServerToolRun),
    Completed(ModelResponse),
}

/// A tool call's arguments from the text a provider streamed: `{}` when none came, the raw
/// text when it is not valid JSON, so a model's broken call reaches the executor (which
/// answers with an error) instead of failing the stream.
pub fn tool_input(text: String) -> Value {
    if text.trim().is_empty() {
        return Value::Object(serde_json::Map::new());
    }
    serde_json::from_str(&text).unwrap_or(Value::String(text))
}

#[cfg(test)]
mod tool_input_tests {
    use super::*;

    #[test]
    fn tool_input_keeps_invalid_json_as_raw_text() {
        assert_eq!(
            tool_input(String::new()),
            Value::Object(serde_json::Map::new())
        );
        assert_eq!(tool_input("{\"a\":1}".into()), serde_json::json!({"a": 1}));
        assert_eq!(
            tool_input("{\"a\":".into()),
            Value::String("{\"a\":".into())
        );
    }
}
