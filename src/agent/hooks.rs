//! The session's own hook events (`crate::hooks`): SessionStart when it starts,
//! UserPromptSubmit before a prompt opens a turn, Stop when a turn would end. Tool calls'
//! hooks run in the tool path (`tools::hooked`). What a hook reports reaches the front end as
//! `Event::Hook`; what it adds for the model enters the conversation as an injected message.

use serde_json::{Map, Value};

use super::Session;
use crate::hooks::{HookEvent, Outcome};
use crate::protocol::Event;

/// Most times Stop hooks send one turn on.
pub(super) const MAX_STOP_CONTINUATIONS: u32 = 3;

impl Session {
    async fn run_hooks(
        &self,
        event: HookEvent,
        subjects: &[&str],
        fields: Map<String, Value>,
    ) -> Option<Outcome> {
        // A sub-agent's prompt is the model's, and its stop is its parent's business; its
        // tool calls run the tool hooks (`tools::hooked`).
        if self.runs.depth > 0 {
            return None;
        }
        let hooks = self.settings.approvals.hooks()?.clone();
        if !hooks.has(event) {
            return None;
        }
        let mode = self.settings.approvals.mode();
        let outcome = hooks.run(event, subjects, &self.id, mode, fields).await;
        for message in &outcome.notes {
            let event = event.name().to_string();
            self.emit(Event::Hook {
                event,
                message: message.clone(),
            })
            .await;
        }
        Some(outcome)
    }

    /// Runs the SessionStart hooks; what they add reaches the model with the first prompt.
    pub(super) async fn session_start_hooks(&mut self) {
        let source = match self.history.is_empty() {
            true => "startup",
            false => "resume",
        };
        let mut fields = Map::new();
        fields.insert("source".into(), source.into());
        if let Some(outcome) = self
            .run_hooks(HookEvent::SessionStart, &[source], fields)
            .await
        {
            self.hook_context.extend(outcome.context);
        }
    }

    /// Runs the UserPromptSubmit hooks on `prompt`: the texts to add for the model, or why a
    /// hook blocked the prompt.
    pub(super) async fn prompt_hooks(&mut self, prompt: &str) -> Result<Vec<String>, String> {
        let mut context = std::mem::take(&mut self.hook_context);
        let mut fields = Map::new();
        fields.insert("prompt".into(), prompt.into());
        let Some(outcome) = self
            .run_hooks(HookEvent::UserPromptSubmit, &[], fields)
            .await
        else {
            return Ok(context);
        };
        if let Some(why) = outcome.block {
            let message = format!("the prompt was blocked: {why}");
            self.emit(Event::Hook {
                event: HookEvent::UserPromptSubmit.name().to_string(),
                message: message.clone(),
            })
            .await;
            return Err(message);
        }
        context.extend(outcome.context);
        Ok(context)
    }

    /// Runs the Stop hooks as the turn would end; `Some(why)` when one sends the agent on.
    pub(super) async fn stop_hooks(&mut self, continued: u32) -> Option<String> {
        let mut fields = Map::new();
        fields.insert("stop_hook_active".into(), Value::Bool(continued > 0));
        let outcome = self.run_hooks(HookEvent::Stop, &[], fields).await?;
        let why = outcome.block?;
        if continued >= MAX_STOP_CONTINUATIONS {
            let message = format!(
                "a Stop hook asked to go on ({why}), but it already did {MAX_STOP_CONTINUATIONS} \
                 times this turn; the turn ends"
            );
            self.emit(Event::Hook {
                event: HookEvent::Stop.name().to_string(),
                message,
            })
            .await;
            return None;
        }
        Some(why)
    }
}
