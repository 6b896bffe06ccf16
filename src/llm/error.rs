//! Typed provider errors. The fallback chain decides from the kind alone whether to retry,
//! move to the next model, or compact the context.

use std::time::Duration;

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ProviderError {
    #[error("authentication failed ({status}): {message}")]
    Auth { status: u16, message: String },
    #[error(
        "the account's quota is used up ({message}); waiting does not help: add credit, or \
         use another model"
    )]
    QuotaExhausted { message: String },
    #[error("rate limited: {message}")]
    RateLimit {
        retry_after: Option<Duration>,
        message: String,
    },
    #[error("provider overloaded: {message}")]
    Overloaded { message: String },
    #[error("server error ({status}): {message}")]
    Server { status: u16, message: String },
    #[error("bad request: {message}")]
    BadRequest { message: String },
    #[error("context too long: {message}")]
    ContextTooLong { message: String },
    #[error("request timed out: {0}")]
    Timeout(String),
    #[error("connection failed: {0}")]
    Connection(String),
    /// A server on this machine that nothing answers for: it is not running, and retrying
    /// does not start it.
    #[error(
        "the server at {server} does not answer ({reason}) — start it, or choose another \
         model (mnemo config)"
    )]
    NotAnswering { server: String, reason: String },
    #[error("malformed response stream: {0}")]
    Protocol(String),
    #[error("cancelled")]
    Cancelled,
}

impl ProviderError {
    /// Whether the same request may succeed if sent again later.
    pub fn is_retryable(&self) -> bool {
        matches!(
            self,
            Self::RateLimit { .. }
                | Self::Overloaded { .. }
                | Self::Server { .. }
                | Self::Timeout(_)
                | Self::Connection(_)
                | Self::Protocol(_)
        )
    }
}

impl From<super::sse::Oversized> for ProviderError {
    fn from(_: super::sse::Oversized) -> Self {
        ProviderError::Protocol(format!(
            "an event of the response stream passed {} MiB without ending; the stream was \
             stopped",
            super::sse::MAX_EVENT_BYTES >> 20
        ))
    }
}
