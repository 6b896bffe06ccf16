//! What hooks answered, read as Claude Code reads it: exit 0 goes on (its stdout may be JSON
//! with a decision, or context for the model); exit 2 blocks, and stderr says why; any other
//! end is the hook's own failure, reported to the person and otherwise ignored.

use serde_json::Value;

use super::HookEvent;
use super::runner::Ran;
use crate::text::clip;

/// A pre-tool hook's answer, weakest first: the strongest of all hooks holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Permission {
    /// Runs without the approval question.
    Allow,
    /// Asks the person, whatever the approval mode.
    Ask,
    /// Not run; the model is told why.
    Deny,
}

/// The combined answer of the hooks of one event.
#[derive(Debug, Default)]
pub struct Outcome {
    pub permission: Option<Permission>,
    /// Why a hook blocked (the call, the prompt, the stop), for the model or the person.
    pub block: Option<String>,
    /// Why a hook allowed or asked, for the approval question.
    pub reason: Option<String>,
    /// Text for the model (`additionalContext`, or a prompt hook's plain stdout).
    pub context: Vec<String>,
    /// For the person: failures, timeouts, `systemMessage`s.
    pub notes: Vec<String>,
}

/// Most characters of a hook's text that reach a note.
const NOTE_CHARS: usize = 500;

impl Outcome {
    pub(super) fn add(&mut self, event: HookEvent, command: &str, ran: Result<Ran, String>) {
        let name = event.name();
        let shown = clip(command, 80);
        let ran = match ran {
            Ok(ran) => ran,
            Err(why) => {
                self.notes
                    .push(format!("{name} hook `{shown}` {why}; it was ignored"));
                return;
            }
        };
        match ran.code {
            Some(0) => self.read_stdout(event, &ran.stdout),
            Some(2) => {
                let why = match ran.stderr.is_empty() {
                    true => format!("blocked by {name} hook `{shown}`"),
                    false => ran.stderr,
                };
                self.deny(why);
            }
            code => {
                let code = code.map_or_else(|| "a signal".to_string(), |c| format!("exit {c}"));
                let said = match ran.stderr.is_empty() {
                    true => String::new(),
                    false => format!(": {}", clip(&ran.stderr, NOTE_CHARS)),
                };
                self.notes.push(format!(
                    "{name} hook `{shown}` failed ({code}){said}; it was ignored"
                ));
            }
        }
    }

    fn deny(&mut self, why: String) {
        self.permission = self.permission.max(Some(Permission::Deny));
        self.block = Some(match self.block.take() {
            Some(before) => format!("{before}\n{why}"),
            None => why,
        });
    }

    fn read_stdout(&mut self, event: HookEvent, stdout: &str) {
        let json = match stdout.starts_with('{') {
            true => serde_json::from_str::<Value>(stdout).ok(),
            false => None,
        };
        let Some(json) = json else {
            // Claude Code adds these two events' plain output to the model's context.
            if !stdout.is_empty()
                && matches!(event, HookEvent::UserPromptSubmit | HookEvent::SessionStart)
            {
                self.context.push(stdout.to_string());
            }
            return;
        };
        let text = |value: Option<&Value>| value.and_then(Value::as_str).map(str::to_string);
        if let Some(message) = text(json.get("systemMessage")) {
            self.notes.push(clip(&message, NOTE_CHARS));
        }
        let reason = text(json.get("reason"));
        if json.get("continue") == Some(&Value::Bool(false)) {
            let why = text(json.get("stopReason")).or(reason.clone());
            self.deny(why.unwrap_or_else(|| format!("stopped by a {} hook", event.name())));
        }
        match json.get("decision").and_then(Value::as_str) {
            Some("block" | "deny") => {
                self.deny(reason.unwrap_or_else(|| format!("blocked by a {} hook", event.name())));
            }
            Some("approve" | "allow") => self.decide(Permission::Allow, reason),
            _ => {}
        }
        let Some(specific) = json.get("hookSpecificOutput") else {
            return;
        };
        let reason = text(specific.get("permissionDecisionReason"));
        match specific.get("permissionDecision").and_then(Value::as_str) {
            Some("deny") => {
                self.deny(reason.unwrap_or_else(|| "denied by a PreToolUse hook".to_string()));
            }
            Some("ask") => self.decide(Permission::Ask, reason),
            Some("allow") => self.decide(Permission::Allow, reason),
            _ => {}
        }
        if let Some(context) = text(specific.get("additionalContext")) {
            self.context.push(context);
        }
    }

    fn decide(&mut self, permission: Permission, reason: Option<String>) {
        if self.permission.is_none_or(|held| permission >= held) {
            self.permission = Some(permission);
            if reason.is_some() {
                self.reason = reason;
            }
        }
    }
}
