//! The session picker: this directory's stored sessions, newest first, each with its title
//! (and current topic), when it was last used and how many messages it holds. Typing filters
//! the list; Enter opens the chosen one; Esc closes the picker (or, when mnemo was started
//! with `--resume` and no id, starts a new session). What was typed is never lost: when
//! nothing matches, Enter hands it back to the composer. It shows in the live area.

use crossterm::event::{KeyCode, KeyEvent};
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};

use super::filter::Filter;
use super::wrap::str_width;
use crate::memory::types::SessionRow;

/// Sessions listed at once; the list scrolls to keep the selection in view.
pub const VISIBLE_ROWS: usize = 10;
/// Columns of the "when" and message count columns.
const WHEN_WIDTH: usize = 13;
const COUNT_WIDTH: usize = 15;

/// What Esc does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PickerCancel {
    /// Start a new session (no session runs yet).
    NewSession,
    /// Close the picker and go on with the current session.
    Close,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PickerOutcome {
    Open(String),
    Cancel(PickerCancel),
    /// Enter when nothing matches what was typed: the text was meant for the composer.
    Typed(String),
    Handled,
}

#[derive(Debug, Clone)]
pub struct SessionPicker {
    rows: Vec<SessionRow>,
    filter: Filter,
    /// Indices into `rows` of those the filter lets through.
    visible: Vec<usize>,
    /// Index into `visible`.
    selected: usize,
    /// The moment "when" is measured from, in milliseconds since the epoch.
    now_ms: i64,
    /// The session running now, marked in the list.
    current: Option<String>,
    on_cancel: PickerCancel,
}

impl SessionPicker {
    pub fn new(
        rows: Vec<SessionRow>,
        now_ms: i64,
        current: Option<String>,
        on_cancel: PickerCancel,
    ) -> Self {
        let visible = (0..rows.len()).collect();
        Self {
            rows,
            filter: Filter::default(),
            visible,
            selected: 0,
            now_ms,
            current,
            on_cancel,
        }
    }

    /// What was typed into the filter.
    pub fn typed(&self) -> &str {
        self.filter.query()
    }

    pub fn handle_key(&mut self, key: KeyEvent) -> PickerOutcome {
        let last = self.visible.len().saturating_sub(1);
        match key.code {
            KeyCode::Up => self.selected = self.selected.saturating_sub(1),
            KeyCode::Down => self.selected = (self.selected + 1).min(last),
            KeyCode::PageUp => self.selected = self.selected.saturating_sub(VISIBLE_ROWS),
            KeyCode::PageDown => self.selected = (self.selected + VISIBLE_ROWS).min(last),
            KeyCode::Home => self.selected = 0,
            KeyCode::End => self.selected = last,
            KeyCode::Enter => {
                return match self.visible.get(self.selected) {
                    Some(&index) => PickerOutcome::Open(self.rows[index].id.clone()),
                    None => PickerOutcome::Typed(self.filter.query().to_string()),
                };
            }
            KeyCode::Esc => return PickerOutcome::Cancel(self.on_cancel),
            _ => {
                if self.filter.handle_key(key) {
                    self.refilter();
                }
            }
        }
        PickerOutcome::Handled
    }

    fn refilter(&mut self) {
        let filter = &self.filter;
        self.visible = (0..self.rows.len())
            .filter(|&i| {
                let row = &self.rows[i];
                let subtitle = row.subtitle.as_deref().unwrap_or_default();
                filter.matches(&format!("{} {subtitle}", row.title))
            })
            .collect();
        self.selected = 0;
    }

    /// A header, the visible rows (the selected one highlighted) and a key hint.
    pub fn lines(&self, width: u16) -> Vec<Line<'static>> {
        let width = usize::from(width);
        let dim = Style::default().fg(Color::DarkGray);
        let title = Style::default()
            .fg(Color::Cyan)
            .add_modifier(Modifier::BOLD);
        let position = match self.visible.is_empty() {
            true => format!("  none of {} match", self.rows.len()),
            false => format!("  {} of {}", self.selected + 1, self.visible.len()),
        };
        let mut lines = vec![
            Line::default(),
            Line::from(vec![
                Span::styled("Resume a session", title),
                Span::styled(position, dim),
            ]),
        ];
        if !self.filter.query().is_empty() {
            lines.push(Line::from(vec![
                Span::styled("  filter: ", dim),
                Span::raw(self.filter.query().to_string()),
            ]));
        }
        let first = self
            .selected
            .saturating_sub(VISIBLE_ROWS - 1)
            .min(self.visible.len().saturating_sub(VISIBLE_ROWS));
        for (slot, &index) in self
            .visible
            .iter()
            .enumerate()
            .skip(first)
            .take(VISIBLE_ROWS)
        {
            lines.push(self.row_line(&self.rows[index], slot == self.selected, width));
        }
        let esc = match self.on_cancel {
            PickerCancel::NewSession => "new session",
            PickerCancel::Close => "close",
        };
        lines.push(Line::styled(
            format!("type to filter · ↑↓ choose · Enter open · Esc {esc}"),
            dim,
        ));
        lines
    }

    fn row_line(&self, row: &SessionRow, selected: bool, width: usize) -> Line<'static> {
        let (mark, base) = if selected {
            ("› ", Style::default().fg(Color::Black).bg(Color::Cyan))
        } else {
            ("  ", Style::default())
        };
        let dim = if selected {
            base
        } else {
            Style::default().fg(Color::DarkGray)
        };
        let mut title = if row.title.trim().is_empty() {
            "(untitled)".to_string()
        } else {
            row.title.clone()
        };
        if self.current.as_deref() == Some(row.id.as_str()) {
            title.push_str(" (current)");
        }
        let subtitle = row
            .subtitle
            .as_deref()
            .filter(|s| !s.trim().is_empty())
            .map(|s| format!(" — {s}"))
            .unwrap_or_default();
        let text_width = width.saturating_sub(2 + WHEN_WIDTH + COUNT_WIDTH).max(8);
        let title = fit(&title, text_width);
        let subtitle = fit(&subtitle, text_width - str_width(&title));
        let pad = text_width - str_width(&title) - str_width(&subtitle);
        let count = match row.message_count {
            1 => "1 message".to_string(),
            n => format!("{n} messages"),
        };
        Line::from(vec![
            Span::styled(mark, base.add_modifier(Modifier::BOLD)),
            Span::styled(title, base.add_modifier(Modifier::BOLD)),
            Span::styled(format!("{subtitle}{}", " ".repeat(pad)), dim),
            Span::styled(
                format!("{:>WHEN_WIDTH$}", ago(self.now_ms, row.updated_at)),
                dim,
            ),
            Span::styled(format!("{count:>COUNT_WIDTH$}"), dim),
        ])
    }
}

