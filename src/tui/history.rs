//! A stored session turned back into transcript cells when it is resumed: user messages,
//! assistant markdown, reasoning, and finished tool cells built from each tool_use and its
//! tool_result. The scrollback gets the cells of the most recent messages, under a note of
//! how many earlier ones the pager holds. Resuming reads only the working set, so it costs the
//! same however long the session is; the whole session (archived messages included) is read
//! once the prompt is ready and replaces those cells in the pager's transcript.

use serde_json::Value;

use super::cells::{Cell, Detail, NoticeLevel};
use super::pager::Pager;
use super::state::AppState;
use super::tool_pane::ToolCell;
use crate::llm::{ContentBlock, Role};
use crate::memory::types::StoredMessage;
use crate::protocol::{ToolStatus, UserMessageKind};

/// Messages whose cells go to the scrollback on resume.
pub const RECENT_MESSAGES: usize = 20;

/// The cells of a stored session and where its recent part begins.
#[derive(Debug, Clone, PartialEq)]
pub struct Restored {
    pub cells: Vec<Cell>,
    /// The first cell written to the scrollback.
    pub shown_from: usize,
    /// Messages before the recent part: only the pager shows them.
    pub earlier: usize,
}

/// A tool call waiting for its result.
struct Call {
    id: String,
    name: String,
    arguments: Value,
    asked_at: i64,
}

/// Rebuilds the cells of `messages` (in `seq` order); the last `recent` messages, moved
/// forward so that no tool result is cut from its call, are the recent part.
pub fn restore(messages: &[StoredMessage], recent: usize) -> Restored {
    let mut split = messages.len().saturating_sub(recent);
    while messages.get(split).is_some_and(only_results) {
        split += 1;
    }
    let mut cells = Vec::new();
    let mut shown_from = None;
    let mut calls: Vec<Call> = Vec::new();
    for (index, stored) in messages.iter().enumerate() {
        if index == split {
            shown_from = Some(cells.len());
        }
        match stored.message.role {
            Role::Assistant => {
                unanswered(&mut calls, &mut cells);
                for block in &stored.message.content {
                    match block {
                        ContentBlock::Text { text } if !text.trim().is_empty() => {
                            cells.push(Cell::Assistant { text: text.clone() });
                        }
                        ContentBlock::Thinking { thinking, .. } if !thinking.trim().is_empty() => {
                            cells.push(Cell::Reasoning {
                                text: thinking.clone(),
                            });
                        }
                        ContentBlock::ToolUse { id, name, input } => calls.push(Call {
                            id: id.clone(),
                            name: name.clone(),
                            arguments: input.clone(),
                            asked_at: stored.created_at,
                        }),
                        _ => {}
                    }
                }
            }
            Role::User => user_cells(stored, &mut calls, &mut cells),
        }
    }
    unanswered(&mut calls, &mut cells);
    Restored {
        shown_from: shown_from.unwrap_or(cells.len()),
        cells,
        earlier: split.min(messages.len()),
    }
}

/// The cells of a session's working set (`active`), for a session of `total` messages: the
/// archived messages count as earlier ones.
pub fn restore_active(active: &[StoredMessage], total: u64) -> Restored {
    let mut restored = restore(active, RECENT_MESSAGES);
    let archived = total.saturating_sub(active.len() as u64);
    restored.earlier += usize::try_from(archived).unwrap_or(usize::MAX);
    restored
}

fn only_results(stored: &StoredMessage) -> bool {
    stored.message.role == Role::User
        && stored
            .message
            .content
            .iter()
            .all(|b| matches!(b, ContentBlock::ToolResult { .. }))
}

fn user_cells(stored: &StoredMessage, calls: &mut Vec<Call>, cells: &mut Vec<Cell>) {
    let mut texts = Vec::new();
    for block in &stored.message.content {
        match block {
            ContentBlock::Text { text } => texts.push(text.as_str()),
            ContentBlock::ToolResult {
                tool_use_id,
                content,
                is_error,
            } => {
                let call = match calls.iter().position(|c| c.id == *tool_use_id) {
                    Some(index) => calls.remove(index),
                    None => Call {
                        id: tool_use_id.clone(),
                        name: "tool".into(),
                        arguments: Value::Null,
                        asked_at: stored.created_at,
                    },
                };
                let status = if *is_error {
                    ToolStatus::Error
                } else {
                    ToolStatus::Ok
                };
                // The store keeps when the call was asked for and when its result came.
                let duration = (stored.created_at - call.asked_at).max(0);
                cells.push(Cell::Tool(ToolCell {
                    call_id: call.id,
                    name: call.name,
                    arguments: call.arguments,
                    status,
                    output: content.clone(),
                    duration_ms: u64::try_from(duration).unwrap_or(0),
                }));
            }
            ContentBlock::Thinking { .. } | ContentBlock::ToolUse { .. } => {}
        }
    }
    if !texts.is_empty() {
        cells.push(Cell::User {
            text: texts.join("\n"),
            kind: stored.kind.unwrap_or(UserMessageKind::Prompt),
            folded: None,
        });
    }
}

