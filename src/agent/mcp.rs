//! The session's MCP servers: their tools join the per-step tool list (`tool_set.rs`), a
//! model request waits for servers still starting, and front ends ask for the servers' states.

use std::collections::BTreeSet;
use std::time::Duration;

use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use super::Session;
use crate::mcp::{McpManager, McpSettings};
use crate::protocol::{Event, McpServerStatus};
use crate::tools::mcp as mcp_tools;

pub(super) use crate::tools::mcp::status;

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
        self.step_tools.tools_generation = None;
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

    /// Tells the front end of each server that failed since the last call and was not told
    /// of before (`told` keeps them): a server that does not start is noticed at once, not
    /// only when a tool is missing.
    pub(super) async fn report_failed_mcp(&self, told: &mut BTreeSet<String>) {
        let Some(manager) = &self.mcp else { return };
        for (name, state) in manager.states() {
            let Some(reason) = state.failure() else {
                continue;
            };
            if told.insert(name.clone()) {
                let message = format!("MCP server {name} failed: {reason} (/mcp shows its state)");
                self.emit(Event::Error { message }).await;
            }
        }
    }

    /// Each configured server and where it stands.
    pub fn mcp_status(&self) -> Vec<McpServerStatus> {
        status(self.mcp.as_ref(), self.settings.mcp_max_tool_tokens)
    }
}
