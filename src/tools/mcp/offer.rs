//! Which MCP tools one model step offers: every tool of a server whose tools fit in
//! `mcp.max_tool_tokens`; of a larger server only the tools `mcp_tool_search` found in the
//! working history (they leave with the messages that found them), plus the search tool
//! itself. A pure function of the servers' tools and the history.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use serde_json::{Value, json};

use super::search;
use crate::llm::ToolSpec;
use crate::llm::tokens::estimate_text;
use crate::mcp::McpTool;
use crate::memory::tool_index::ToolIndex;
use crate::text::clip;

/// A server's description of a tool is cut to this many characters.
const MAX_DESCRIPTION_CHARS: usize = 2000;

/// The MCP tools of one step.
#[derive(Default)]
pub struct McpOffer {
    /// The search tool (when a server is deferred), then every listed server's tools, then
    /// the tools found through the history, in the order they were found.
    pub specs: Vec<ToolSpec>,
    offered: HashMap<String, Arc<McpTool>>,
    /// Servers whose tools are found with `mcp_tool_search`, with how many tools each has.
    pub deferred: Vec<(String, usize)>,
    deferred_tools: HashMap<String, Arc<McpTool>>,
    index: Option<ToolIndex>,
}

impl McpOffer {
    /// The offer for `tools` (the ready servers' tools, grouped by server) when the history
    /// found `found` (tool names, oldest first) and a server may take `budget` tokens.
    pub fn build<'a>(
        tools: &[McpTool],
        found: impl IntoIterator<Item = &'a str>,
        budget: u32,
    ) -> Self {
        let mut offer = Self::default();
        let mut listed = Vec::new();
        for (server, tools) in by_server(tools) {
            let specs: Vec<ToolSpec> = tools.iter().map(|t| spec(t)).collect();
            if specs.iter().map(spec_tokens).sum::<u32>() <= budget {
                listed.extend(tools.into_iter().zip(specs));
                continue;
            }
            offer.deferred.push((server.to_string(), tools.len()));
            for tool in tools {
                offer
                    .deferred_tools
                    .insert(tool.name.clone(), Arc::new(tool.clone()));
            }
        }
        if !offer.deferred.is_empty() {
            offer.specs.push(search::spec(&offer.deferred));
            // The server's and the tool's own names are searched like words.
            let words: Vec<(&McpTool, String)> = offer
                .deferred_tools
                .values()
                .map(|t| (t.as_ref(), format!("{} {}", t.server, t.tool)))
                .collect();
            offer.index = ToolIndex::build(
                words
                    .iter()
                    .map(|(t, words)| (t.name.as_str(), words.as_str(), t.description.as_str())),
            )
            .ok();
        }
        for (tool, spec) in listed {
            offer.specs.push(spec);
            offer
                .offered
                .insert(tool.name.clone(), Arc::new(tool.clone()));
        }
        let mut seen = HashSet::new();
        for name in found {
            let Some(tool) = offer.deferred_tools.get(name) else {
                continue;
            };
            if seen.insert(name) {
                offer.specs.push(spec(tool));
                offer.offered.insert(name.to_string(), tool.clone());
            }
        }
        offer
    }

    /// The MCP tool offered as `name` this step.
    pub fn get(&self, name: &str) -> Option<&Arc<McpTool>> {
        self.offered.get(name)
    }

    /// Whether `name` is a tool of a deferred server (offered or not).
    pub fn is_deferred(&self, name: &str) -> bool {
        self.deferred_tools.contains_key(name)
    }

    /// The answer to `mcp_tool_search{query}`: the best matches among the deferred tools.
    pub fn search(&self, input: &Value) -> Result<String, String> {
        search::run(
            self.index.as_ref(),
            &self.deferred_tools,
            &self.deferred,
            input,
        )
    }
}

/// The servers whose tools would take more than `budget` tokens, with their tool counts.
pub fn deferred_servers(tools: &[McpTool], budget: u32) -> Vec<(String, usize)> {
    by_server(tools)
        .into_iter()
        .filter(|(_, tools)| tools.iter().map(|t| spec_tokens(&spec(t))).sum::<u32>() > budget)
        .map(|(server, tools)| (server.to_string(), tools.len()))
        .collect()
}

/// `tools` (grouped by server, as the manager lists them) split by server.
fn by_server(tools: &[McpTool]) -> Vec<(&str, Vec<&McpTool>)> {
    let mut grouped: Vec<(&str, Vec<&McpTool>)> = Vec::new();
    for tool in tools {
        match grouped.last_mut() {
            Some((server, group)) if *server == tool.server => group.push(tool),
            _ => grouped.push((&tool.server, vec![tool])),
        }
    }
    grouped
}

fn spec(tool: &McpTool) -> ToolSpec {
    ToolSpec {
        name: tool.name.clone(),
        description: clip(&tool.description, MAX_DESCRIPTION_CHARS).into(),
        input_schema: tool.input_schema.clone().into(),
    }
}

fn spec_tokens(spec: &ToolSpec) -> u32 {
    estimate_text(&serde_json::to_string(spec).unwrap_or_default())
}

/// A search result naming `names`, as the search tool writes it.
pub(super) fn result_json(tools: &[&McpTool]) -> String {
    let items: Vec<Value> = tools
        .iter()
        .map(|t| {
            json!({"name": t.name, "server": t.server,
                "description": clip(&t.description, 300), "input_schema": t.input_schema})
        })
        .collect();
    json!({
        "tools": items,
        "note": "Call these with use_tool {\"tool\": name, \"arguments\": {...}} as their \
                 input_schema says. They can be called until this result is compacted; \
                 search again then.",
    })
    .to_string()
}

#[cfg(test)]
#[path = "offer_tests.rs"]
mod tests;
