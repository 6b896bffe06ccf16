//! Working memory for the task at hand: the model keeps a short checkpoint note with
//! `update_working_checkpoint`; it rides at the end of every request of the turn (after the
//! history, so the cached prefix stays untouched) and so survives compaction. Every
//! `checkpoint_every` steps the same place carries a nudge to update it and rethink the
//! approach.

use std::sync::Arc;

use schemars::JsonSchema;
use serde::Deserialize;

use super::Session;
use crate::llm::{ContentBlock, Message, Role};
use crate::tools::{ToolContext, ToolError, TypedTool};

/// Longest checkpoint kept, in characters.
const MAX_CHARS: usize = 2000;

pub struct UpdateWorkingCheckpoint;

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CheckpointArgs {
    /// What matters for the task now: goal, facts verified, what is done, what is next.
    pub key_info: String,
    /// The skill this work follows, if any.
    pub related_skill: Option<String>,
}

impl TypedTool for UpdateWorkingCheckpoint {
    type Args = CheckpointArgs;
    const NAME: &'static str = "update_working_checkpoint";
    const DESCRIPTION: &'static str = "Keep a short note of what matters for the task at hand; \
        it is shown to you at the end of every request of this turn, even after compaction.";
    const MUTATES: bool = false;

    async fn run(&self, args: CheckpointArgs, _ctx: &ToolContext) -> Result<String, ToolError> {
        match args.key_info.trim().is_empty() {
            true => Err(ToolError::Failed("key_info is empty".into())),
            false => Ok("checkpoint saved".into()),
        }
    }
}

/// The checkpoint the model last saved in this turn.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Checkpoint {
    pub key_info: String,
    pub related_skill: Option<String>,
}

impl Session {
    /// Takes the checkpoint of the last assistant message's successful calls, if any.
    pub(super) fn note_checkpoint(&mut self) {
        let saved = self.succeeded_calls(UpdateWorkingCheckpoint::NAME);
        let last = saved
            .into_iter()
            .filter_map(|input| serde_json::from_value::<CheckpointArgs>(input).ok())
            .next_back();
        if let Some(args) = last {
            let key_info = crate::text::clip(args.key_info.trim(), MAX_CHARS);
            self.checkpoint = Some(Checkpoint {
                key_info,
                related_skill: args.related_skill,
            });
        }
    }

    /// The arguments of the last step's calls of `tool` that succeeded, in order.
    pub(super) fn succeeded_calls(&self, tool: &str) -> Vec<serde_json::Value> {
        let Some((calls, results)) = self
            .history
            .len()
            .checked_sub(2)
            .map(|at| (&self.history[at], &self.history[at + 1]))
        else {
            return Vec::new();
        };
        calls
            .tool_calls()
            .filter(|call| call.name == tool)
            .filter(|call| {
                results.content.iter().any(|block| {
                    matches!(block, ContentBlock::ToolResult { tool_use_id, is_error: false, .. }
                        if tool_use_id == call.id)
                })
            })
            .map(|call| call.input.clone())
            .collect()
    }

    /// What rides at the end of the request of step `step`: the checkpoint and, every
    /// `checkpoint_every` steps, the nudge.
    pub(super) fn request_tail(&self, step: u32) -> Option<String> {
        let mut tail = Vec::new();
        if let Some(checkpoint) = &self.checkpoint {
            let mut text = format!("[Working checkpoint]\n{}", checkpoint.key_info);
            if let Some(skill) = &checkpoint.related_skill {
                text.push_str(&format!("\n(related skill: {skill})"));
            }
            tail.push(text);
        }
        tail.extend(super::todo::tail_text(&self.todo));
        if self.settings.approvals.planning().is_some() {
            tail.push(super::plan_mode::PLAN_NOTE.to_string());
        }
        let every = self.settings.checkpoint_every;
        if every > 0 && step > 0 && step.is_multiple_of(every) {
            tail.push(format!(
                "[mnemo] {step} steps into this turn: update your working checkpoint \
                 (update_working_checkpoint) and consider whether your approach is working or \
                 another would be shorter."
            ));
        }
        (!tail.is_empty()).then(|| format!("{}\n{}", crate::llm::REMINDER_MARK, tail.join("\n\n")))
    }
}

/// `messages` with `tail` at the very end: added to the last user message (tool results and
/// text may share one), or as a user message of its own.
pub(super) fn with_tail(mut messages: Vec<Arc<Message>>, tail: String) -> Vec<Arc<Message>> {
    let block = ContentBlock::Text { text: tail };
    match messages.last_mut() {
        Some(last) if last.role == Role::User => {
            let mut extended = Message::clone(last);
            extended.content.push(block);
            *last = Arc::new(extended);
        }
        _ => messages.push(Arc::new(Message {
            role: Role::User,
            content: vec![block],
        })),
    }
    messages
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_tail_joins_the_last_user_message_or_stands_alone() {
        let results = Message {
            role: Role::User,
            content: vec![ContentBlock::ToolResult {
                tool_use_id: "c".into(),
                content: "ok".into(),
                is_error: false,
            }],
        };
        let messages = with_tail(vec![Arc::new(results)], "note".into());
        assert_eq!(messages.len(), 1);
        assert_eq!(messages[0].content.len(), 2);
        assert_eq!(messages[0].text(), "note");
        let reply = Message::assistant(vec![ContentBlock::Text { text: "hi".into() }]);
        let messages = with_tail(vec![Arc::new(reply)], "note".into());
        assert_eq!(messages.len(), 2);
        assert_eq!(messages[1].role, Role::User);
    }
}
