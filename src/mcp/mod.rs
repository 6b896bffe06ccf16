//! The MCP client: users bring their own tools as MCP servers. This is the only module that
//! names `rmcp` types; the rest of mnemo sees [`McpManager`], the tools it offers as plain
//! data ([`McpTool`]) and call results as text ([`McpResult`]).

pub mod config;
mod connection;
mod content;
mod manager;
mod names;
mod oversize;
mod supervisor;

pub use config::{McpConfig, McpConfigError, McpServerConfig, McpServerEntry, Transport};
pub use content::McpResult;
pub use manager::{Backoff, McpManager, McpSettings};

/// A tool a ready server offers.
#[derive(Debug, Clone, PartialEq)]
pub struct McpTool {
    /// The name the model calls it by: `mcp__<server>__<tool>`, sanitised, at most 64 long.
    pub name: String,
    pub server: String,
    /// The server's own name for it.
    pub tool: String,
    pub description: String,
    /// The JSON schema of its arguments, as the server gave it.
    pub input_schema: serde_json::Value,
    /// The server annotated it `readOnlyHint`; every other MCP tool counts as a write.
    pub read_only: bool,
}

/// A resource a server offers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct McpResource {
    pub uri: String,
    pub name: String,
    pub description: Option<String>,
    pub mime_type: Option<String>,
}

/// Where a configured server stands.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ServerState {
    Starting,
    Ready {
        tools: usize,
    },
    /// Its entry is broken, it could not start, or it exited (then the reason says when it
    /// restarts).
    Failed {
        reason: String,
    },
    Disabled,
    /// Defined by a workspace the person has not trusted: never started.
    NotTrusted,
}

impl ServerState {
    /// Why a failed server failed, without when it restarts (which is soon out of date).
    pub fn failure(&self) -> Option<&str> {
        match self {
            Self::Failed { reason } => Some(
                reason
                    .split_once(supervisor::RESTARTING)
                    .map_or(reason.as_str(), |(cause, _)| cause),
            ),
            Self::Starting | Self::Ready { .. } | Self::Disabled | Self::NotTrusted => None,
        }
    }
}

impl std::fmt::Display for ServerState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Starting => write!(f, "starting"),
            Self::Ready { tools: 1 } => write!(f, "ready with 1 tool"),
            Self::Ready { tools } => write!(f, "ready with {tools} tools"),
            Self::Failed { reason } => write!(f, "failed: {reason}"),
            Self::Disabled => write!(f, "disabled"),
            Self::NotTrusted => write!(f, "not started: workspace not trusted"),
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum McpError {
    #[error("no MCP tool is called `{0}`")]
    UnknownTool(String),
    #[error(
        "`{0}` changed on its MCP server since this step began (a new tool list or a restart); \
         the next step offers it as it is now"
    )]
    Changed(String),
    #[error("no MCP server is called `{0}`")]
    UnknownServer(String),
    #[error("MCP server `{server}` is not running ({state})")]
    NotRunning { server: String, state: String },
    #[error("MCP server `{server}` exited during the call; it is being restarted")]
    ServerExited { server: String },
    #[error("MCP server `{server}` did not answer `{tool}` within {secs}s (tool_timeout_secs)")]
    Timeout {
        server: String,
        tool: String,
        secs: u64,
    },
    #[error(
        "MCP server `{server}` answered `{tool}` with a message over {} MiB, the most mnemo \
         reads; the answer was dropped. Ask for less (a filter, a page, a smaller range)",
        oversize::MAX_LINE_BYTES / (1024 * 1024)
    )]
    TooLarge { server: String, tool: String },
    #[error("the MCP call was cancelled")]
    Cancelled,
    #[error("{0}")]
    BadArguments(String),
    #[error("MCP server `{server}`: {message}")]
    Server { server: String, message: String },
}
