//! Hooks: the person's commands run on the session's events, in Claude Code's format, so
//! existing hook scripts work unchanged. Before a tool call a hook may allow it, deny it (the
//! model hears why) or ask the person; after it, add feedback; on a submitted prompt, block it
//! or add context; when a turn stops, send the agent on; on a notification and at session
//! start, run. A hook that fails or times out is reported and never stops the session.

mod config;
mod reply;
mod runner;

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use crate::protocol::ApprovalMode;
use futures_util::future::join_all;
use grep_matcher::Matcher;
use grep_regex::RegexMatcher;
use serde_json::{Map, Value, json};

pub use config::{
    CLAUDE_SETTINGS, HookCommand, HooksConfig, MatcherGroup, parse_claude_settings,
    read_claude_settings,
};
pub use reply::{Outcome, Permission};

/// A hook's time limit when its entry names none (Claude Code's too).
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(60);

/// The events hooks run on, by Claude Code's names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HookEvent {
    PreToolUse,
    PostToolUse,
    UserPromptSubmit,
    Stop,
    Notification,
    SessionStart,
}

impl HookEvent {
    const ALL: [HookEvent; 6] = [
        HookEvent::PreToolUse,
        HookEvent::PostToolUse,
        HookEvent::UserPromptSubmit,
        HookEvent::Stop,
        HookEvent::Notification,
        HookEvent::SessionStart,
    ];

    pub fn name(self) -> &'static str {
        match self {
            HookEvent::PreToolUse => "PreToolUse",
            HookEvent::PostToolUse => "PostToolUse",
            HookEvent::UserPromptSubmit => "UserPromptSubmit",
            HookEvent::Stop => "Stop",
            HookEvent::Notification => "Notification",
            HookEvent::SessionStart => "SessionStart",
        }
    }

    fn parse(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|event| event.name() == name)
    }
}

/// Claude Code's name for a mnemo tool, so a `Bash` or `Edit|Write` matcher and a script that
/// checks `tool_name` work unchanged. Tools without a counterpart keep their own name.
pub fn claude_tool_name(tool: &str) -> Option<&'static str> {
    Some(match tool {
        "shell" => "Bash",
        "read_file" => "Read",
        "write_file" => "Write",
        "edit_file" => "Edit",
        "glob" => "Glob",
        "grep" => "Grep",
        "list_dir" => "LS",
        _ => return None,
    })
}

struct Group {
    /// `None` matches everything.
    matcher: Option<RegexMatcher>,
    commands: Vec<(String, Duration)>,
}

impl Group {
    fn matches(&self, subjects: &[&str]) -> bool {
        match &self.matcher {
            None => true,
            Some(matcher) => subjects
                .iter()
                .any(|s| matcher.is_match(s.as_bytes()).unwrap_or(false)),
        }
    }
}

/// The hooks of one session, from every source the person's trust allows.
pub struct Hooks {
    groups: Vec<(HookEvent, Group)>,
    workspace: PathBuf,
    /// Variables hooks do not get: the model providers' keys (a hook has no use for them).
    withheld: Vec<String>,
}

impl std::fmt::Debug for Hooks {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Hooks")
            .field("groups", &self.groups.len())
            .finish()
    }
}

impl Hooks {
    /// The hooks of `sources` (where each came from, and what it holds), with a note for the
    /// person for each entry that cannot run.
    pub fn build(workspace: PathBuf, sources: &[(String, HooksConfig)]) -> (Self, Vec<String>) {
        let mut groups = Vec::new();
        let mut notes = Vec::new();
        for (origin, config) in sources {
            for (name, entries) in config {
                let Some(event) = HookEvent::parse(name) else {
                    notes.push(format!(
                        "hooks of {origin}: mnemo has no event `{name}`; its hooks do not run \
                         (events: {})",
                        HookEvent::ALL.map(HookEvent::name).join(", ")
                    ));
                    continue;
                };
                for entry in entries {
                    match compile(entry) {
                        Ok(group) => groups.push((event, group)),
                        Err(why) => notes.push(format!("hooks of {origin}, {name}: {why}")),
                    }
                }
            }
        }
        let withheld = Vec::new();
        (
            Self {
                groups,
                workspace,
                withheld,
            },
            notes,
        )
    }

