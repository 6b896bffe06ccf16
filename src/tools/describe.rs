//! How a tool call is shown to a person, shared by every front end.

use serde_json::Value;

use crate::protocol::AgentActivity;
use crate::text::clip;

/// A sub-agent's activity in a few words: "thinking", "shell cargo test".
pub fn activity(activity: &AgentActivity) -> String {
    match activity {
        AgentActivity::Thinking => "thinking".into(),
        AgentActivity::Responding => "responding".into(),
        AgentActivity::Retrying => "retrying".into(),
        AgentActivity::Tool { name, arguments } => {
            format!("{name} {}", key_argument(name, arguments))
                .trim_end()
                .to_string()
        }
    }
}

/// The argument that says what a call does: the path, the command or the pattern.
pub fn key_argument(name: &str, arguments: &Value) -> String {
    let field = |key: &str| arguments.get(key).and_then(Value::as_str);
    let shown = match name {
        "shell" => field("command").map(str::to_string),
        "glob" | "grep" => field("pattern").map(|p| match field("path") {
            Some(path) => format!("{p}  in {path}"),
            None => p.to_string(),
        }),
        "spawn_agent" => field("prompt").map(str::to_string),
        "fork" => field("task").map(str::to_string),
        "read_agent_output" | "cancel_agent" => field("run_id").map(str::to_string),
        "capability_create" => field("name").map(|n| match field("language") {
            Some(language) => format!("{n} ({language})"),
            None => n.to_string(),
        }),
        "capability_query" | "web_search" => field("query").map(str::to_string),
        "web_fetch" => field("url").map(str::to_string),
        "capability_inspect" | "capability_remove" | "load_skill" | "skill_write"
        | "skill_patch" => field("name").map(str::to_string),
        "read_skill_resource" => field("name").map(|n| match field("path") {
            Some(path) => format!("{n}/{path}"),
            None => n.to_string(),
        }),
        "update_working_checkpoint" => field("key_info").map(str::to_string),
        "todo" => arguments
            .get("items")
            .and_then(Value::as_array)
            .map(|items| format!("{} steps", items.len())),
        "schedule_create" => field("when").map(|w| match field("prompt") {
            Some(prompt) => format!("{w}: {prompt}"),
            None => w.to_string(),
        }),
        "schedule_delete" => arguments.get("id").map(|id| format!("#{id}")),
        _ => field("path")
            .or_else(|| field("command"))
            .or_else(|| field("pattern"))
            .map(str::to_string),
    };
    let shown = shown.unwrap_or_else(|| match arguments {
        Value::Object(map) if map.is_empty() => String::new(),
        Value::Null => String::new(),
        other => other.to_string(),
    });
    let first = shown.lines().next().unwrap_or_default();
    let mut out = clip(first, 120);
    if first.len() < shown.len() && !out.ends_with('…') {
        out.push('…');
    }
    out
}

/// A finished call's result in one line for people, for tools whose result is written for the
/// model (JSON, instructions); `None` means the output itself reads well.
pub fn result_line(name: &str, output: &str) -> Option<String> {
    match name {
        "capability_create" | "capability_query" | "capability_remove" => {
            super::capability::for_people(name, output)
        }
        "schedule_create" => super::schedule::for_people(output),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn capability_and_skill_calls_show_what_they_are_about() {
        let create = json!({"name": "sha256-hash", "language": "python3", "code": "import x"});
        assert_eq!(
            key_argument("capability_create", &create),
            "sha256-hash (python3)"
        );
        let query = json!({"query": "hash a text", "limit": 3});
        assert_eq!(key_argument("capability_query", &query), "hash a text");
        let resource = json!({"name": "deploy", "path": "scripts/run.sh"});
        assert_eq!(
            key_argument("read_skill_resource", &resource),
            "deploy/scripts/run.sh"
        );
        let write = json!({"name": "deploy", "description": "d", "body": "b"});
        assert_eq!(key_argument("skill_write", &write), "deploy");
        let fetch = json!({"url": "https://docs.rs/tokio", "max_chars": 5000});
        assert_eq!(key_argument("web_fetch", &fetch), "https://docs.rs/tokio");
        // A capability's own call shows its arguments.
        let call = json!({"text": "hello"});
        assert_eq!(
            key_argument("cap_sha256_hash", &call),
            r#"{"text":"hello"}"#
        );
    }

    #[test]
    fn schedule_calls_show_when_and_what() {
        let create = json!({"when": "in 2h", "prompt": "check the deploy"});
        assert_eq!(
            key_argument("schedule_create", &create),
            "in 2h: check the deploy"
        );
        assert_eq!(key_argument("schedule_delete", &json!({"id": 3})), "#3");
    }
}
