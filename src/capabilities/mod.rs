//! Capabilities: small programs the agent writes for itself, kept in the store, and offered as
//! `cap_*` tools while the working history references them. Nothing loads or unloads a
//! capability: a `capability_query` or `capability_create` result in the history is what
//! brings one into the tool list, and compaction dropping that result is what takes it out
//! (see `refs` for the index of references and `toolset` for the pure function from history
//! to tool list).

pub mod refs;
pub mod toolset;
pub mod validate;

use serde_json::{Value, json};

use crate::llm::ToolSpec;

pub use refs::CapabilityRefs;
pub use toolset::{ToolSet, derive};

/// The static tools that search, make, show and remove capabilities.
pub const QUERY: &str = "capability_query";
pub const CREATE: &str = "capability_create";
pub const INSPECT: &str = "capability_inspect";
pub const REMOVE: &str = "capability_remove";

/// Prefix of the dynamic tools.
const PREFIX: &str = "cap_";

/// Hex digits of a code hash as people are shown it (`mnemo capabilities show`, questions).
const HASH_DIGITS: usize = 16;

/// The start of the SHA-256 of `code`: what names one version's code to a person.
pub fn code_hash(code: &str) -> String {
    let mut hex = crate::config::trust::fingerprint(code.as_bytes());
    hex.truncate(HASH_DIGITS);
    hex
}

/// The tool that runs capability `name` (`sha256-hash` → `cap_sha256_hash`). Names hold only
/// `[a-z0-9-]`, so the mapping is exact both ways.
pub fn tool_name(name: &str) -> String {
    format!("{PREFIX}{}", name.replace('-', "_"))
}

/// The capability a `cap_*` tool runs, or `None` for any other tool name.
pub fn capability_name(tool: &str) -> Option<String> {
    let rest = tool.strip_prefix(PREFIX)?;
    let valid = !rest.is_empty()
        && rest
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_');
    valid.then(|| rest.replace('_', "-"))
}

/// One capability as the tool list offers it: which version, and its tool spec.
#[derive(Debug, Clone, PartialEq)]
pub struct CapSpec {
    pub name: String,
    pub version: u32,
    pub tool: ToolSpec,
    /// Estimated tokens of the spec as sent.
    pub tokens: u32,
}

impl CapSpec {
    pub fn new(name: &str, version: u32, description: &str, input_schema: Value) -> Self {
        let tool = ToolSpec {
            name: tool_name(name),
            description: format!("[capability] {description}").into(),
            input_schema: input_schema.into(),
        };
        let tokens =
            crate::llm::tokens::estimate_text(&serde_json::to_string(&tool).unwrap_or_default());
        Self {
            name: name.to_string(),
            version,
            tool,
            tokens,
        }
    }

    /// Reads one item of a query or create result (see [`item_json`]).
    fn from_item(item: &Value) -> Option<Self> {
        let name = item.get("name")?.as_str()?;
        validate::name(name).ok()?;
        let version = u32::try_from(item.get("version")?.as_u64()?).ok()?;
        let description = item.get("description")?.as_str()?;
        let schema = item.get("input_schema")?;
        schema.is_object().then_some(())?;
        Some(Self::new(name, version, description, schema.clone()))
    }
}

/// How a capability is described in a `capability_query` or `capability_create` result: what
/// the history holds, and so what the tool list is derived from.
pub fn item_json(
    name: &str,
    version: u32,
    description: &str,
    language: &str,
    tags: &[String],
    input_schema: &Value,
) -> Value {
    json!({
        "name": name,
        "tool": tool_name(name),
        "version": version,
        "description": description,
        "language": language,
        "tags": tags,
        "input_schema": input_schema,
    })
}

/// One line for people: "tools: + cap_a, cap_b · − cap_c".
pub fn describe_change(added: &[String], removed: &[String]) -> String {
    let mut parts = Vec::new();
    if !added.is_empty() {
        parts.push(format!("+ {}", summarised(added)));
    }
    if !removed.is_empty() {
        parts.push(format!("− {}", summarised(removed)));
    }
    format!("tools: {}", parts.join(" · "))
}

