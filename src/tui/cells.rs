//! Transcript cells: the finished pieces of a conversation (user messages, assistant
//! markdown, reasoning, tool calls, notices). A cell renders to logical lines; the same lines
//! go to the terminal's scrollback and, wrapped per width, to the pager.

use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};

use super::reply;
use super::tool_pane::ToolCell;
use crate::protocol::UserMessageKind;

/// How much of a cell to show: the scrollback gets the collapsed form; the pager can expand
/// tool outputs and reasoning.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Detail {
    Collapsed,
    Expanded,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NoticeLevel {
    Info,
    Warning,
    Error,
}

#[derive(Debug, Clone, PartialEq)]
pub enum Cell {
    User {
        text: String,
        kind: UserMessageKind,
        /// The message with its large pastes as chips, shown until the cell is expanded.
        folded: Option<String>,
    },
    Assistant {
        text: String,
    },
    Reasoning {
        text: String,
    },
    Tool(ToolCell),
    Notice {
        level: NoticeLevel,
        text: String,
    },
    /// The agent's plan as it changed.
    Plan {
        items: Vec<crate::protocol::TodoItem>,
    },
}

/// Longest reasoning summary in the collapsed one-line form.
const REASONING_SUMMARY_CHARS: usize = 100;

impl Cell {
    /// Whether the pager can show more of this cell than the collapsed form.
    pub fn is_expandable(&self) -> bool {
        match self {
            Cell::Tool(_) | Cell::Reasoning { .. } => true,
            Cell::User { folded, .. } => folded.is_some(),
            Cell::Assistant { .. } | Cell::Notice { .. } | Cell::Plan { .. } => false,
        }
    }

    /// The cell's lines for a terminal `width` columns wide (a reply's tables and code
    /// frames are laid out for it; other lines are wrapped by the caller).
    pub fn lines(&self, detail: Detail, width: u16) -> Vec<Line<'static>> {
        match self {
            Cell::User { text, kind, folded } => match (folded, detail) {
                (Some(folded), Detail::Collapsed) => user_lines(folded, *kind),
                _ => user_lines(text, *kind),
            },
            Cell::Assistant { text } => reply::lines(text, width),
            Cell::Reasoning { text } => reasoning_lines(text, detail),
            Cell::Tool(tool) => tool.lines(detail),
            Cell::Notice { level, text } => notice_lines(*level, text),
            Cell::Plan { items } => super::todo_panel::plan_lines(items),
        }
    }
}

fn user_lines(text: &str, kind: UserMessageKind) -> Vec<Line<'static>> {
    if let Some(why) = crate::present::written_by_mnemo(kind) {
        let style = Style::default()
            .fg(Color::DarkGray)
            .add_modifier(Modifier::ITALIC);
        return vec![Line::styled(format!("⋯ {why}"), style)];
    }
    let prompt = Style::default()
        .fg(Color::Cyan)
        .add_modifier(Modifier::BOLD);
    let body = Style::default().add_modifier(Modifier::BOLD);
    let mut lines: Vec<Line<'static>> = text
        .lines()
        .enumerate()
        .map(|(n, line)| {
            let lead = if n == 0 { "› " } else { "  " };
            Line::from(vec![
                Span::styled(lead, prompt),
                Span::styled(line.to_string(), body),
            ])
        })
        .collect();
    if lines.is_empty() {
        lines.push(Line::from(Span::styled("› ", prompt)));
    }
    let mark = match kind {
        UserMessageKind::Prompt => None,
        UserMessageKind::Injected => Some("  (injected)"),
        UserMessageKind::Queued => Some("  (queued)"),
        UserMessageKind::Continuation
        | UserMessageKind::StepLimit
        | UserMessageKind::SkillRequest => None,
    };
    if let (Some(mark), Some(first)) = (mark, lines.first_mut()) {
        let style = Style::default()
            .fg(Color::Yellow)
            .add_modifier(Modifier::ITALIC);
        first.spans.push(Span::styled(mark, style));
    }
    lines
}

fn reasoning_lines(text: &str, detail: Detail) -> Vec<Line<'static>> {
    let style = Style::default()
        .fg(Color::DarkGray)
        .add_modifier(Modifier::ITALIC);
    match detail {
        Detail::Collapsed => vec![Line::styled(reasoning_summary(text), style)],
        Detail::Expanded => {
            let mut lines = vec![Line::styled("✻ Thinking", style)];
            lines.extend(text.lines().map(|l| Line::styled(format!("  {l}"), style)));
            lines
        }
    }
}

/// "✻ Thinking: first words…", one line.
pub fn reasoning_summary(text: &str) -> String {
    // Drawn every frame while reasoning streams: read only as many words as are shown.
    let mut words = text.split_whitespace();
    let mut summary = String::new();
    for word in words.by_ref() {
        if !summary.is_empty() {
            summary.push(' ');
        }
        summary.push_str(word);
        if summary.chars().count() >= REASONING_SUMMARY_CHARS {
            break;
        }
    }
    let cut = summary.char_indices().nth(REASONING_SUMMARY_CHARS);
    if let Some((end, _)) = cut {
        summary.truncate(end);
    }
    if cut.is_some() || words.next().is_some() {
        summary.push('…');
    }
    format!("✻ Thinking: {summary}")
}

fn notice_lines(level: NoticeLevel, text: &str) -> Vec<Line<'static>> {
    let (mark, style) = match level {
        NoticeLevel::Info => ("• ", Style::default().fg(Color::DarkGray)),
        NoticeLevel::Warning => ("■ ", Style::default().fg(Color::Yellow)),
        NoticeLevel::Error => ("✗ ", Style::default().fg(Color::Red)),
    };
    text.lines()
        .enumerate()
        .map(|(n, line)| {
            let lead = if n == 0 { mark } else { "  " };
            Line::styled(format!("{lead}{line}"), style)
        })
        .collect()
}

/// A user message as the transcript shows it: its text, then a line per image attached.
pub fn with_images(mut text: String, images: &[String]) -> String {
    for image in images {
        text.push_str(&format!("\n[image: {image}]"));
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text(cell: &Cell, detail: Detail) -> Vec<String> {
        cell.lines(detail, 80)
            .iter()
            .map(|l| l.to_string())
            .collect()
    }

    #[test]
    fn injected_and_queued_messages_are_marked() {
        let injected = Cell::User {
            text: "also check b".into(),
            kind: UserMessageKind::Injected,
            folded: None,
        };
        assert_eq!(
            text(&injected, Detail::Collapsed),
            ["› also check b  (injected)"]
        );
        let queued = Cell::User {
            text: "then c\nand d".into(),
            kind: UserMessageKind::Queued,
            folded: None,
        };
        assert_eq!(
            text(&queued, Detail::Collapsed),
            ["› then c  (queued)", "  and d"]
        );
    }

    #[test]
    fn reasoning_collapses_to_one_line() {
        let cell = Cell::Reasoning {
            text: "first\nsecond".into(),
        };
        assert_eq!(text(&cell, Detail::Collapsed), ["✻ Thinking: first second"]);
        assert_eq!(text(&cell, Detail::Expanded).len(), 3);
    }
}
