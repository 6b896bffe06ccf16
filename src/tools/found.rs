//! `use_tool`: how the model calls a tool the history found (a capability a
//! `capability_query` or `capability_create` result names, an MCP tool `mcp_tool_search`
//! found). Their schemas are in the messages that found them, not in the tool list, so the
//! tool list stays byte-identical while tools come and go, and so does the cached prompt
//! after it. What `use_tool` can reach is still the step's tool set, derived from the history:
//! a tool leaves when compaction removes the message that found it.

use serde_json::{Value, json};

use super::ToolError;
use crate::llm::ToolSpec;

pub const USE_TOOL: &str = "use_tool";

const DESCRIPTION: &str = "Call a tool found in this conversation: a capability a \
    capability_query or capability_create result names (cap_*), or an MCP tool \
    mcp_tool_search found (mcp__*). `tool` is its name and `arguments` follows the \
    input_schema shown where it was found.";

/// The spec of `use_tool`.
pub fn use_tool_spec() -> ToolSpec {
    ToolSpec {
        name: USE_TOOL.into(),
        description: DESCRIPTION.into(),
        input_schema: json!({
            "type": "object",
            "properties": {
                "tool": {"type": "string", "description": "The found tool's name"},
                "arguments": {"type": "object", "description": "Its arguments"}
            },
            "required": ["tool", "arguments"]
        })
        .into(),
    }
}

/// The tool a `use_tool` call names and its arguments.
pub fn unwrap(input: &Value) -> Result<(&str, &Value), ToolError> {
    let tool = input.get("tool").and_then(Value::as_str);
    let arguments = input.get("arguments").filter(|a| a.is_object());
    match (tool, arguments) {
        (Some(tool), Some(arguments)) => Ok((tool, arguments)),
        _ => Err(ToolError::Failed(format!(
            "{USE_TOOL} takes {{\"tool\": NAME, \"arguments\": {{...}}}}; got {input}"
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_call_names_its_tool_and_arguments_or_is_told_how() {
        let input = json!({"tool": "cap_sha256_hash", "arguments": {"text": "hi"}});
        let (tool, arguments) = unwrap(&input).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(
            (tool, arguments),
            ("cap_sha256_hash", &json!({"text": "hi"}))
        );
        let wrong = json!({"tool": "cap_x", "arguments": "text"});
        let refused = unwrap(&wrong);
        assert!(matches!(refused, Err(ToolError::Failed(m)) if m.contains("\"arguments\"")));
    }
}