/// `text` cut to `width` columns, with an ellipsis when cut.
fn fit(text: &str, width: usize) -> String {
    if str_width(text) <= width {
        return text.to_string();
    }
    let mut out = String::new();
    let mut used = 0;
    for c in text.chars() {
        let w = str_width(c.encode_utf8(&mut [0u8; 4]));
        if used + w + 1 > width {
            break;
        }
        out.push(c);
        used += w;
    }
    if width > 0 {
        out.push('…');
    }
    out
}

/// "just now", "5 min ago", "3 h ago", "2 days ago", or the date for older sessions.
pub fn ago(now_ms: i64, then_ms: i64) -> String {
    let minutes = (now_ms - then_ms).max(0) / 60_000;
    match minutes {
        0 => "just now".to_string(),
        1..60 => format!("{minutes} min ago"),
        60..1440 => format!("{} h ago", minutes / 60),
        1440..2880 => "yesterday".to_string(),
        2880..20160 => format!("{} days ago", minutes / 1440),
        _ => chrono::DateTime::from_timestamp_millis(then_ms)
            .map(|t| {
                t.with_timezone(&chrono::Local)
                    .format("%Y-%m-%d")
                    .to_string()
            })
            .unwrap_or_default(),
    }
}

#[cfg(test)]
mod tests {
    use crossterm::event::KeyModifiers;

    use super::*;

    fn row(id: &str) -> SessionRow {
        SessionRow {
            id: id.into(),
            parent_id: None,
            created_at: 0,
            updated_at: 0,
            cwd: "/w".into(),
            title: id.into(),
            subtitle: None,
            model: "m".into(),
            status: "active".into(),
            message_count: 2,
        }
    }

    fn key(code: KeyCode) -> KeyEvent {
        KeyEvent::new(code, KeyModifiers::NONE)
    }

    #[test]
    fn keys_move_the_selection_and_enter_opens_it() {
        let rows = (0..15).map(|n| row(&format!("s{n}"))).collect();
        let mut picker = SessionPicker::new(rows, 0, None, PickerCancel::Close);
        picker.handle_key(key(KeyCode::Down));
        picker.handle_key(key(KeyCode::PageDown));
        assert_eq!(
            picker.handle_key(key(KeyCode::Enter)),
            PickerOutcome::Open("s11".into())
        );
        picker.handle_key(key(KeyCode::End));
        picker.handle_key(key(KeyCode::Down));
        assert_eq!(
            picker.handle_key(key(KeyCode::Enter)),
            PickerOutcome::Open("s14".into())
        );
        assert_eq!(
            picker.handle_key(key(KeyCode::Esc)),
            PickerOutcome::Cancel(PickerCancel::Close)
        );
        // Header, ten rows, hint: the selection stays in view.
        let lines = picker.lines(80);
        assert_eq!(lines.len(), 2 + VISIBLE_ROWS + 1);
        assert!(lines[VISIBLE_ROWS + 1].to_string().starts_with("› s14"));
    }

    #[test]
    fn typing_filters_and_enter_without_a_match_hands_the_text_back() {
        let mut rows: Vec<SessionRow> = (0..4).map(|n| row(&format!("s{n}"))).collect();
        rows[2].title = "fix the parser".into();
        let mut picker = SessionPicker::new(rows, 0, None, PickerCancel::Close);
        for c in "parser".chars() {
            picker.handle_key(key(KeyCode::Char(c)));
        }
        let lines: Vec<String> = picker.lines(80).iter().map(|l| l.to_string()).collect();
        assert!(lines[1].contains("1 of 1"), "{lines:?}");
        assert!(lines[2].contains("filter: parser"), "{lines:?}");
        assert_eq!(
            picker.handle_key(key(KeyCode::Enter)),
            PickerOutcome::Open("s2".into())
        );
        for c in " now".chars() {
            picker.handle_key(key(KeyCode::Char(c)));
        }
        assert_eq!(
            picker.handle_key(key(KeyCode::Enter)),
            PickerOutcome::Typed("parser now".into())
        );
    }

    #[test]
    fn times_read_as_how_long_ago() {
        let hour = 3_600_000;
        assert_eq!(ago(10 * hour, 10 * hour - 30_000), "just now");
        assert_eq!(ago(10 * hour, 10 * hour - 5 * 60_000), "5 min ago");
        assert_eq!(ago(10 * hour, 7 * hour), "3 h ago");
        assert_eq!(ago(100 * hour, 70 * hour), "yesterday");
        assert_eq!(ago(100 * hour, 100 * hour - 72 * hour), "3 days ago");
    }

    #[test]
    fn long_titles_are_cut_to_the_width() {
        assert_eq!(fit("abcdef", 4), "abc…");
        assert_eq!(fit("abc", 4), "abc");
    }
}
