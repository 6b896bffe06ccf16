//! The input box. It stays live while the agent works: Enter sends, Tab queues, Shift+Enter
//! or Alt+Enter adds a line, Up/Down recall earlier messages when the box is empty, Ctrl+U
//! deletes to the start of the line, Ctrl+Z undoes and Ctrl+Y redoes, a large paste shows as a
//! chip (Ctrl+O expands it), and typing `/` opens the command completion popup. Keys come in, outcomes go out; the
//! composer never talks to the agent.

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::Widget;
use ratatui_textarea::{CursorMove, TextArea, WrapMode};

use super::paste::PasteChips;
use super::slash::{PopupItem, popup_items};
use super::wrap::wrap_line;

/// Most rows the box grows to before it scrolls.
const MAX_ROWS: u16 = 10;
const PROMPT: &str = "› ";

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ComposerOutcome {
    /// Enter on non-empty text.
    Submit(String),
    /// Tab on non-empty text: send as the next message.
    Queue(String),
    /// The key edited the text or moved within the box.
    Handled,
    /// The composer has no use for the key.
    Ignored,
}

pub struct Composer {
    textarea: TextArea<'static>,
    /// Large pastes shown as chips, and what they stand for.
    pastes: PasteChips,
    /// The pastes of the last message taken, `(text, label)`, for the transcript.
    sent_folds: Vec<(String, String)>,
    history: Vec<String>,
    /// Index into `history` while recalling.
    recalled: Option<usize>,
    popup_selected: usize,
    popup_dismissed: bool,
    /// The person's own commands, offered in the popup after mnemo's.
    user_commands: Vec<crate::protocol::UserCommandInfo>,
}

impl Default for Composer {
    fn default() -> Self {
        Self::new()
    }
}

impl Composer {
    pub fn new() -> Self {
        Self {
            textarea: configured(""),
            pastes: PasteChips::default(),
            sent_folds: Vec::new(),
            history: Vec::new(),
            recalled: None,
            popup_selected: 0,
            popup_dismissed: false,
            user_commands: Vec::new(),
        }
    }

    /// The person's own commands the session expands.
    pub fn set_user_commands(&mut self, commands: Vec<crate::protocol::UserCommandInfo>) {
        self.user_commands = commands;
    }

    pub fn user_commands(&self) -> &[crate::protocol::UserCommandInfo] {
        &self.user_commands
    }

    pub fn text(&self) -> String {
        self.textarea.lines().join("\n")
    }

    pub fn is_empty(&self) -> bool {
        self.textarea.lines().iter().all(String::is_empty)
    }

    pub fn clear(&mut self) {
        self.set_text("");
    }

    /// Puts text back in the box (text that could not be sent), the cursor at its end.
    pub fn restore(&mut self, text: &str) {
        self.set_text(text);
        self.textarea.move_cursor(CursorMove::Bottom);
        self.textarea.move_cursor(CursorMove::End);
    }

    /// Puts a message back in the box with its large pastes as chips again.
    pub fn restore_folded(&mut self, text: &str, folds: Vec<(String, String)>) {
        let shown = super::paste::folded(text, &folds);
        for (content, label) in folds {
            self.pastes.keep(label, content);
        }
        self.restore(shown.as_deref().unwrap_or(text));
    }

    fn set_text(&mut self, text: &str) {
        self.textarea = configured(text);
        self.popup_selected = 0;
        self.popup_dismissed = false;
    }

    /// Pasted text goes in as typed text, line breaks included; a large paste as a chip.
    pub fn paste(&mut self, text: &str) {
        let normalized = text.replace("\r\n", "\n").replace('\r', "\n");
        match self.pastes.fold(&normalized) {
            Some(label) => self.textarea.insert_str(label),
            None => self.textarea.insert_str(normalized),
        };
        self.recalled = None;
    }

    /// The pastes folded in the message last taken, `(text, label)`.
    pub fn take_folds(&mut self) -> Vec<(String, String)> {
        std::mem::take(&mut self.sent_folds)
    }

    /// The commands the popup offers, when the text is a `/` prefix being typed.
    pub fn popup(&self) -> Option<(Vec<PopupItem>, usize)> {
        if self.popup_dismissed {
            return None;
        }
        let [line] = self.textarea.lines() else {
            return None;
        };
        let prefix = line.strip_prefix('/')?;
        if prefix.contains(char::is_whitespace) {
            return None;
        }
        let matches = popup_items(prefix, &self.user_commands);
        if matches.is_empty() {
            return None;
        }
        let selected = self.popup_selected.min(matches.len() - 1);
        Some((matches, selected))
    }

