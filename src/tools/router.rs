//! One model step's tools: the specs it offers and the one path a call of it runs through.
//! Which handler a name reaches (the registry's built-in, skill and sub-agent tools, a `cap_*`
//! capability, an `mcp__*` tool or the MCP tool search) is decided here and nowhere else, so
//! what a step offers and what it can run never disagree.

use std::sync::Arc;
use std::time::Duration;

use serde_json::Value;
use tokio_util::sync::CancellationToken;

use super::capability_run::{CapabilityRunner, CapabilityTool};
use super::mcp::{self as mcp_tools, McpCall, McpOffer};
use super::{Tool, ToolContext, ToolError, ToolRegistry, found};
use crate::capabilities::{self, CapSpec, CapabilityRefs, ToolSet};
use crate::llm::ToolSpec;
use crate::mcp::McpManager;

/// Extra time a tool gets past its own timeout to clean up (kill its process group).
const CLEANUP_GRACE: Duration = Duration::from_secs(2);

/// The tools of one step, borrowed from the session that runs it.
pub struct StepRouter<'a> {
    pub registry: &'a ToolRegistry,
    /// The step's tool list, derived from the history (`capabilities::derive`).
    pub toolset: &'a ToolSet,
    pub mcp_offer: &'a McpOffer,
    pub mcp: Option<&'a McpManager>,
    /// `mcp.max_tool_tokens`, for the servers' states a failed MCP call reports.
    pub mcp_budget: u32,
    pub capabilities: &'a Arc<CapabilityRunner>,
}

/// What a step's tools are derived from: the registry, the MCP servers' tools, the pinned
/// capabilities and what the working history references.
pub struct StepSources<'a> {
    pub registry: &'a ToolRegistry,
    pub mcp: Option<&'a McpManager>,
    pub pinned: &'a [CapSpec],
    pub refs: &'a CapabilityRefs,
    /// `mcp.max_tool_tokens`: a server whose tools take more waits behind the search tool.
    pub mcp_budget: u32,
    /// The capabilities' token budget; past it the least recently referenced leave.
    pub capability_budget: u32,
}

/// The step's tool list and the MCP tools it offers, a pure function of `sources`: static
/// tools first in a fixed order, then MCP tools, then capabilities, so an unchanged history
/// gives the same specs byte for byte (the prompt cache depends on it).
pub fn derive_step(sources: &StepSources<'_>) -> (ToolSet, McpOffer) {
    let offer = match sources.mcp {
        Some(manager) => McpOffer::build(
            &manager.tools(),
            sources.refs.found_mcp_tools(),
            sources.mcp_budget,
        ),
        None => McpOffer::default(),
    };
    let toolset = capabilities::derive(
        &sources.registry.specs(),
        &offer.specs,
        sources.pinned,
        sources.refs,
        sources.capability_budget,
    );
    (toolset, offer)
}

/// Where a call goes.
enum Route<'r> {
    Registry(&'r Arc<dyn Tool>),
    Capability(CapabilityTool),
    Mcp(McpCall),
    McpSearch,
}

