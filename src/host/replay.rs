//! A stored conversation replayed as the events that drew it: every front end that shows a
//! session's past (a resumed TUI, a client attaching through the gateway) gets it from here,
//! so they show the same thing. User messages, reasoning, assistant text, and each tool call
//! with its result; a call that never got a result (the process stopped) finishes as failed.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::llm::server_tool::{ServerBlock, ServerPart};
use crate::llm::{ContentBlock, Role};
use crate::memory::types::StoredMessage;
use crate::protocol::{Event, ToolStatus, UserMessageKind};

/// Messages replayed when a session is resumed; the ones before them are counted, and read
/// in full only when asked (the pager).
pub const RECENT_MESSAGES: usize = 20;

/// What the result of a call that never got one says.
const NO_RESULT: &str = "no result was recorded";

/// A session's history as events, and how many of its messages come before them.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Replay {
    pub events: Vec<Event>,
    /// Messages of the session before the replayed ones.
    pub earlier: u64,
}

/// A tool call waiting for its result.
struct Call {
    id: String,
    name: String,
    asked_at: i64,
}

/// The events of `messages`, in `seq` order.
pub fn events(messages: &[StoredMessage]) -> Vec<Event> {
    let mut events = Vec::new();
    let mut calls: Vec<Call> = Vec::new();
    for stored in messages {
        match stored.message.role {
            Role::Assistant => {
                unanswered(&mut calls, &mut events);
                assistant(stored, &mut calls, &mut events);
            }
            Role::User => user(stored, &mut calls, &mut events),
        }
    }
    unanswered(&mut calls, &mut events);
    events
}

/// The last `keep` messages of `active` (a session's working set, of `total` messages in all)
/// as events, moved forward so that no tool result is cut from its call; the rest are counted
/// as earlier.
pub fn recent(active: &[StoredMessage], total: u64, keep: usize) -> Replay {
    let mut split = active.len().saturating_sub(keep);
    while active.get(split).is_some_and(only_results) {
        split += 1;
    }
    let split = split.min(active.len());
    let archived = total.saturating_sub(active.len() as u64);
    Replay {
        events: events(&active[split..]),
        earlier: archived + split as u64,
    }
}

fn only_results(stored: &StoredMessage) -> bool {
    stored.message.role == Role::User
        && stored
            .message
            .content
            .iter()
            .all(|b| matches!(b, ContentBlock::ToolResult { .. }))
}

fn assistant(stored: &StoredMessage, calls: &mut Vec<Call>, events: &mut Vec<Event>) {
    for block in &stored.message.content {
        match block {
            ContentBlock::Text { text } if !text.trim().is_empty() => {
                events.push(Event::AssistantMessage { text: text.clone() });
            }
            ContentBlock::Thinking { thinking, .. } if !thinking.trim().is_empty() => {
                events.push(Event::ReasoningDelta {
                    text: thinking.clone(),
                });
            }
            ContentBlock::ToolUse { id, name, input } => {
                events.push(Event::ToolCallStarted {
                    call_id: id.clone(),
                    name: name.clone(),
                    arguments: input.clone(),
                });
                calls.push(Call {
                    id: id.clone(),
                    name: name.clone(),
                    asked_at: stored.created_at,
                });
            }
            ContentBlock::Server(server) => server_events(server, events),
            ContentBlock::Text { .. }
            | ContentBlock::Thinking { .. }
            | ContentBlock::ToolResult { .. }
            | ContentBlock::Image(_) => {}
        }
    }
}

fn user(stored: &StoredMessage, calls: &mut Vec<Call>, events: &mut Vec<Event>) {
    let mut texts = Vec::new();
    let mut images = Vec::new();
    for block in &stored.message.content {
        match block {
            ContentBlock::Text { text } => texts.push(text.clone()),
            ContentBlock::Image(image) if image.tool_use_id.is_none() => {
                images.push(image.label());
            }
            ContentBlock::Image(_) => {}
            ContentBlock::ToolResult {
                tool_use_id,
                content,
                is_error,
            } => {
                let call = match calls.iter().position(|c| c.id == *tool_use_id) {
                    Some(index) => calls.remove(index),
                    // A result whose call was compacted away: it is shown on its own.
                    None => {
                        events.push(Event::ToolCallStarted {
                            call_id: tool_use_id.clone(),
                            name: "tool".into(),
                            arguments: Value::Null,
                        });
                        Call {
                            id: tool_use_id.clone(),
                            name: "tool".into(),
                            asked_at: stored.created_at,
                        }
                    }
                };
                let status = if *is_error {
                    ToolStatus::Error
                } else {
                    ToolStatus::Ok
                };
                // The store keeps when the call was asked for and when its result came.
                let duration = (stored.created_at - call.asked_at).max(0);
                events.push(Event::ToolCallFinished {
                    call_id: call.id,
                    name: call.name,
                    status,
                    output: content.clone(),
                    duration_ms: u64::try_from(duration).unwrap_or(0),
                });
            }
            ContentBlock::Thinking { .. }
            | ContentBlock::ToolUse { .. }
            | ContentBlock::Server(_) => {}
        }
    }
    if !texts.is_empty() || !images.is_empty() {
        events.push(Event::UserMessage {
            text: texts.join("\n"),
            kind: stored.kind.unwrap_or(UserMessageKind::Prompt),
            images,
        });
    }
}

/// A provider's own tool call (its call and its result are separate blocks) as a tool pane.
fn server_events(server: &ServerBlock, events: &mut Vec<Event>) {
    match server.part() {
        Some(ServerPart::Call { id, name, input }) => events.push(Event::ToolCallStarted {
            call_id: id.into(),
            name: name.into(),
            arguments: input.clone(),
        }),
        Some(ServerPart::Result {
            tool_use_id,
            name,
            output,
            failed,
        }) => events.push(Event::ToolCallFinished {
            call_id: tool_use_id.into(),
            name: name.into(),
            status: match failed {
                true => ToolStatus::Error,
                false => ToolStatus::Ok,
            },
            output,
            duration_ms: 0,
        }),
        None => {}
    }
}

/// Calls that never got a result finish as failed.
fn unanswered(calls: &mut Vec<Call>, events: &mut Vec<Event>) {
    for call in calls.drain(..) {
        events.push(Event::ToolCallFinished {
            call_id: call.id,
            name: call.name,
            status: ToolStatus::Error,
            output: NO_RESULT.into(),
            duration_ms: 0,
        });
    }
}

#[cfg(test)]
mod tests;
