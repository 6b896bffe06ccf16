//! The hooks' configuration in Claude Code's shape, read from `hooks` of a workspace's
//! `.claude/settings.json` and from `[hooks]` of mnemo's config.toml (the same shape in TOML):
//! `{"PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "…",
//! "timeout": 30}]}]}`. Fields Claude Code knows and mnemo does not are ignored.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

/// Event name to its matcher groups.
pub type HooksConfig = BTreeMap<String, Vec<MatcherGroup>>;

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct MatcherGroup {
    /// A regular expression the whole tool name must match; empty or `*` matches every tool.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub matcher: Option<String>,
    pub hooks: Vec<HookCommand>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HookCommand {
    /// Only `command` hooks run; others are reported and skipped.
    #[serde(rename = "type", default = "command_type")]
    pub kind: String,
    #[serde(default)]
    pub command: String,
    /// Seconds before the command is killed; 60 when unset.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout: Option<u64>,
}

fn command_type() -> String {
    "command".into()
}

/// The workspace's Claude Code settings file, which may hold hooks.
pub const CLAUDE_SETTINGS: &str = ".claude/settings.json";

/// A settings file larger than this is not read.
const MAX_SETTINGS_BYTES: usize = 1 << 20;

#[derive(Debug, Deserialize)]
struct ClaudeSettings {
    #[serde(default)]
    hooks: HooksConfig,
}

/// The text of `workspace`'s `.claude/settings.json`, read through the workspace guard (the
/// repository wrote it): `Ok(None)` when there is none.
pub fn read_claude_settings(workspace: &Path) -> Result<Option<(PathBuf, String)>, String> {
    let relative = Path::new(CLAUDE_SETTINGS);
    let confinement = crate::sandbox::Confinement::default();
    match crate::sandbox::workspace_read::read_text(
        workspace,
        relative,
        &confinement,
        MAX_SETTINGS_BYTES,
    ) {
        Ok(None) => Ok(None),
        Ok(Some(file)) if file.truncated => Err(format!(
            "{CLAUDE_SETTINGS} is larger than {MAX_SETTINGS_BYTES} bytes"
        )),
        Ok(Some(file)) => Ok(Some((workspace.join(relative), file.text))),
        Err(reason) => Err(reason.to_string()),
    }
}

/// The hooks of a Claude Code settings file's text.
pub fn parse_claude_settings(text: &str) -> Result<HooksConfig, String> {
    serde_json::from_str::<ClaudeSettings>(text)
        .map(|settings| settings.hooks)
        .map_err(|e| format!("{CLAUDE_SETTINGS} is not valid: {e}"))
}
