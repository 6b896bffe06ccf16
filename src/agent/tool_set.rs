//! The session's tool list, derived again at each model step from the static tools, the MCP
//! servers' tools, the pinned capabilities and what the working history references
//! (`tools::router::derive_step`), and the step's router (`tools::router`) over it.

use std::collections::HashSet;
use std::sync::Arc;

use super::Session;
use crate::capabilities::{self, CapSpec, ToolSet};
use crate::llm::{Message, tokens};
use crate::memory::StoreError;
use crate::protocol::Event;
use crate::tools::mcp::McpOffer;
use crate::tools::router::{StepRouter, StepSources, derive_step};

/// The tools of one session's next model step and what they were derived from.
pub(super) struct StepTools {
    /// The registry's tools, then MCP tools, then capabilities.
    pub(super) toolset: Arc<ToolSet>,
    /// The MCP tools of the tool set.
    pub(super) toolset_mcp: Arc<McpOffer>,
    /// The generations of the history's references and of the MCP servers' tools the tool
    /// set was derived from.
    pub(super) tools_generation: Option<(u64, u64)>,
    /// Capabilities the person pinned, read once per session.
    pub(super) pinned: Option<Vec<CapSpec>>,
    /// The estimated tokens of the tool schemas the next request carries.
    pub(super) tool_tokens: u64,
    /// The estimated tokens of the static tools' schemas.
    pub(super) static_tool_tokens: u64,
}

impl StepTools {
    /// Only the static tools, until the first step derives the list.
    pub(super) fn fixed(toolset: Arc<ToolSet>) -> Self {
        let tool_tokens = spec_tokens(&toolset.specs);
        Self {
            toolset,
            toolset_mcp: Arc::default(),
            tools_generation: None,
            pinned: None,
            tool_tokens,
            static_tool_tokens: tool_tokens,
        }
    }
}

impl Session {
    /// Brings the tool list up to date with the history. Only a change in what the history
    /// references derives it again; the front end hears what entered or left, and the model
    /// is told which capabilities the token budget sent away.
    pub(super) async fn refresh_tools(&mut self) -> Result<(), StoreError> {
        if self.step_tools.pinned.is_none() {
            let stored = self
                .services
                .store
                .call(|db| db.pinned_capabilities())
                .await?
                .iter()
                .map(|c| CapSpec::new(&c.name, c.version, &c.description, c.input_schema.clone()))
                .collect();
            self.step_tools.pinned = Some(stored);
        }
        let generation = (self.caps.generation(), self.mcp_generation());
        if self.step_tools.tools_generation == Some(generation) {
            return Ok(());
        }
        self.step_tools.tools_generation = Some(generation);
        let (derived, offer) = derive_step(&StepSources {
            registry: &self.tools,
            mcp: self.mcp.as_ref(),
            pinned: self.step_tools.pinned.as_deref().unwrap_or_default(),
            refs: &self.caps,
            mcp_budget: self.settings.mcp_max_tool_tokens,
            capability_budget: self.settings.max_tool_tokens,
        });
        self.step_tools.toolset_mcp = Arc::new(offer);
        if derived == *self.step_tools.toolset {
            return Ok(());
        }
        let before: HashSet<&str> = self.step_tools.toolset.dynamic_names().collect();
        let after: HashSet<&str> = derived.dynamic_names().collect();
        let added: Vec<String> = derived
            .dynamic_names()
            .filter(|n| !before.contains(n))
            .map(String::from)
            .collect();
        let removed: Vec<String> = self
            .step_tools
            .toolset
            .dynamic_names()
            .filter(|n| !after.contains(n))
            .map(String::from)
            .collect();
        let pushed_out: Vec<String> = derived
            .evicted
            .iter()
            .filter(|name| !self.step_tools.toolset.evicted.contains(name))
            .map(|name| capabilities::tool_name(name))
            .collect();
        // Tools registered after the session was assembled (skills) count from here on.
        self.step_tools.static_tool_tokens = spec_tokens(&derived.specs[..derived.static_count]);
        self.step_tools.tool_tokens = self.step_tools.static_tool_tokens
            + spec_tokens(&self.step_tools.toolset_mcp.specs)
            + u64::from(derived.dynamic_tokens);
        self.step_tools.toolset = Arc::new(derived);
        if !added.is_empty() || !removed.is_empty() {
            self.emit(Event::ToolsChanged { added, removed }).await;
        }
        if !pushed_out.is_empty() {
            let note = format!(
                "[mnemo] Your capability tools are over their budget ({} tokens): {} left \
                 your tool list, least recently used first. capability_query brings one \
                 back when you need it.",
                self.settings.max_tool_tokens,
                pushed_out.join(", ")
            );
            self.commit(Message::user_text(note)).await?;
        }
        Ok(())
    }

    /// This step's tools: what it offers and the one way a call of it runs.
    pub(super) fn router(&self) -> StepRouter<'_> {
        StepRouter {
            registry: &self.tools,
            toolset: &self.step_tools.toolset,
            mcp_offer: &self.step_tools.toolset_mcp,
            mcp: self.mcp.as_ref(),
            mcp_budget: self.settings.mcp_max_tool_tokens,
            capabilities: &self.cap_runner,
        }
    }
}

/// The estimated tokens of `specs` as sent.
pub(super) fn spec_tokens(specs: &[crate::llm::ToolSpec]) -> u64 {
    specs
        .iter()
        .map(|spec| {
            let schema = serde_json::to_string(spec).unwrap_or_default();
            u64::from(tokens::estimate_text(&schema))
        })
        .sum()
}