/// Tool names for a notice: more than three tools of one MCP server are counted, not named.
fn summarised(names: &[String]) -> String {
    let server_of = |name: &str| {
        name.strip_prefix("mcp__")
            .and_then(|rest| rest.split_once("__"))
            .map(|(server, _)| server.to_string())
    };
    let mut parts: Vec<String> = Vec::new();
    let mut counted: Vec<String> = Vec::new();
    for name in names {
        let Some(server) = server_of(name) else {
            parts.push(name.clone());
            continue;
        };
        let count = names
            .iter()
            .filter(|n| server_of(n).as_deref() == Some(server.as_str()))
            .count();
        if count <= 3 {
            parts.push(name.clone());
        } else if !counted.contains(&server) {
            parts.push(format!("{count} tools of MCP server {server}"));
            counted.push(server);
        }
    }
    parts.join(", ")
}

/// The capability a successful `capability_remove` result took away (`{"removed": name}`):
/// from that message on it leaves the tool list, unless a later result names it again.
pub fn removed(tool: &str, result: &str) -> Option<String> {
    if tool != REMOVE {
        return None;
    }
    let value = serde_json::from_str::<Value>(result).ok()?;
    let name = value.get("removed")?.as_str()?;
    validate::name(name).ok().map(|()| name.to_string())
}

/// The capabilities a successful result of `tool` brings into the tool list, in the order the
/// result names them.
pub fn referenced(tool: &str, result: &str) -> Vec<CapSpec> {
    if tool != QUERY && tool != CREATE {
        return Vec::new();
    }
    let Ok(value) = serde_json::from_str::<Value>(result) else {
        return Vec::new();
    };
    let listed = value.get("capabilities").and_then(Value::as_array);
    let created = value.get("created");
    listed
        .into_iter()
        .flatten()
        .chain(created)
        .filter_map(CapSpec::from_item)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_change_names_few_tools_and_counts_many_of_one_mcp_server() {
        let many: Vec<String> = (0..5).map(|i| format!("mcp__fs__tool{i}")).collect();
        let mut added = vec!["cap_a".to_string(), "mcp__clock__now".to_string()];
        added.extend(many);
        assert_eq!(
            describe_change(&added, &["cap_b".to_string()]),
            "tools: + cap_a, mcp__clock__now, 5 tools of MCP server fs · − cap_b"
        );
    }

    #[test]
    fn tool_names_map_exactly_both_ways() {
        for name in ["sha256-hash", "a", "x2-y-z3", "csv-to-json"] {
            let tool = tool_name(name);
            assert!(tool.starts_with("cap_") && !tool.contains('-'));
            assert_eq!(capability_name(&tool).as_deref(), Some(name));
        }
        assert_eq!(tool_name("sha256-hash"), "cap_sha256_hash");
        for other in ["shell", "cap_", "cap_Bad", "cap_a-b", "capability_query"] {
            assert_eq!(capability_name(other), None, "{other}");
        }
    }

    #[test]
    fn query_and_create_results_reference_capabilities_other_results_do_not() {
        let schema = json!({"type": "object", "properties": {}});
        let item = item_json("sha256-hash", 2, "Hashes text", "python3", &[], &schema);
        let query = json!({"capabilities": [item.clone()]}).to_string();
        let created = json!({"created": item}).to_string();
        for (tool, result) in [(QUERY, &query), (CREATE, &created)] {
            let refs = referenced(tool, result);
            assert_eq!(refs.len(), 1, "{tool}");
            assert_eq!(refs[0].tool.name, "cap_sha256_hash");
            assert_eq!(refs[0].tool.description, "[capability] Hashes text");
            assert_eq!(refs[0].version, 2);
        }
        assert!(referenced("shell", &query).is_empty());
        assert!(referenced(QUERY, "not json").is_empty());
        let bad = json!({"capabilities": [{"name": "Bad Name", "version": 1,
            "description": "", "input_schema": {}}]});
        assert!(referenced(QUERY, &bad.to_string()).is_empty());
    }
}
