//! `mcp_tool_search`: finds tools of the servers too large to list, by the words of their
//! names and descriptions. What it returns enters the tool list through the history.

use std::collections::HashMap;
use std::sync::Arc;

use serde_json::{Value, json};

use super::offer::result_json;
use crate::llm::ToolSpec;
use crate::mcp::McpTool;
use crate::memory::tool_index::ToolIndex;

pub use crate::capabilities::refs::MCP_SEARCH as SEARCH;

/// At most this many tools come back from one search.
const LIMIT: usize = 8;

/// The search tool as offered while `deferred` servers (name, tool count) are not listed.
pub(super) fn spec(deferred: &[(String, usize)]) -> ToolSpec {
    let servers: Vec<String> = deferred
        .iter()
        .map(|(server, count)| format!("{server} ({count} tools)"))
        .collect();
    ToolSpec {
        name: SEARCH.to_string(),
        description: format!(
            "Finds tools of MCP servers that have too many to list here: {}. Describe what \
             you need in a few words; call the tools found with use_tool.",
            servers.join(", ")
        )
        .into(),
        input_schema: json!({
            "type": "object",
            "properties": {
                "query": {
                    "type": "string",
                    "description": "What the tool should do, in a few words"
                }
            },
            "required": ["query"],
            "additionalProperties": false
        })
        .into(),
    }
}

pub(super) fn run(
    index: Option<&ToolIndex>,
    tools: &HashMap<String, Arc<McpTool>>,
    deferred: &[(String, usize)],
    input: &Value,
) -> Result<String, String> {
    let Some(query) = input.get("query").and_then(Value::as_str) else {
        return Err(format!(
            "invalid arguments for {SEARCH}: expected {{\"query\": \"a few words\"}}"
        ));
    };
    let Some(index) = index else {
        return Err("no MCP server has tools to search now".to_string());
    };
    let names = index
        .search(query, LIMIT)
        .map_err(|e| format!("the tool search failed: {e}"))?;
    let found: Vec<&McpTool> = names
        .iter()
        .filter_map(|name| tools.get(name).map(Arc::as_ref))
        .collect();
    if found.is_empty() {
        let servers: Vec<&str> = deferred.iter().map(|(s, _)| s.as_str()).collect();
        return Ok(json!({
            "tools": [],
            "note": format!(
                "No tool of {} matches `{query}`; try other words.",
                servers.join(", ")
            ),
        })
        .to_string());
    }
    Ok(result_json(&found))
}
