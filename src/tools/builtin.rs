//! The static tool set every session starts with: file reading and writing, search, shell.

use super::ToolRegistry;
use super::fs_read::{ListDir, ReadFile};
use super::fs_write::{EditFile, WriteFile};
use super::search::{Glob, Grep};
use super::shell::Shell;

/// A registry holding the seven built-in tools.
pub fn builtin_tools() -> ToolRegistry {
    let mut registry = ToolRegistry::new();
    registry.register(ReadFile);
    registry.register(ListDir);
    registry.register(WriteFile);
    registry.register(EditFile);
    registry.register(Glob);
    registry.register(Grep);
    registry.register(Shell::default());
    registry.register(super::web_fetch::WebFetch);
    registry
}

#[cfg(test)]
pub(crate) mod test_support {
    use std::path::{Path, PathBuf};
    use std::time::Duration;

    use serde_json::Value;
    use tokio_util::sync::CancellationToken;

    use crate::tools::{Tool, ToolContext, ToolError};

    pub type TestResult = Result<(), Box<dyn std::error::Error>>;

    /// A temporary, canonical workspace; keep the `TempDir` alive for the test.
    pub fn workspace() -> std::io::Result<(tempfile::TempDir, PathBuf)> {
        let dir = tempfile::tempdir()?;
        let ws = dir.path().canonicalize()?.join("ws");
        std::fs::create_dir(&ws)?;
        Ok((dir, ws))
    }

    pub fn context(workspace: &Path) -> ToolContext {
        ToolContext::new(
            workspace.to_path_buf(),
            "session",
            "call",
            CancellationToken::new(),
            Duration::from_secs(30),
            None,
            crate::tools::approvals::detached(),
        )
    }

    pub async fn call(tool: &dyn Tool, ws: &Path, input: Value) -> Result<String, ToolError> {
        tool.call(input, &context(ws)).await
    }

    /// The message of an expected error; an unexpected success fails the test.
    pub fn error_text<T: std::fmt::Debug>(result: Result<T, ToolError>) -> String {
        match result {
            Ok(value) => panic!("expected an error, got {value:?}"),
            Err(e) => e.to_string(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::Value;

    fn names(value: Option<&Value>) -> Vec<String> {
        let mut names: Vec<String> = match value {
            Some(Value::Object(map)) => map.keys().cloned().collect(),
            Some(Value::Array(items)) => items
                .iter()
                .filter_map(|v| v.as_str().map(String::from))
                .collect(),
            _ => Vec::new(),
        };
        names.sort();
        names
    }

    #[test]
    fn schemas_have_the_documented_properties_and_only_mandatory_ones_required() {
        let expected: [(&str, &[&str], &[&str]); 7] = [
            ("read_file", &["limit", "offset", "path"], &["path"]),
            ("list_dir", &["path"], &[]),
            ("write_file", &["content", "path"], &["content", "path"]),
            (
                "edit_file",
                &["new_string", "old_string", "path"],
                &["new_string", "old_string", "path"],
            ),
            ("glob", &["path", "pattern"], &["pattern"]),
            (
                "grep",
                &["case_insensitive", "glob", "path", "pattern"],
                &["pattern"],
            ),
            (
                "shell",
                &["command", "escalation", "timeout_secs"],
                &["command"],
            ),
        ];
        let registry = builtin_tools();
        for (tool, properties, required) in expected {
            let schema = registry.get(tool).map(|t| t.input_schema());
            let schema = schema.unwrap_or_default();
            assert_eq!(
                names(schema.get("properties")),
                properties,
                "properties of {tool}"
            );
            assert_eq!(
                names(schema.get("required")),
                required,
                "required of {tool}"
            );
        }
    }

    #[test]
    fn every_property_has_a_description_and_only_changing_tools_mutate() {
        let registry = builtin_tools();
        assert_eq!(registry.names().len(), 8);
        for name in registry.names() {
            let Some(tool) = registry.get(&name) else {
                panic!("{name} is listed but not found");
            };
            assert!(!tool.description().is_empty());
            let schema = tool.input_schema();
            let Some(properties) = schema["properties"].as_object() else {
                panic!("{name} has no properties");
            };
            for (property, spec) in properties {
                assert!(spec.get("description").is_some(), "{name}.{property}");
            }
            let mutates = matches!(name.as_str(), "write_file" | "edit_file" | "shell");
            assert_eq!(tool.mutates(), mutates, "{name}");
        }
    }
}
