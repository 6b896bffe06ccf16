//! The picker of `/rewind` (and Esc Esc on an empty box): the session's turns, newest first,
//! each with its prompt and the files it changed; Enter on one asks what to take back (the
//! files and the conversation, only the conversation, or only the files), Enter again
//! rewinds. Esc goes back a step, then closes.

use crossterm::event::{KeyCode, KeyEvent};
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};

use crate::protocol::{RewindWhat, TurnSummary};
use crate::text::{clip, first_line};

/// Turns listed at once; the list scrolls to keep the selection in view.
const VISIBLE_ROWS: usize = 8;
const PROMPT_CHARS: usize = 60;
const FILES_SHOWN: usize = 3;

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RewindOutcome {
    Rewind { turn: u64, what: RewindWhat },
    Close,
    Handled,
}

#[derive(Debug, Clone)]
pub struct RewindPicker {
    /// Newest first.
    turns: Vec<TurnSummary>,
    selected: usize,
    /// The choice of what to take back, once a turn is chosen: index into `choices()`.
    what: Option<usize>,
}

impl RewindPicker {
    pub fn new(mut turns: Vec<TurnSummary>) -> Self {
        turns.reverse();
        Self {
            turns,
            selected: 0,
            what: None,
        }
    }

    /// What the chosen turn can take back, the most complete first.
    fn choices(&self) -> Vec<RewindWhat> {
        match self.turns.get(self.selected) {
            Some(turn) if turn.conversation => vec![
                RewindWhat::Both,
                RewindWhat::Conversation,
                RewindWhat::Files,
            ],
            Some(_) => vec![RewindWhat::Files],
            None => Vec::new(),
        }
    }

    pub fn handle_key(&mut self, key: KeyEvent) -> RewindOutcome {
        if let Some(what) = self.what {
            let choices = self.choices();
            let last = choices.len().saturating_sub(1);
            match key.code {
                KeyCode::Up => self.what = Some(what.saturating_sub(1)),
                KeyCode::Down => self.what = Some((what + 1).min(last)),
                KeyCode::Esc => self.what = None,
                KeyCode::Enter => {
                    let (Some(turn), Some(&what)) =
                        (self.turns.get(self.selected), choices.get(what))
                    else {
                        return RewindOutcome::Close;
                    };
                    return RewindOutcome::Rewind {
                        turn: turn.turn,
                        what,
                    };
                }
                _ => {}
            }
            return RewindOutcome::Handled;
        }
        let last = self.turns.len().saturating_sub(1);
        match key.code {
            KeyCode::Up => self.selected = self.selected.saturating_sub(1),
            KeyCode::Down => self.selected = (self.selected + 1).min(last),
            KeyCode::Home => self.selected = 0,
            KeyCode::End => self.selected = last,
            KeyCode::Esc => return RewindOutcome::Close,
            KeyCode::Enter if !self.turns.is_empty() => self.what = Some(0),
            _ => {}
        }
        RewindOutcome::Handled
    }