impl StepRouter<'_> {
    /// The specs the request carries, in the order the model is shown them: the step's tools
    /// except the ones the history found (their schemas are in the messages that found them,
    /// and they are called through `use_tool`) and the rarely needed built-ins
    /// (`Tool::deferred`), then `use_tool` itself when this session can reach any of those.
    /// So finding a tool, or compaction losing it, leaves the tool list, and the cached prompt
    /// after it, as it was.
    pub fn specs(&self) -> Arc<[ToolSpec]> {
        self.request_tools().0
    }

    /// [`Self::specs`], and how many of them come first and change only with the
    /// configuration (the registry's tools sent).
    pub fn request_tools(&self) -> (Arc<[ToolSpec]>, usize) {
        let deferred: Vec<ToolSpec> = self.toolset.specs[..self.toolset.static_count]
            .iter()
            .filter(|spec| self.deferred(&spec.name))
            .cloned()
            .collect();
        let finds = !deferred.is_empty()
            || self.registry.get(capabilities::QUERY).is_some()
            || !self.mcp_offer.deferred.is_empty();
        let sent: Arc<[ToolSpec]> = self
            .toolset
            .specs
            .iter()
            .filter(|spec| !self.found(&spec.name) && !self.deferred(&spec.name))
            .cloned()
            .chain(finds.then(|| found::use_tool_spec(&deferred)))
            .collect();
        let static_sent = self.toolset.static_count - deferred.len();
        (sent, static_sent)
    }

    /// The spec of `name`, if the step can run it: a registry tool or one of the step's set.
    fn spec_of(&self, name: &str) -> Option<&ToolSpec> {
        self.toolset.specs.iter().find(|spec| spec.name == name)
    }

    /// Whether `name` is a registry tool rarely needed, waiting behind `use_tool`.
    fn deferred(&self, name: &str) -> bool {
        self.registry.get(name).is_some_and(|tool| tool.deferred())
    }

    /// Whether `name` is offered because the history found it: a capability that is not
    /// pinned, or a tool of an MCP server waiting behind the search.
    fn found(&self, name: &str) -> bool {
        match self.toolset.capability(name) {
            Some(_) => !self.toolset.is_pinned(name),
            None => self.mcp_offer.is_deferred(name),
        }
    }

    /// Whether a call to `name` runs alone, in order: capabilities run like shell commands,
    /// and so do MCP tools not marked read-only.
    pub fn mutates(&self, name: &str) -> bool {
        self.registry.get(name).is_some_and(|t| t.mutates())
            || self.toolset.capability(name).is_some()
            || self.mcp_offer.get(name).is_some_and(|t| !t.read_only)
    }

    fn route(&self, name: &str) -> Result<Route<'_>, ToolError> {
        if name == found::USE_TOOL {
            return Err(ToolError::Failed(format!(
                "{} calls a found tool, not itself",
                found::USE_TOOL
            )));
        }
        if name == mcp_tools::SEARCH || name.starts_with("mcp__") {
            return self.mcp_route(name);
        }
        if capabilities::capability_name(name).is_some() {
            let Some((capability, version)) = self.toolset.capability(name) else {
                return Err(ToolError::Failed(format!(
                    "`{name}` is not in your tool list now (capabilities leave it when the \
                     messages that found them are compacted). Call capability_query to find \
                     it again"
                )));
            };
            let runner = self.capabilities.clone();
            return Ok(Route::Capability(CapabilityTool::new(
                name, capability, version, runner,
            )));
        }
        match self.registry.get(name) {
            Some(tool) => Ok(Route::Registry(tool)),
            None => Err(ToolError::Failed(format!(
                "unknown tool `{name}`; available tools: {}",
                self.registry.names().join(", ")
            ))),
        }
    }

    fn mcp_route(&self, name: &str) -> Result<Route<'_>, ToolError> {
        if name == mcp_tools::SEARCH {
            return match self.mcp_offer.deferred.is_empty() {
                true => Err(ToolError::Failed(
                    "every MCP tool is in your tool list already: there is nothing to search"
                        .into(),
                )),
                false => Ok(Route::McpSearch),
            };
        }
        let Some(manager) = self.mcp else {
            return Err(ToolError::Failed(format!(
                "`{name}` is not in your tool list now: this session has no MCP server"
            )));
        };
        if let Some(tool) = self.mcp_offer.get(name) {
            return Ok(Route::Mcp(McpCall::new(tool.clone(), manager.clone())));
        }
        if self.mcp_offer.is_deferred(name) {
            return Err(ToolError::Failed(format!(
                "`{name}` is not in your tool list now: find it with {} first (what a search \
                 found leaves the list when its message is compacted)",
                mcp_tools::SEARCH
            )));
        }
        let states: Vec<String> = mcp_tools::status(Some(manager), self.mcp_budget)
            .iter()
            .map(|s| format!("{}: {}", s.name, s.state))
            .collect();
        Err(ToolError::Failed(format!(
            "`{name}` is not in your tool list now: no MCP tool of that name is offered (MCP \
             servers: {})",
            states.join("; ")
        )))
    }

    /// Runs one call: its approval (the user's time to answer counts against no timeout),
    /// then the tool; a tool that panics is a failed call the model hears of, and the session
    /// (`session_id`, for the crash record) goes on. Registry tools are cut off past their
    /// timeout; capabilities and MCP tools keep to their own. `cancel` ends any of them.
    pub async fn dispatch(
        &self,
        name: &str,
        input: &Value,
        ctx: &ToolContext,
        session_id: &str,
        cancel: &CancellationToken,
    ) -> Result<String, ToolError> {
        let (name, input) = match name == found::USE_TOOL {
            true => match found::unwrap(input)? {
                found::Asked::Call(name, arguments) => (name, arguments),
                found::Asked::Schema(name) => {
                    self.route(name)?;
                    return match self.spec_of(name) {
                        Some(spec) => Ok(found::schema_of(spec)),
                        None => Err(ToolError::Failed(format!(
                            "`{name}` has no schema to show: call it with its arguments"
                        ))),
                    };
                }
            },
            false => (name, input),
        };
        let run = async {
            let route = self.route(name)?;
            let (tool, what, limit): (&dyn Tool, &str, _) = match &route {
                Route::McpSearch => return self.mcp_offer.search(input).map_err(ToolError::Failed),
                Route::Registry(tool) if tool.own_time_limit() => (tool.as_ref(), "tool", None),
                Route::Registry(tool) => (tool.as_ref(), "tool", Some(ctx.timeout)),
                Route::Capability(tool) => (tool, "capability", None),
                Route::Mcp(tool) => (tool, "MCP call", None),
            };
            let hooked = super::hooked::before(ctx, name, input).await?;
            ctx.approvals.check_hooked(tool, input, ctx, hooked).await?;
            let call = async {
                match route {
                    // The registry caps the output before it reaches the model.
                    Route::Registry(_) => self.registry.execute(name, input.clone(), ctx).await,
                    _ => tool.call(input.clone(), ctx).await,
                }
            };
            let output = guarded(call, name, what, session_id, limit).await?;
            Ok(super::hooked::after(ctx, name, input, output).await)
        };
        tokio::select! {
            result = run => result,
            // Dropping the call drops the tool's future; tools clean up in their Drop guards.
            () = cancel.cancelled() => Err(ToolError::Cancelled),
        }
    }
}

/// Runs `call` of tool `name` so that a panic is a failed call and, with a `limit`, so that it
/// ends with a timeout error soon after it.
async fn guarded(
    call: impl Future<Output = Result<String, ToolError>>,
    name: &str,
    what: &str,
    session_id: &str,
    limit: Option<Duration>,
) -> Result<String, ToolError> {
    let call = crate::crash::within(format!("tool:{name}"), Some(session_id.to_string()), call);
    let crashed = |crashed| {
        Err(ToolError::Failed(format!(
            "the {what} failed: {crashed}. The session goes on; try another way"
        )))
    };
    let Some(limit) = limit else {
        return call.await.unwrap_or_else(crashed);
    };
    match tokio::time::timeout(limit + CLEANUP_GRACE, call).await {
        Ok(outcome) => outcome.unwrap_or_else(crashed),
        Err(_) => Err(ToolError::TimedOut {
            after: limit,
            output: String::new(),
        }),
    }
}

#[cfg(test)]
#[path = "router_tests.rs"]
mod tests;
