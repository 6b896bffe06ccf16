//! The set of tools offered to the model, looked up by name.

use std::sync::Arc;

use serde_json::Value;

use super::truncate::MAX_OUTPUT_BYTES;
use super::{Tool, ToolContext, ToolError};
use crate::llm::ToolSpec;
use crate::text::head_tail;

#[derive(Clone, Default)]
pub struct ToolRegistry {
    tools: Vec<Arc<dyn Tool>>,
    /// Generated once: every model call sends them, and schema generation is not free.
    specs: Arc<[ToolSpec]>,
    /// Whether a provider's own web search may be offered beside these tools.
    server_search: bool,
}

impl ToolRegistry {
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds `tool`, replacing one of the same name.
    pub fn register(&mut self, tool: impl Tool + 'static) {
        let spec = tool.spec();
        let name = spec.name.clone();
        self.tools.retain(|t| t.name() != name);
        self.tools.push(Arc::new(tool));
        // Schemas are generated once per tool; the others are kept as they are.
        self.specs = self
            .specs
            .iter()
            .filter(|s| s.name != name)
            .cloned()
            .chain([spec])
            .collect();
    }

    /// The same tools without those that change anything.
    pub fn read_only(&self) -> ToolRegistry {
        self.keeping(|t| !t.mutates())
    }

    /// The same tools without those that reach the network themselves (`web_fetch`,
    /// `web_search`), for an agent started without network.
    pub fn offline(&self) -> ToolRegistry {
        use super::TypedTool;
        use super::{web_fetch::WebFetch, web_search::WebSearch};
        let mut registry =
            self.keeping(|t| t.name() != WebFetch::NAME && t.name() != WebSearch::NAME);
        registry.server_search = false;
        registry
    }

    /// Lets a provider with a web search of its own offer it (`[web] server_search`).
    pub fn offer_server_search(&mut self, on: bool) {
        self.server_search = on;
    }

    /// Whether a provider's own web search may be offered (never by an `offline` registry).
    pub fn server_search(&self) -> bool {
        self.server_search
    }

    fn keeping(&self, keep: impl Fn(&Arc<dyn Tool>) -> bool) -> ToolRegistry {
        let mut registry = ToolRegistry::new();
        registry.server_search = self.server_search;
        registry.tools = self.tools.iter().filter(|t| keep(t)).cloned().collect();
        registry.specs = self
            .specs
            .iter()
            .filter(|spec| registry.get(&spec.name).is_some())
            .cloned()
            .collect();
        registry
    }

    pub fn get(&self, name: &str) -> Option<&Arc<dyn Tool>> {
        self.tools.iter().find(|t| t.name() == name)
    }

    pub fn names(&self) -> Vec<String> {
        self.tools.iter().map(|t| t.name().to_string()).collect()
    }

    pub fn specs(&self) -> Arc<[ToolSpec]> {
        self.specs.clone()
    }

    /// Runs a tool by name; the output is capped before it reaches the model.
    pub async fn execute(
        &self,
        name: &str,
        input: Value,
        ctx: &ToolContext,
    ) -> Result<String, ToolError> {
        let Some(tool) = self.get(name) else {
            return Err(ToolError::Failed(format!(
                "unknown tool `{name}`; available tools: {}",
                self.names().join(", ")
            )));
        };
        let output = tool.call(input, ctx).await?;
        Ok(head_tail(&output, MAX_OUTPUT_BYTES))
    }
}