    pub fn lines(&self) -> Vec<Line<'static>> {
        let dim = Style::default().fg(Color::DarkGray);
        let title = Style::default()
            .fg(Color::Cyan)
            .add_modifier(Modifier::BOLD);
        let chosen = Style::default().fg(Color::Black).bg(Color::Cyan);
        let mut lines = vec![
            Line::default(),
            Line::styled("Rewind to before a turn", title),
        ];
        if let (Some(what), Some(turn)) = (self.what, self.turns.get(self.selected)) {
            lines.push(Line::from(format!(
                "  turn {}: {}",
                turn.turn,
                clip(first_line(&turn.prompt), PROMPT_CHARS)
            )));
            for (index, choice) in self.choices().into_iter().enumerate() {
                let style = if index == what {
                    chosen
                } else {
                    Style::default()
                };
                let marker = if index == what { "› " } else { "  " };
                lines.push(Line::styled(
                    format!("{marker}{}", describe(choice, turn)),
                    style,
                ));
            }
            if !turn.conversation {
                lines.push(Line::styled(
                    "  (its conversation was compacted: only files can go back)",
                    dim,
                ));
            }
            lines.push(Line::styled("↑↓ choose · Enter rewind · Esc back", dim));
            return lines;
        }
        let start = self.selected.saturating_sub(VISIBLE_ROWS - 1);
        for (index, turn) in self.turns.iter().enumerate().skip(start).take(VISIBLE_ROWS) {
            let selected = index == self.selected;
            let base = if selected { chosen } else { Style::default() };
            let mut spans = vec![
                Span::styled(if selected { "› " } else { "  " }, base),
                Span::styled(format!("{:>3}  ", turn.turn), base),
                Span::styled(
                    clip(first_line(&turn.prompt), PROMPT_CHARS),
                    base.add_modifier(Modifier::BOLD),
                ),
            ];
            let files = files_note(turn);
            if !files.is_empty() {
                spans.push(Span::styled(
                    format!("  {files}"),
                    if selected { base } else { dim },
                ));
            }
            lines.push(Line::from(spans));
        }
        if self.turns.is_empty() {
            lines.push(Line::styled("  no turns to rewind yet", dim));
        }
        lines.push(Line::styled(
            "↑↓ choose · Enter choose what to rewind · Esc close",
            dim,
        ));
        lines
    }
}

fn describe(what: RewindWhat, turn: &TurnSummary) -> String {
    let files = match turn.files.len() {
        0 => "no files changed since".to_string(),
        _ => "files changed since".to_string(),
    };
    match what {
        RewindWhat::Both => format!("conversation and {files}"),
        RewindWhat::Conversation => "conversation only (files stay as they are)".into(),
        RewindWhat::Files => format!("{files} only (the conversation stays)"),
    }
}

fn files_note(turn: &TurnSummary) -> String {
    let mut note = String::new();
    if !turn.files.is_empty() {
        let shown: Vec<&str> = turn
            .files
            .iter()
            .take(FILES_SHOWN)
            .map(String::as_str)
            .collect();
        note.push_str(&format!("[{}", shown.join(", ")));
        if turn.files.len() > FILES_SHOWN {
            note.push_str(&format!(" +{}", turn.files.len() - FILES_SHOWN));
        }
        note.push(']');
    }
    if !turn.commands.is_empty() {
        if !note.is_empty() {
            note.push(' ');
        }
        note.push_str(&format!("{} commands", turn.commands.len()));
    }
    note
}

#[cfg(test)]
mod tests {
    use crossterm::event::KeyModifiers;

    use super::*;

    fn turn(number: u64, conversation: bool) -> TurnSummary {
        TurnSummary {
            turn: number,
            prompt: format!("prompt {number}"),
            started_at: 0,
            files: vec![format!("f{number}.txt")],
            commands: Vec::new(),
            conversation,
        }
    }

    fn key(code: KeyCode) -> KeyEvent {
        KeyEvent::new(code, KeyModifiers::NONE)
    }

    #[test]
    fn the_newest_turn_comes_first_and_two_enters_rewind_it_whole() {
        let mut picker = RewindPicker::new(vec![turn(1, true), turn(2, true)]);
        assert_eq!(
            picker.handle_key(key(KeyCode::Enter)),
            RewindOutcome::Handled
        );
        assert_eq!(
            picker.handle_key(key(KeyCode::Enter)),
            RewindOutcome::Rewind {
                turn: 2,
                what: RewindWhat::Both
            }
        );
    }

    #[test]
    fn a_compacted_turn_offers_only_its_files_and_esc_steps_back() {
        let mut picker = RewindPicker::new(vec![turn(1, false), turn(2, true)]);
        picker.handle_key(key(KeyCode::Down));
        picker.handle_key(key(KeyCode::Enter));
        picker.handle_key(key(KeyCode::Down));
        assert_eq!(
            picker.handle_key(key(KeyCode::Enter)),
            RewindOutcome::Rewind {
                turn: 1,
                what: RewindWhat::Files
            }
        );
        picker.handle_key(key(KeyCode::Esc));
        assert_eq!(picker.handle_key(key(KeyCode::Esc)), RewindOutcome::Close);
    }
}
