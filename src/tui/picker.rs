//! The session picker: this directory's stored sessions, newest first, each with its title
//! (and current topic), when it was last used and how many messages it holds, and the chosen
//! one's last message under the list. Typing filters the list; Enter opens the chosen one;
//! Ctrl+R renames it; Esc closes the picker (or, when mnemo was started with `--resume` and no
//! id, starts a new session). What was typed is never lost: when nothing matches, Enter hands
//! it back to the composer. It shows in the live area.

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
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
/// The longest title a rename takes, in characters.
const TITLE_CHARS: usize = 200;

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
    /// Give session `id` the title `title`; the picker stays open.
    Rename {
        id: String,
        title: String,
    },
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
    /// The new title being typed for the chosen session (Ctrl+R), until Enter or Esc.
    renaming: Option<String>,
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
            renaming: None,
        }
    }

    /// The session `row` was renamed: the list shows its new title.
    pub fn renamed(&mut self, row: SessionRow) {
        if let Some(shown) = self.rows.iter_mut().find(|r| r.id == row.id) {
            *shown = row;
        }
    }

    /// The chosen session's row.
    fn chosen(&self) -> Option<&SessionRow> {
        self.visible
            .get(self.selected)
            .map(|&index| &self.rows[index])
    }

    /// A key while a new title is typed: Enter renames, Esc goes back to the list.
    fn rename_key(&self, key: KeyEvent, title: &mut String) -> Option<PickerOutcome> {
        let plain = !key
            .modifiers
            .intersects(KeyModifiers::CONTROL | KeyModifiers::ALT);
        match key.code {
            KeyCode::Esc => return Some(PickerOutcome::Handled),
            KeyCode::Enter => {
                let title = title.trim().to_string();
                let Some(row) = self.chosen() else {
                    return Some(PickerOutcome::Handled);
                };
                if title.is_empty() || title == row.title {
                    return Some(PickerOutcome::Handled);
                }
                let id = row.id.clone();
                return Some(PickerOutcome::Rename { id, title });
            }
            KeyCode::Backspace => {
                title.pop();
            }
            KeyCode::Char(c) if plain && title.chars().count() < TITLE_CHARS => title.push(c),
            _ => {}
        }
        None
    }

    /// What was typed into the filter.
    pub fn typed(&self) -> &str {
        self.filter.query()
    }

    pub fn handle_key(&mut self, key: KeyEvent) -> PickerOutcome {
        if let Some(mut title) = self.renaming.take() {
            return match self.rename_key(key, &mut title) {
                Some(outcome) => outcome,
                None => {
                    self.renaming = Some(title);
                    PickerOutcome::Handled
                }
            };
        }
        let last = self.visible.len().saturating_sub(1);
        let ctrl = key.modifiers.contains(KeyModifiers::CONTROL);
        match key.code {
            KeyCode::Char('r') if ctrl => {
                self.renaming = self.chosen().map(|row| row.title.clone());
            }
            KeyCode::Up => self.selected = self.selected.saturating_sub(1),
            KeyCode::Down => self.selected = (self.selected + 1).min(last),
            KeyCode::PageUp => self.selected = self.selected.saturating_sub(VISIBLE_ROWS),
            KeyCode::PageDown => self.selected = (self.selected + VISIBLE_ROWS).min(last),
            KeyCode::Home => self.selected = 0,
            KeyCode::End => self.selected = last,
            KeyCode::Enter => {
                return match self.chosen() {
                    Some(row) => PickerOutcome::Open(row.id.clone()),
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
        if let Some(title) = &self.renaming {
            lines.push(Line::from(vec![
                Span::styled("  new title: ", dim),
                Span::raw(format!("{title}▏")),
            ]));
            lines.push(Line::styled("Enter rename · Esc keep the title", dim));
            return lines;
        }
        if let Some(preview) = self.chosen().and_then(|row| row.preview.as_deref()) {
            let line = preview
                .lines()
                .find(|l| !l.trim().is_empty())
                .unwrap_or_default();
            let text = fit(line.trim(), width.saturating_sub(4).max(8));
            lines.push(Line::styled(format!("  ↳ {text}"), dim));
        }
        let esc = match self.on_cancel {
            PickerCancel::NewSession => "new session",
            PickerCancel::Close => "close",
        };
        lines.push(Line::styled(
            format!("type to filter · ↑↓ choose · Enter open · Ctrl+R rename · Esc {esc}"),
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
        out.truncate(out.trim_end().len());
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
            preview: Some(format!("the last words of {id}\nand a second line")),
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
        // Header, ten rows, the chosen one's preview, hint: the selection stays in view.
        let lines = picker.lines(80);
        assert_eq!(lines.len(), 2 + VISIBLE_ROWS + 2);
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
    fn the_chosen_sessions_last_message_shows_under_the_list_on_one_line() {
        let rows = (0..3).map(|n| row(&format!("s{n}"))).collect();
        let mut picker = SessionPicker::new(rows, 0, None, PickerCancel::Close);
        picker.handle_key(key(KeyCode::Down));
        let preview = |width| {
            let lines = picker.lines(width);
            let line = lines
                .iter()
                .map(|l| l.to_string())
                .find(|l| l.starts_with("  ↳ "));
            line.unwrap_or_default()
        };
        assert_eq!(preview(80), "  ↳ the last words of s1");
        assert_eq!(preview(20), "  ↳ the last words…");
        assert!(str_width(&preview(20)) <= 20);
    }

    #[test]
    fn ctrl_r_renames_the_chosen_session_and_esc_keeps_its_title() {
        let rows = (0..3).map(|n| row(&format!("s{n}"))).collect();
        let mut picker = SessionPicker::new(rows, 0, None, PickerCancel::Close);
        picker.handle_key(key(KeyCode::Down));
        let ctrl_r = KeyEvent::new(KeyCode::Char('r'), KeyModifiers::CONTROL);
        picker.handle_key(ctrl_r);
        for _ in 0..2 {
            picker.handle_key(key(KeyCode::Backspace));
        }
        for c in "parser fix".chars() {
            picker.handle_key(key(KeyCode::Char(c)));
        }
        let lines: Vec<String> = picker.lines(80).iter().map(|l| l.to_string()).collect();
        assert!(
            lines.iter().any(|l| l.contains("new title: parser fix")),
            "{lines:?}"
        );
        assert_eq!(
            picker.handle_key(key(KeyCode::Enter)),
            PickerOutcome::Rename {
                id: "s1".into(),
                title: "parser fix".into()
            }
        );
        // Back in the list, typing filters again; a rename left with Esc changes nothing.
        picker.handle_key(ctrl_r);
        picker.handle_key(key(KeyCode::Char('x')));
        assert_eq!(picker.handle_key(key(KeyCode::Esc)), PickerOutcome::Handled);
        assert_eq!(
            picker.handle_key(key(KeyCode::Enter)),
            PickerOutcome::Open("s1".into())
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
