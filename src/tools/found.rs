//! `use_tool`: how the model calls a tool the history found (a capability a
//! `capability_query` or `capability_create` result names, an MCP tool `mcp_tool_search`
//! found) and the built-in tools rarely needed (`Tool::deferred`). Their schemas are in the
//! messages that found them, not in the tool list, so the tool list stays byte-identical while
//! tools come and go, and so does the cached prompt after it; the first request stays small.
//! What `use_tool` can reach is still the step's tool set, derived from the history: a tool
//! leaves when compaction removes the message that found it.

use serde_json::{Value, json};

use super::ToolError;
use crate::llm::ToolSpec;

pub const USE_TOOL: &str = "use_tool";

const DESCRIPTION: &str = "Call a tool that is not in this list: a capability a \
    capability_query or capability_create result names (cap_*), an MCP tool mcp_tool_search \
    found (mcp__*), or one of these, whose schema {\"tool\": NAME} without arguments shows: ";

/// The spec of `use_tool`, naming the `deferred` tools (name and first sentence).
pub fn use_tool_spec(deferred: &[ToolSpec]) -> ToolSpec {
    let listed: Vec<String> = deferred
        .iter()
        .map(|spec| format!("{} ({})", spec.name, first_sentence(&spec.description)))
        .collect();
    ToolSpec {
        name: USE_TOOL.into(),
        description: format!("{DESCRIPTION}{}.", listed.join("; ")).into(),
        input_schema: json!({
            "type": "object",
            "properties": {
                "tool": {"type": "string", "description": "The tool's name"},
                "arguments": {"type": "object", "description": "Its arguments, as its input_schema says"}
            },
            "required": ["tool"]
        })
        .into(),
    }
}

fn first_sentence(text: &str) -> &str {
    let end = text.find(". ").map_or(text.len(), |at| at);
    text[..end].trim_end_matches('.')
}

/// What a `use_tool` call asks.
pub enum Asked<'a> {
    /// Run `tool` with `arguments`.
    Call(&'a str, &'a Value),
    /// Show `tool`'s schema.
    Schema(&'a str),
}

/// The tool a `use_tool` call names and its arguments, if it gave any.
pub fn unwrap(input: &Value) -> Result<Asked<'_>, ToolError> {
    let tool = input.get("tool").and_then(Value::as_str);
    match (tool, input.get("arguments")) {
        (Some(tool), None) => Ok(Asked::Schema(tool)),
        (Some(tool), Some(arguments)) if arguments.is_object() => Ok(Asked::Call(tool, arguments)),
        _ => Err(ToolError::Failed(format!(
            "{USE_TOOL} takes {{\"tool\": NAME, \"arguments\": {{...}}}}; got {input}"
        ))),
    }
}

/// The answer to `use_tool {"tool": NAME}`: the tool's description and schema.
pub fn schema_of(spec: &ToolSpec) -> String {
    json!({
        "tool": spec.name,
        "description": spec.description,
        "input_schema": spec.input_schema,
        "note": format!("call it with {USE_TOOL} {{\"tool\": \"{}\", \"arguments\": {{...}}}}", spec.name),
    })
    .to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_call_names_its_tool_and_arguments_or_is_told_how() {
        let input = json!({"tool": "cap_sha256_hash", "arguments": {"text": "hi"}});
        let Ok(Asked::Call(tool, arguments)) = unwrap(&input) else {
            panic!("not a call");
        };
        assert_eq!(
            (tool, arguments),
            ("cap_sha256_hash", &json!({"text": "hi"}))
        );
        let asking = json!({"tool": "forget"});
        assert!(matches!(unwrap(&asking), Ok(Asked::Schema("forget"))));
        let wrong = json!({"tool": "cap_x", "arguments": "text"});
        let refused = unwrap(&wrong);
        assert!(matches!(refused, Err(ToolError::Failed(m)) if m.contains("\"arguments\"")));
    }
}
