//! Model providers behind one trait. A provider turns a canonical `ModelRequest` into a stream
//! of canonical events; the wire formats live in their own modules.

pub mod anthropic;
pub mod error;
pub mod fallback;
pub mod http;
pub mod image;
pub mod image_attach;
pub mod openai;
mod price;
pub mod reach;
pub mod scripted;
pub mod server_tool;
pub mod sse;
pub mod tokens;
pub mod transcript;
pub mod types;

use std::pin::Pin;

use futures_util::Stream;
use futures_util::future::BoxFuture;

pub use error::ProviderError;
pub use price::Price;
pub use types::{
    ContentBlock, Message, ModelRequest, ModelResponse, Role, StopReason, StreamEvent, ToolCalls,
    ToolSpec, Usage, tool_input,
};

/// Opens the text mnemo adds at the very end of a request (the working checkpoint and
/// reminders): it is not part of the stored conversation.
pub const REMINDER_MARK: &str = "[mnemo reminder]";

/// Deltas as they arrive, ending with `StreamEvent::Completed` or an error. Dropping the
/// stream closes the connection, which is how an interrupt reaches the network.
pub type EventStream = Pin<Box<dyn Stream<Item = Result<StreamEvent, ProviderError>> + Send>>;

pub trait Provider: Send + Sync {
    /// A short label for logs and events, such as `anthropic:claude-sonnet-4-5`.
    fn label(&self) -> &str;

    /// Starts one model call. The future resolves once the response has started (or failed
    /// before streaming); the stream then carries the response.
    fn stream(&self, request: ModelRequest) -> BoxFuture<'_, Result<EventStream, ProviderError>>;
}

/// Decodes one wire format from SSE events into canonical stream events.
pub trait WireDecoder: Send + 'static {
    /// Handles one SSE event, pushing any deltas to `out`.
    fn on_event(
        &mut self,
        event: sse::SseEvent<'_>,
        out: &mut Vec<StreamEvent>,
    ) -> Result<(), ProviderError>;

    /// The body ended: the assembled response, or an error if it ended too early.
    fn finish(&mut self) -> Result<ModelResponse, ProviderError>;
}

/// Where and how to reach one model, resolved from the config.
#[derive(Debug, Clone, Default)]
pub struct ProviderSettings {
    pub base_url: String,
    /// The model id on the wire, such as `claude-sonnet-4-5` or `gpt-5`.
    pub model: String,
    /// Read from the environment at start-up; never logged or stored.
    pub api_key: Option<String>,
    /// The variable the key comes from, read again for every request so that a key fixed
    /// after an authentication error works at once.
    pub api_key_env: Option<String>,
    pub timeouts: Timeouts,
}

impl ProviderSettings {
    /// The key to send now: the variable's current value, else the one read at start-up.
    pub fn key(&self) -> Option<String> {
        self.api_key_env
            .as_deref()
            .and_then(|var| std::env::var(var).ok())
            .filter(|key| !key.trim().is_empty())
            .or_else(|| self.api_key.clone())
            .filter(|key| !key.is_empty())
    }
}

/// How long a request may wait at each stage before it counts as failed (and is retried).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Timeouts {
    /// Opening the connection (TCP and TLS).
    pub connect: std::time::Duration,
    /// From sending the request to the start of the answer.
    pub first_byte: std::time::Duration,
    /// Between two pieces of a streamed answer.
    pub idle: std::time::Duration,
}

impl Default for Timeouts {
    fn default() -> Self {
        Self {
            connect: std::time::Duration::from_secs(10),
            first_byte: std::time::Duration::from_secs(60),
            idle: std::time::Duration::from_secs(90),
        }
    }
}
