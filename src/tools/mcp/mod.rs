//! The agent's side of MCP: the servers' tools as the model calls them (`mcp__<server>__<tool>`),
//! which of them one step offers (`offer`), `mcp_tool_search` over the tools of servers too
//! large to list (`search`), and the resource tools. Approval follows the server's
//! `readOnlyHint`: every tool not marked read-only counts as a write.

mod offer;
mod resources;
mod search;

use std::sync::Arc;

use futures_util::future::BoxFuture;
use serde_json::Value;

pub use offer::{McpOffer, deferred_servers};
pub use resources::register;
pub use search::SEARCH;

use super::truncate::MAX_OUTPUT_BYTES;
use super::{Tool, ToolContext, ToolError};
use crate::mcp::{McpError, McpManager, McpTool, ServerState};
use crate::protocol::{ApprovalAction, McpServerStatus};
use crate::sandbox::approval::Action;
use crate::text::{clip, head_tail};

/// How much of a call's arguments an approval question shows.
const PREVIEW_CHARS: usize = 2000;

/// One MCP tool as a step offers it.
pub struct McpCall {
    tool: Arc<McpTool>,
    manager: McpManager,
}

impl McpCall {
    pub fn new(tool: Arc<McpTool>, manager: McpManager) -> Self {
        Self { tool, manager }
    }
}

impl Tool for McpCall {
    fn name(&self) -> &str {
        &self.tool.name
    }

    fn description(&self) -> &str {
        &self.tool.description
    }

    fn input_schema(&self) -> Value {
        self.tool.input_schema.clone()
    }

    fn mutates(&self) -> bool {
        !self.tool.read_only
    }

    fn approval_action(&self, _input: &Value) -> Option<Action> {
        (!self.tool.read_only).then_some(Action::External)
    }

    fn approval_preview<'a>(
        &'a self,
        input: &'a Value,
        _ctx: &'a ToolContext,
    ) -> BoxFuture<'a, Result<ApprovalAction, ToolError>> {
        Box::pin(async move {
            let arguments = serde_json::to_string_pretty(input).unwrap_or_default();
            Ok(ApprovalAction::McpCall {
                server: self.tool.server.clone(),
                tool: self.tool.tool.clone(),
                arguments: clip(&arguments, PREVIEW_CHARS),
            })
        })
    }

    fn call<'a>(
        &'a self,
        input: Value,
        ctx: &'a ToolContext,
    ) -> BoxFuture<'a, Result<String, ToolError>> {
        Box::pin(async move {
            let result = self
                .manager
                .call_exact(&self.tool, input, ctx.cancel.clone())
                .await
                .map_err(mcp_failed)?;
            let text = head_tail(&result.text, MAX_OUTPUT_BYTES);
            for image in result.images {
                ctx.attach_image(image);
            }
            match result.is_error {
                true => Err(ToolError::Failed(text)),
                false => Ok(text),
            }
        })
    }
}

/// An MCP failure as the model hears it.
fn mcp_failed(error: McpError) -> ToolError {
    match error {
        McpError::Cancelled => ToolError::Cancelled,
        other => ToolError::Failed(other.to_string()),
    }
}

/// Each of `manager`'s servers and where it stands; a server whose tools take more than
/// `budget` tokens is marked deferred.
pub fn status(manager: Option<&McpManager>, budget: u32) -> Vec<McpServerStatus> {
    let Some(manager) = manager else {
        return Vec::new();
    };
    let deferred = deferred_servers(&manager.tools(), budget);
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