/// Calls that never got a result (the process stopped) become failed tool cells.
fn unanswered(calls: &mut Vec<Call>, cells: &mut Vec<Cell>) {
    for call in calls.drain(..) {
        cells.push(Cell::Tool(ToolCell {
            call_id: call.id,
            name: call.name,
            arguments: call.arguments,
            status: ToolStatus::Error,
            output: "no result was recorded".into(),
            duration_ms: 0,
        }));
    }
}

impl AppState {
    /// Shows a resumed session: a note, then the recent cells in the scrollback; every cell
    /// goes to the transcript the pager shows.
    pub fn show_history(&mut self, title: &str, restored: Restored) {
        let Restored {
            cells,
            shown_from,
            earlier,
        } = restored;
        let title = if title.trim().is_empty() {
            "(untitled)"
        } else {
            title
        };
        let mut text = format!("Resumed session “{title}”");
        if earlier > 0 {
            let noun = if earlier == 1 {
                "message is"
            } else {
                "messages are"
            };
            text.push_str(&format!("\n{earlier} earlier {noun} in the pager (Ctrl+T)"));
        }
        let note = Cell::Notice {
            level: NoticeLevel::Info,
            text,
        };
        self.emit(note.lines(Detail::Collapsed, self.width), true);
        for cell in cells.iter().skip(shown_from) {
            self.emit(cell.lines(Detail::Collapsed, self.width), true);
        }
        self.transcript.extend(cells);
        self.mark_dirty();
    }

    /// The whole session arrived: its cells replace the first `shown` cells of the
    /// transcript (those `show_history` added). An open pager starts over on the new cells.
    pub fn replace_history(&mut self, shown: usize, cells: Vec<Cell>) {
        let shown = shown.min(self.transcript.len());
        self.transcript.splice(..shown, cells);
        if self.pager.is_some() {
            self.pager = Some(Pager::new());
        }
        self.mark_dirty();
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::llm::Message;

    fn stored(seq: i64, message: Message) -> StoredMessage {
        StoredMessage {
            seq,
            message,
            tokens: 1,
            active: true,
            created_at: seq * 100,
            kind: None,
        }
    }

    fn tool_turn(seq: i64) -> Vec<StoredMessage> {
        let id = format!("c{seq}");
        vec![
            stored(seq, Message::user_text(format!("question {seq}"))),
            stored(
                seq + 1,
                Message::assistant(vec![
                    ContentBlock::Text {
                        text: "Looking.".into(),
                    },
                    ContentBlock::ToolUse {
                        id: id.clone(),
                        name: "shell".into(),
                        input: json!({"command": "ls"}),
                    },
                ]),
            ),
            stored(
                seq + 2,
                Message {
                    role: Role::User,
                    content: vec![ContentBlock::ToolResult {
                        tool_use_id: id,
                        content: "a.rs".into(),
                        is_error: false,
                    }],
                },
            ),
        ]
    }

    #[test]
    fn tool_calls_and_results_become_one_finished_cell() {
        let restored = restore(&tool_turn(0), RECENT_MESSAGES);
        assert_eq!(restored.earlier, 0);
        assert_eq!(restored.shown_from, 0);
        assert_eq!(restored.cells.len(), 3);
        let Some(Cell::Tool(tool)) = restored.cells.get(2) else {
            panic!("no tool cell: {:?}", restored.cells);
        };
        assert_eq!(
            (tool.name.as_str(), tool.output.as_str(), tool.duration_ms),
            ("shell", "a.rs", 100)
        );
    }

    #[test]
    fn the_recent_part_never_starts_at_a_tool_result() {
        let messages: Vec<_> = (0..10).flat_map(|n| tool_turn(n * 3)).collect();
        // The last 4 messages start with a result: the recent part starts one later.
        let restored = restore(&messages, 4);
        assert_eq!(restored.earlier, 27);
        assert_eq!(restored.cells.len(), 30);
        assert_eq!(restored.shown_from, 27);
    }

    #[test]
    fn a_call_without_result_is_shown_as_failed() {
        let mut messages = tool_turn(0);
        messages.pop();
        let restored = restore(&messages, RECENT_MESSAGES);
        let Some(Cell::Tool(tool)) = restored.cells.last() else {
            panic!("no tool cell: {:?}", restored.cells);
        };
        assert_eq!(tool.status, ToolStatus::Error);
    }

    #[test]
    fn injected_and_queued_messages_keep_their_mark() {
        let mut injected = stored(0, Message::user_text("also run clippy"));
        injected.kind = Some(UserMessageKind::Injected);
        let plain = stored(1, Message::user_text("hello"));
        let restored = restore(&[injected, plain], RECENT_MESSAGES);
        let kinds: Vec<_> = restored
            .cells
            .iter()
            .map(|cell| match cell {
                Cell::User { kind, .. } => *kind,
                other => panic!("unexpected cell {other:?}"),
            })
            .collect();
        assert_eq!(kinds, [UserMessageKind::Injected, UserMessageKind::Prompt]);
    }
}