    /// Hooks run without these variables in their environment.
    pub fn withhold(mut self, vars: &[String]) -> Self {
        self.withheld = vars.to_vec();
        self
    }

    /// Whether any hook runs on `event`.
    pub fn has(&self, event: HookEvent) -> bool {
        self.groups.iter().any(|(e, _)| *e == event)
    }

    /// Runs the hooks of `event` whose matcher fits one of `subjects` (a tool's names, a
    /// session's source), all at once, with `fields` and the common ones on stdin.
    pub async fn run(
        &self,
        event: HookEvent,
        subjects: &[&str],
        session_id: &str,
        mode: ApprovalMode,
        fields: Map<String, Value>,
    ) -> Outcome {
        let commands: Vec<&(String, Duration)> = self
            .groups
            .iter()
            .filter(|(e, group)| *e == event && group.matches(subjects))
            .flat_map(|(_, group)| &group.commands)
            .collect();
        if commands.is_empty() {
            return Outcome::default();
        }
        let mut input = json!({
            "session_id": session_id,
            "cwd": self.workspace,
            "permission_mode": permission_mode(mode),
            "hook_event_name": event.name(),
        });
        if let Value::Object(map) = &mut input {
            map.extend(fields);
        }
        let input = input.to_string().into_bytes();
        let runs = commands.iter().map(|(command, limit)| async {
            let ran = runner::run(command, &self.workspace, &self.withheld, &input, *limit).await;
            (command.as_str(), ran)
        });
        let mut outcome = Outcome::default();
        for (command, ran) in join_all(runs).await {
            outcome.add(event, command, ran);
        }
        outcome
    }
}

/// The approval mode under Claude Code's name for the nearest of its permission modes, as its
/// hook scripts compare it.
fn permission_mode(mode: ApprovalMode) -> &'static str {
    match mode {
        ApprovalMode::ReadOnly => "plan",
        ApprovalMode::Ask => "default",
        ApprovalMode::Auto => "acceptEdits",
        ApprovalMode::Full => "bypassPermissions",
    }
}

fn compile(entry: &MatcherGroup) -> Result<Group, String> {
    let matcher = match entry.matcher.as_deref().map(str::trim) {
        None | Some("" | "*") => None,
        Some(pattern) => Some(
            RegexMatcher::new(&format!("^(?:{pattern})$"))
                .map_err(|e| format!("matcher `{pattern}` is not a valid pattern: {e}"))?,
        ),
    };
    let mut commands = Vec::new();
    for hook in &entry.hooks {
        if hook.kind != "command" {
            return Err(format!(
                "hooks of type `{}` are not supported (only `command`)",
                hook.kind
            ));
        }
        if hook.command.trim().is_empty() {
            return Err("a hook has no command".into());
        }
        let limit = hook.timeout.map_or(DEFAULT_TIMEOUT, Duration::from_secs);
        commands.push((hook.command.clone(), limit.max(Duration::from_millis(100))));
    }
    Ok(Group { matcher, commands })
}

/// `input` as Claude Code's tools take it: an absolute `file_path` beside mnemo's `path`.
pub fn claude_tool_input(tool: &str, input: &Value, workspace: &std::path::Path) -> Value {
    let mut input = input.clone();
    if matches!(tool, "read_file" | "write_file" | "edit_file")
        && let Value::Object(map) = &mut input
        && let Some(path) = map.get("path").and_then(Value::as_str)
    {
        let absolute = workspace.join(path).display().to_string();
        map.insert("file_path".into(), Value::String(absolute));
    }
    input
}

/// The shared handle a session and its tools hold.
pub type SharedHooks = Arc<Hooks>;

#[cfg(test)]
#[path = "tests.rs"]
mod tests;
