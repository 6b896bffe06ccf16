//! The session's MCP servers: their tools join the per-step tool list (`tool_set.rs`), a
//! model request waits for servers still starting, calls go through approvals by the
//! server's read-only hint, and front ends ask for the servers' states.

use std::time::Duration;

use serde_json::Value;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use super::Session;
use crate::mcp::{McpManager, McpSettings, ServerState};
use crate::protocol::{Event, McpServerStatus};
use crate::tools::mcp::{self as mcp_tools, McpCall, McpOffer};
use crate::tools::{ToolContext, ToolError};

/// How long a request waits for starting servers before the front end hears why.
const QUIET_WAIT: Duration = Duration::from_secs(1);

/// How long a step waits for a server to list the tools it announced as changed.
const RELIST_WAIT: Duration = Duration::from_secs(2);

impl Session {
    /// The session starts these servers once it has announced itself, so their processes
    /// do not compete with the front end's first frames.
    pub fn start_mcp_later(&mut self, settings: McpSettings) {
        self.mcp_pending = Some(settings);
    }

    /// Starts the servers given to [`Session::start_mcp_later`].
    pub(super) fn start_pending_mcp(&mut self) {
        if let Some(settings) = self.mcp_pending.take() {
            self.set_mcp(McpManager::start(settings));
        }
    }

    /// Gives the session `manager`'s servers: their tools from the next step on, and the
    /// resource tools.
    pub fn set_mcp(&mut self, manager: McpManager) {
        if manager.states().is_empty() {
            return;
        }
        mcp_tools::register(&mut self.tools, &manager);
        self.mcp = Some(manager);
        self.tools_generation = None;
    }

    /// The MCP tools of the next step, chosen again from the servers' tools and what the
    /// history found.
    pub(super) fn mcp_offer(&self) -> McpOffer {
        match &self.mcp {
            Some(manager) => McpOffer::build(
                &manager.tools(),
                self.caps.found_mcp_tools(),
                self.settings.mcp_max_tool_tokens,
            ),
            None => McpOffer::default(),
        }
    }

    /// The counter of tool list changes the servers announced.
    pub(super) fn mcp_generation(&self) -> u64 {
        self.mcp.as_ref().map_or(0, McpManager::tools_generation)
    }

    /// Waits for tool lists a server announced as changed (a call may have added tools; a
    /// server may announce just after its answer, then the step after this one offers
    /// them), and for servers starting for the first time (each bounded by its startup
    /// timeout), so the first request of a session offers their tools. A restarting server
    /// is not waited for. An interrupt ends the wait.
    pub(super) async fn wait_for_mcp(&self, cancel: &CancellationToken) {
        let Some(manager) = &self.mcp else { return };
        tokio::select! {
            () = manager.settle(Instant::now() + RELIST_WAIT) => {}
            () = cancel.cancelled() => return,
        }
        if manager.first_starts().is_empty() {
            return;
        }
        let deadline = Instant::now() + manager.longest_startup();
        let quiet = (Instant::now() + QUIET_WAIT).min(deadline);
        tokio::select! {
            () = manager.wait_ready(quiet) => {}
            () = cancel.cancelled() => return,
        }
        let starting = manager.first_starts();
        if starting.is_empty() {
            return;
        }
        let message = format!(
            "waiting for MCP server{} {} to start",
            if starting.len() == 1 { "" } else { "s" },
            starting.join(", ")
        );
        self.emit(Event::Notice { message }).await;
        tokio::select! {
            () = manager.wait_ready(deadline) => {}
            () = cancel.cancelled() => {}
        }
    }

    /// Each configured server and where it stands.
    pub fn mcp_status(&self) -> Vec<McpServerStatus> {
        status(self.mcp.as_ref(), self.settings.mcp_max_tool_tokens)
    }

    /// The MCP tool offered as `name` this step, ready to check and call.
    pub(super) fn mcp_tool(&self, name: &str) -> Option<McpCall> {
        let manager = self.mcp.clone()?;
        let tool = self.toolset_mcp.get(name)?.clone();
        Some(McpCall::new(tool, manager))
    }

    /// Whether a call to `name` goes to [`Session::call_mcp`].
    pub(super) fn is_mcp_call(&self, name: &str) -> bool {
        self.mcp.is_some() && (name == mcp_tools::SEARCH || name.starts_with("mcp__"))
    }

    /// Runs a call to an MCP tool or to `mcp_tool_search`.
    pub(super) async fn call_mcp(
        &self,
        name: &str,
        input: &Value,
        ctx: &ToolContext,
    ) -> Result<String, ToolError> {
        if name == mcp_tools::SEARCH {
            return match self.toolset_mcp.deferred.is_empty() {
                true => Err(ToolError::Failed(
                    "every MCP tool is in your tool list already: there is nothing to search"
                        .into(),
                )),
                false => self.toolset_mcp.search(input).map_err(ToolError::Failed),
            };
        }
        if let Some(tool) = self.mcp_tool(name) {
            return self.approve_and_call(&tool, input, ctx, "MCP call").await;
        }
        if self.toolset_mcp.is_deferred(name) {
            return Err(ToolError::Failed(format!(
                "`{name}` is not in your tool list now: find it with {} first (what a search \
                 found leaves the list when its message is compacted)",
                mcp_tools::SEARCH
            )));
        }
        let states: Vec<String> = self
            .mcp_status()
            .iter()
            .map(|s| format!("{}: {}", s.name, s.state))
            .collect();
        Err(ToolError::Failed(format!(
            "no MCP tool `{name}` is offered now (MCP servers: {})",
            states.join("; ")
        )))
    }
}

/// Each of `manager`'s servers and where it stands; a server whose tools take more than
/// `budget` tokens is marked deferred.
pub(super) fn status(manager: Option<&McpManager>, budget: u32) -> Vec<McpServerStatus> {
    let Some(manager) = manager else {
        return Vec::new();
    };
    let deferred = mcp_tools::deferred_servers(&manager.tools(), budget);
    manager
        .states()
        .into_iter()
        .map(|(name, state)| McpServerStatus {
            deferred: deferred.iter().any(|(s, _)| *s == name),
            ready: matches!(state, ServerState::Ready { .. }),
            name,
            state: state.to_string(),
        })
        .collect()
}
