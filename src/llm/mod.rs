//! Model providers behind one trait. A provider turns a canonical `ModelRequest` into a stream
//! of canonical events; the wire formats live in their own modules.

pub mod anthropic;
pub mod error;
pub mod factory;
pub mod fallback;
pub mod http;
pub mod openai;
pub mod scripted;
pub mod sse;
pub mod tokens;
pub mod transcript;
pub mod types;

use std::pin::Pin;

use futures_util::Stream;
use futures_util::future::BoxFuture;

pub use error::ProviderError;
pub use types::{
    ContentBlock, Message, ModelRequest, ModelResponse, Role, StopReason, StreamEvent, ToolSpec,
    Usage, tool_input,
};

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
#[derive(Debug, Clone)]
pub struct ProviderSettings {
    pub base_url: String,
    /// The model id on the wire, such as `claude-sonnet-4-5` or `gpt-5`.
    pub model: String,
    /// Read from the environment at start-up; never logged or stored.
    pub api_key: Option<String>,
}
