//! A stored session drawn again when it is resumed: the host replays it as events
//! (`host::replay`, the same events a client attaching through the gateway gets) and they
//! become transcript cells here: user messages, assistant markdown, reasoning, and finished
//! tool cells. The scrollback gets the replayed recent part under a note of how many earlier
//! messages the pager holds; the whole session arrives for the pager once the prompt is ready.

use serde_json::Value;

use super::cells::{Cell, Detail, NoticeLevel};
use super::pager::Pager;
use super::state::AppState;
use super::tool_pane::ToolCell;
use crate::host::replay::Replay;
use crate::protocol::Event;

/// The cells of a stored session and how many messages come before them.
#[derive(Debug, Clone, PartialEq)]
pub struct Restored {
    pub cells: Vec<Cell>,
    /// Messages before these cells: only the pager shows them.
    pub earlier: u64,
}

impl From<Replay> for Restored {
    fn from(replay: Replay) -> Self {
        Restored {
            cells: cells(&replay.events),
            earlier: replay.earlier,
        }
    }
}

/// The cells replayed `events` draw.
pub fn cells(events: &[Event]) -> Vec<Cell> {
    let mut cells = Vec::new();
    let mut reasoning = String::new();
    let mut started: Vec<(String, Value)> = Vec::new();
    for event in events {
        if !matches!(event, Event::ReasoningDelta { .. }) && !reasoning.is_empty() {
            cells.push(Cell::Reasoning {
                text: std::mem::take(&mut reasoning),
            });
        }
        match event {
            Event::UserMessage { text, kind, images } => cells.push(Cell::User {
                text: super::cells::with_images(text.clone(), images),
                kind: *kind,
                folded: None,
            }),
            Event::ReasoningDelta { text } => reasoning.push_str(text),
            Event::AssistantMessage { text } => cells.push(Cell::Assistant { text: text.clone() }),
            Event::ToolCallStarted {
                call_id, arguments, ..
            } => started.push((call_id.clone(), arguments.clone())),
            Event::ToolCallFinished {
                call_id,
                name,
                status,
                output,
                duration_ms,
            } => {
                let arguments = match started.iter().position(|(id, _)| id == call_id) {
                    Some(index) => started.remove(index).1,
                    None => Value::Null,
                };
                cells.push(Cell::Tool(ToolCell {
                    call_id: call_id.clone(),
                    name: name.clone(),
                    arguments,
                    status: *status,
                    output: output.clone(),
                    duration_ms: *duration_ms,
                }));
            }
            // A replay holds only the events of stored messages.
            _ => {}
        }
    }
    if !reasoning.is_empty() {
        cells.push(Cell::Reasoning { text: reasoning });
    }
    cells
}

impl AppState {
    /// Shows a resumed session: a note, then its recent cells, in the scrollback and in the
    /// transcript the pager shows.
    pub fn show_history(&mut self, title: &str, restored: Restored) {
        let Restored { cells, earlier } = restored;
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
        for cell in &cells {
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
    use crate::protocol::{ToolStatus, UserMessageKind};

    #[test]
    fn a_call_and_its_result_become_one_finished_cell() {
        let cells = cells(&[
            Event::UserMessage {
                text: "list it".into(),
                kind: UserMessageKind::Prompt,
                images: Vec::new(),
            },
            Event::ReasoningDelta {
                text: "A listing ".into(),
            },
            Event::ReasoningDelta {
                text: "answers it.".into(),
            },
            Event::AssistantMessage {
                text: "Looking.".into(),
            },
            Event::ToolCallStarted {
                call_id: "c0".into(),
                name: "shell".into(),
                arguments: json!({"command": "ls"}),
            },
            Event::ToolCallFinished {
                call_id: "c0".into(),
                name: "shell".into(),
                status: ToolStatus::Ok,
                output: "a.rs".into(),
                duration_ms: 100,
            },
        ]);
        assert_eq!(cells.len(), 4, "{cells:?}");
        assert!(matches!(&cells[1], Cell::Reasoning { text } if text == "A listing answers it."));
        let Cell::Tool(tool) = &cells[3] else {
            panic!("no tool cell: {cells:?}");
        };
        assert_eq!(
            (tool.name.as_str(), &tool.arguments, tool.output.as_str()),
            ("shell", &json!({"command": "ls"}), "a.rs")
        );
    }
}