    /// Esc closes an open popup; true when it did.
    pub fn dismiss_popup(&mut self) -> bool {
        let open = self.popup().is_some();
        self.popup_dismissed = true;
        open
    }

    pub fn handle_key(&mut self, key: KeyEvent) -> ComposerOutcome {
        let shift = key.modifiers.contains(KeyModifiers::SHIFT);
        let alt = key.modifiers.contains(KeyModifiers::ALT);
        let ctrl = key.modifiers.contains(KeyModifiers::CONTROL);
        let popup = self.popup();
        match key.code {
            KeyCode::Enter if shift || alt => self.newline(),
            KeyCode::Char('j') if ctrl => self.newline(),
            KeyCode::Enter => {
                if let Some((commands, selected)) = popup
                    && let Some(command) = commands.get(selected)
                {
                    self.set_text(&format!("/{}", command.name));
                }
                self.take()
                    .map_or(ComposerOutcome::Ignored, ComposerOutcome::Submit)
            }
            KeyCode::Tab => match popup {
                Some((commands, selected)) => {
                    if let Some(command) = commands.get(selected) {
                        self.set_text(&format!("/{} ", command.name));
                    }
                    ComposerOutcome::Handled
                }
                None => self
                    .take()
                    .map_or(ComposerOutcome::Ignored, ComposerOutcome::Queue),
            },
            KeyCode::Up | KeyCode::Down if popup.is_some() => {
                let count = popup.map_or(1, |(c, _)| c.len());
                let current = self.popup_selected.min(count - 1);
                self.popup_selected = match key.code {
                    KeyCode::Up => (current + count - 1) % count,
                    _ => (current + 1) % count,
                };
                ComposerOutcome::Handled
            }
            KeyCode::Up | KeyCode::Down if self.recalling_allowed() => {
                self.recall(key.code == KeyCode::Up);
                ComposerOutcome::Handled
            }
            KeyCode::Esc => ComposerOutcome::Ignored,
            // As in a shell: Ctrl+U deletes to the start of the line; undo has its own key.
            KeyCode::Char('u') if ctrl => {
                self.textarea.delete_line_by_head();
                ComposerOutcome::Handled
            }
            KeyCode::Char('z') if ctrl => {
                self.textarea.undo();
                ComposerOutcome::Handled
            }
            KeyCode::Char('y') if ctrl => {
                self.textarea.redo();
                ComposerOutcome::Handled
            }
            KeyCode::Char('o') if ctrl && !self.pastes.is_empty() => {
                let (expanded, _) = self.pastes.expand(&self.text());
                self.restore(&expanded);
                ComposerOutcome::Handled
            }
            _ => {
                if self.textarea.input(key) {
                    self.recalled = None;
                    self.popup_dismissed = false;
                    self.popup_selected = 0;
                }
                ComposerOutcome::Handled
            }
        }
    }

    fn newline(&mut self) -> ComposerOutcome {
        self.textarea.insert_newline();
        ComposerOutcome::Handled
    }

    /// Takes the text for sending (chips expanded) and remembers it in the history.
    fn take(&mut self) -> Option<String> {
        let typed = self.text();
        if typed.trim().is_empty() {
            return None;
        }
        let (text, folds) = self.pastes.expand(&typed);
        self.sent_folds = folds;
        if self.history.last() != Some(&text) {
            self.history.push(text.clone());
        }
        self.recalled = None;
        self.clear();
        Some(text)
    }

    fn recalling_allowed(&self) -> bool {
        match self.recalled {
            None => self.is_empty(),
            Some(index) => self.history.get(index).is_some_and(|h| *h == self.text()),
        }
    }

    fn recall(&mut self, older: bool) {
        let next = match (self.recalled, older) {
            (None, true) => self.history.len().checked_sub(1),
            (None, false) => None,
            (Some(i), true) => Some(i.saturating_sub(1)),
            (Some(i), false) if i + 1 < self.history.len() => Some(i + 1),
            (Some(_), false) => None,
        };
        let text = next
            .and_then(|i| self.history.get(i))
            .cloned()
            .unwrap_or_default();
        self.set_text(&text);
        self.recalled = next;
    }

