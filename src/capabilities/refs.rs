//! Which messages of the working history reference which capabilities (and which MCP tools
//! `mcp_tool_search` found), kept up to date as messages are appended, cut or dropped, so the
//! tool list never needs a rescan of the whole history.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use serde_json::Value;

use super::{CapSpec, referenced, removed};
use crate::llm::{ContentBlock, Message, Role};

/// The tool that finds tools of MCP servers too large to list; its results bring them in.
pub const MCP_SEARCH: &str = "mcp_tool_search";

#[derive(Debug, Clone, Default)]
pub struct CapabilityRefs {
    /// By message seq: the capabilities that message brought, in the order it named them.
    by_seq: BTreeMap<i64, Vec<Arc<CapSpec>>>,
    /// By message seq: the capabilities that message removed from the store.
    removals: BTreeMap<i64, Vec<String>>,
    /// By message seq: the MCP tools that message's search results named.
    found: BTreeMap<i64, Vec<String>>,
    /// Bumped on every change, so the tool list is derived again only when something moved.
    generation: u64,
}

impl CapabilityRefs {
    pub fn new() -> Self {
        Self::default()
    }

    /// Indexes `message`, stored as `seq`; `previous` is the message before it, whose tool
    /// calls say which tool each of its results answers.
    pub fn observe(&mut self, seq: i64, message: &Message, previous: Option<&Message>) {
        if message.role != Role::User {
            return;
        }
        let mut calls: HashMap<&str, &str> = HashMap::new();
        if let Some(previous) = previous.filter(|m| m.role == Role::Assistant) {
            calls.extend(previous.tool_calls().map(|c| (c.id, c.name)));
        }
        let mut specs = Vec::new();
        let mut gone = Vec::new();
        let mut found = Vec::new();
        for block in &message.content {
            if let ContentBlock::ToolResult {
                tool_use_id,
                content,
                is_error: false,
            } = block
                && let Some(tool) = calls.get(tool_use_id.as_str())
            {
                specs.extend(referenced(tool, content).into_iter().map(Arc::new));
                gone.extend(removed(tool, content));
                found.extend(found_tools(tool, content));
            }
        }
        self.set(seq, specs);
        let found_changed = match found.is_empty() {
            true => self.found.remove(&seq).is_some(),
            false => {
                self.found.insert(seq, found);
                true
            }
        };
        if found_changed {
            self.generation += 1;
        }
        if !gone.is_empty() {
            self.removals.insert(seq, gone);
            self.generation += 1;
        } else if self.removals.remove(&seq).is_some() {
            self.generation += 1;
        }
    }

    /// Replaces what message `seq` references (a message cut by compaction references what its
    /// cut text still holds).
    pub fn set(&mut self, seq: i64, specs: Vec<Arc<CapSpec>>) {
        let changed = match specs.is_empty() {
            true => self.by_seq.remove(&seq).is_some(),
            false => {
                self.by_seq.insert(seq, specs);
                true
            }
        };
        if changed {
            self.generation += 1;
        }
    }

    /// Forgets the messages `seqs` (compaction moved them to the archive).
    pub fn remove(&mut self, seqs: impl IntoIterator<Item = i64>) {
        for seq in seqs {
            let offered = self.by_seq.remove(&seq).is_some();
            let removed = self.removals.remove(&seq).is_some();
            let found = self.found.remove(&seq).is_some();
            if offered || removed || found {
                self.generation += 1;
            }
        }
    }

    pub fn generation(&self) -> u64 {
        self.generation
    }

    /// Every reference, oldest message first.
    pub fn iter(&self) -> impl Iterator<Item = (i64, &CapSpec)> {
        self.by_seq
            .iter()
            .flat_map(|(seq, specs)| specs.iter().map(move |spec| (*seq, spec.as_ref())))
    }

    /// Every removal, oldest message first.
    pub fn removals(&self) -> impl Iterator<Item = (i64, &str)> {
        self.removals
            .iter()
            .flat_map(|(seq, names)| names.iter().map(move |name| (*seq, name.as_str())))
    }

    /// The MCP tools search results found, oldest message first.
    pub fn found_mcp_tools(&self) -> impl Iterator<Item = &str> {
        self.found.values().flatten().map(String::as_str)
    }

    /// How many messages reference any capability.
    pub fn len(&self) -> usize {
        self.by_seq.len()
    }

    pub fn is_empty(&self) -> bool {
        self.by_seq.is_empty()
    }
}

/// The MCP tools a successful result of `tool` (the MCP tool search) brings into the tool list.
pub fn found_tools(tool: &str, result: &str) -> Vec<String> {
    if tool != MCP_SEARCH {
        return Vec::new();
    }
    let Ok(value) = serde_json::from_str::<Value>(result) else {
        return Vec::new();
    };
    value
        .get("tools")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|t| t.get("name").and_then(Value::as_str).map(String::from))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::capabilities::{CREATE, QUERY, item_json};
    use serde_json::json;

    fn call(id: &str, name: &str) -> Message {
        Message::assistant(vec![ContentBlock::ToolUse {
            id: id.into(),
            name: name.into(),
            input: json!({}),
        }])
    }

    fn result(id: &str, content: String, is_error: bool) -> Message {
        Message {
            role: Role::User,
            content: vec![ContentBlock::ToolResult {
                tool_use_id: id.into(),
                content,
                is_error,
            }],
        }
    }

    fn listing(names: &[&str]) -> String {
        let schema = json!({"type": "object"});
        let items: Vec<_> = names
            .iter()
            .map(|n| item_json(n, 1, "d", "bash", &[], &schema))
            .collect();
        json!({ "capabilities": items }).to_string()
    }

    #[test]
    fn results_of_capability_tools_are_indexed_by_the_call_they_answer() {
        let mut refs = CapabilityRefs::new();
        refs.observe(
            1,
            &result("q", listing(&["a", "b"]), false),
            Some(&call("q", QUERY)),
        );
        assert_eq!(
            refs.iter()
                .map(|(_, s)| s.name.as_str())
                .collect::<Vec<_>>(),
            ["a", "b"]
        );
        // The same text answering another tool, or an error, references nothing.
        refs.observe(
            2,
            &result("s", listing(&["c"]), false),
            Some(&call("s", "shell")),
        );
        refs.observe(
            3,
            &result("e", listing(&["d"]), true),
            Some(&call("e", CREATE)),
        );
        assert_eq!(refs.len(), 1);
        let generation = refs.generation();
        refs.remove([1]);
        assert!(refs.is_empty());
        assert!(refs.generation() > generation);
    }
}
