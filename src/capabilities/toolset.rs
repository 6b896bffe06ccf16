//! The tool list as a pure function of the history: static tools first in a fixed order, then
//! the MCP servers' tools (chosen by `tools::mcp::McpOffer`), then every capability the working
//! history references (and the pinned ones), in the order they entered, within a token budget
//! that sends the least recently referenced ones out first.

use std::collections::HashMap;
use std::sync::Arc;

use super::{CapSpec, CapabilityRefs};
use crate::llm::ToolSpec;

/// The tools one model step offers.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ToolSet {
    /// Static tools, then MCP tools, then capabilities.
    pub specs: Arc<[ToolSpec]>,
    /// How many of `specs` are static tools.
    pub static_count: usize,
    /// The capabilities offered, by tool name: (capability, version).
    offered: HashMap<String, (String, u32)>,
    /// Capabilities the history references that the budget left out, least recently
    /// referenced first.
    pub evicted: Vec<String>,
    /// Estimated tokens of the capabilities' specs.
    pub dynamic_tokens: u32,
    /// The tool names of the pinned capabilities (offered whatever the history holds).
    pinned: Vec<String>,
}

impl ToolSet {
    /// Only the static tools (shared with the registry, not copied: a daemon holds many
    /// sessions).
    pub fn fixed(static_specs: Arc<[ToolSpec]>) -> Self {
        Self {
            static_count: static_specs.len(),
            specs: static_specs,
            ..Self::default()
        }
    }

    /// The capability and version behind tool `name`, when this step offers it.
    pub fn capability(&self, tool: &str) -> Option<(&str, u32)> {
        self.offered
            .get(tool)
            .map(|(name, version)| (name.as_str(), *version))
    }

    /// Whether tool `name` is a pinned capability's.
    pub fn is_pinned(&self, name: &str) -> bool {
        self.pinned.iter().any(|p| p == name)
    }

    /// The names of the offered tools, in order.
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.specs.iter().map(|s| s.name.as_str())
    }

    /// The names of the MCP tools and capabilities, in order.
    pub fn dynamic_names(&self) -> impl Iterator<Item = &str> {
        self.specs[self.static_count..]
            .iter()
            .map(|s| s.name.as_str())
    }
}

struct Entry<'a> {
    spec: &'a CapSpec,
    first: i64,
    last: i64,
    pinned: bool,
}

/// Builds the tool list: `static_specs` and `mcp_specs` as they are, then `pinned` capabilities and those
/// `refs` holds (the spec of a capability's latest reference wins), ordered by when they
/// entered, while their specs fit in `budget` tokens.
pub fn derive(
    static_specs: &[ToolSpec],
    mcp_specs: &[ToolSpec],
    pinned: &[CapSpec],
    refs: &CapabilityRefs,
    budget: u32,
) -> ToolSet {
    let mut entries: Vec<Entry> = Vec::new();
    let mut index: HashMap<&str, usize> = HashMap::new();
    for spec in pinned {
        index.insert(&spec.name, entries.len());
        entries.push(Entry {
            spec,
            first: i64::MIN,
            last: i64::MAX,
            pinned: true,
        });
    }
    // A removal takes a capability out: only results after it bring it back.
    let mut removed_at: HashMap<&str, i64> = HashMap::new();
    for (seq, name) in refs.removals() {
        removed_at.insert(name, seq);
    }
    for (seq, spec) in refs.iter() {
        if removed_at
            .get(spec.name.as_str())
            .is_some_and(|&at| seq < at)
        {
            continue;
        }
        match index.get(spec.name.as_str()) {
            Some(&at) => {
                let entry = &mut entries[at];
                entry.spec = spec;
                if !entry.pinned {
                    entry.last = seq;
                }
            }
            None => {
                index.insert(&spec.name, entries.len());
                entries.push(Entry {
                    spec,
                    first: seq,
                    last: seq,
                    pinned: false,
                });
            }
        }
    }
    let mut total: u32 = entries.iter().map(|e| e.spec.tokens).sum();
    let mut evicted = Vec::new();
    while total > budget {
        let Some(oldest) = entries
            .iter()
            .enumerate()
            .filter(|(_, e)| !e.pinned)
            .min_by_key(|(_, e)| e.last)
            .map(|(at, _)| at)
        else {
            break;
        };
        let gone = entries.remove(oldest);
        total -= gone.spec.tokens;
        evicted.push(gone.spec.name.clone());
    }
    entries.sort_by_key(|e| e.first);
    let offered = entries
        .iter()
        .map(|e| {
            let value = (e.spec.name.clone(), e.spec.version);
            (e.spec.tool.name.clone(), value)
        })
        .collect();
    let specs = static_specs
        .iter()
        .chain(mcp_specs)
        .cloned()
        .chain(entries.iter().map(|e| e.spec.tool.clone()))
        .collect();
    let pinned = entries
        .iter()
        .filter(|e| e.pinned)
        .map(|e| e.spec.tool.name.clone())
        .collect();
    ToolSet {
        specs,
        static_count: static_specs.len(),
        offered,
        evicted,
        dynamic_tokens: total,
        pinned,
    }
}

#[cfg(test)]
#[path = "toolset_tests.rs"]
mod tests;