    /// Rows the box needs at `width` (the prompt column included).
    pub fn height(&self, width: u16) -> u16 {
        let inner = width.saturating_sub(PROMPT.len() as u16 + 1).max(1);
        // Asked every frame: a large paste is wrapped only as far as the box can grow.
        let mut rows = Vec::new();
        for line in self.textarea.lines() {
            wrap_line(&Line::from(format!("{line} ")), inner, &mut rows);
            if rows.len() >= usize::from(MAX_ROWS) {
                break;
            }
        }
        (rows.len() as u16).clamp(1, MAX_ROWS)
    }

    /// Draws the prompt and the text with its caret.
    pub fn render(&self, area: Rect, buf: &mut Buffer) {
        if area.width <= 2 || area.height == 0 {
            return;
        }
        let prompt_style = Style::default()
            .fg(Color::Cyan)
            .add_modifier(Modifier::BOLD);
        Line::from(Span::styled(PROMPT, prompt_style)).render(area, buf);
        let text_area = Rect {
            x: area.x + 2,
            width: area.width - 2,
            ..area
        };
        (&self.textarea).render(text_area, buf);
    }
}

/// A text area holding `text`, cursor at its end.
fn configured(text: &str) -> TextArea<'static> {
    let mut textarea = TextArea::new(text.split('\n').map(str::to_string).collect());
    textarea.set_wrap_mode(WrapMode::WordOrGlyph);
    textarea.set_cursor_line_style(Style::default());
    textarea.set_placeholder_text("Ask anything · / for commands");
    textarea.set_placeholder_style(Style::default().fg(Color::DarkGray));
    // The terminal's own cursor stays parked at the live area's top (see terminal.rs).
    textarea.set_cursor_style(Style::default().add_modifier(Modifier::REVERSED));
    textarea.move_cursor(CursorMove::Bottom);
    textarea.move_cursor(CursorMove::End);
    textarea
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(code: KeyCode) -> KeyEvent {
        KeyEvent::new(code, KeyModifiers::NONE)
    }

    fn typed(composer: &mut Composer, text: &str) {
        for c in text.chars() {
            composer.handle_key(key(KeyCode::Char(c)));
        }
    }

    #[test]
    fn enter_submits_and_shift_enter_adds_a_line() {
        let mut composer = Composer::new();
        typed(&mut composer, "one");
        composer.handle_key(KeyEvent::new(KeyCode::Enter, KeyModifiers::SHIFT));
        typed(&mut composer, "two");
        let outcome = composer.handle_key(key(KeyCode::Enter));
        assert_eq!(outcome, ComposerOutcome::Submit("one\ntwo".into()));
        assert!(composer.is_empty());
        assert_eq!(
            composer.handle_key(key(KeyCode::Enter)),
            ComposerOutcome::Ignored
        );
    }

    #[test]
    fn up_and_down_recall_history_only_from_an_empty_box() {
        let mut composer = Composer::new();
        for text in ["first", "second"] {
            typed(&mut composer, text);
            composer.handle_key(key(KeyCode::Enter));
        }
        composer.handle_key(key(KeyCode::Up));
        assert_eq!(composer.text(), "second");
        composer.handle_key(key(KeyCode::Up));
        assert_eq!(composer.text(), "first");
        composer.handle_key(key(KeyCode::Down));
        assert_eq!(composer.text(), "second");
        composer.handle_key(key(KeyCode::Down));
        assert_eq!(composer.text(), "");
        typed(&mut composer, "draft");
        composer.handle_key(key(KeyCode::Up));
        assert_eq!(composer.text(), "draft");
    }

    #[test]
    fn the_popup_completes_commands() {
        let mut composer = Composer::new();
        typed(&mut composer, "/co");
        let popup = composer.popup().map(|(c, s)| (c.len(), s));
        assert_eq!(popup, Some((2, 0)));
        composer.handle_key(key(KeyCode::Down));
        assert_eq!(
            composer.handle_key(key(KeyCode::Enter)),
            ComposerOutcome::Submit("/cost".into())
        );
        typed(&mut composer, "/he");
        composer.handle_key(key(KeyCode::Tab));
        assert_eq!(composer.text(), "/help ");
        assert!(composer.popup().is_none());
    }

    #[test]
    fn tab_queues_and_paste_keeps_line_breaks() {
        let mut composer = Composer::new();
        composer.paste("a\r\nb");
        assert_eq!(
            composer.handle_key(key(KeyCode::Tab)),
            ComposerOutcome::Queue("a\nb".into())
        );
    }
}
