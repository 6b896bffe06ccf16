//! The model's question to the person (`ask_user`) in the live area: the question and, when it
//! offers choices, a numbered list to pick from (↑↓ and Enter, or the digit while the box is
//! empty). Text typed in the box and sent with Enter is the answer instead; Esc closes the
//! question unanswered. As with approvals, no key answers in the question's first moments, and
//! the question stays until the agent confirms the answer.

use std::time::Instant;

use crossterm::event::{KeyCode, KeyEvent};
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};

use super::approval::ANSWER_DELAY;
use crate::protocol::QuestionAnswer;

#[derive(Debug, Clone, PartialEq)]
pub struct QuestionPrompt {
    pub id: String,
    pub question: String,
    pub choices: Vec<String>,
    /// Index of the highlighted choice.
    pub selected: usize,
    pub shown_at: Instant,
    /// An answer was sent and the agent has not confirmed it yet.
    pub answered: bool,
}

impl QuestionPrompt {
    pub fn new(id: String, question: String, choices: Vec<String>, now: Instant) -> Self {
        Self {
            id,
            question,
            choices,
            selected: 0,
            shown_at: now,
            answered: false,
        }
    }

    /// What `key` does to the question, with `typed` in the box.
    pub fn key(&mut self, key: &KeyEvent, now: Instant, typed: &str) -> QuestionKey {
        if self.answered || now.duration_since(self.shown_at) < ANSWER_DELAY {
            return QuestionKey::NotForIt;
        }
        let last = self.choices.len().saturating_sub(1);
        match key.code {
            KeyCode::Esc => QuestionKey::Answer(QuestionAnswer::Dismissed),
            KeyCode::Enter if !typed.trim().is_empty() => {
                QuestionKey::Answer(QuestionAnswer::Text {
                    text: typed.trim().to_string(),
                })
            }
            KeyCode::Enter => match self.choices.get(self.selected) {
                Some(choice) => QuestionKey::Answer(QuestionAnswer::Text {
                    text: choice.clone(),
                }),
                None => QuestionKey::Handled,
            },
            KeyCode::Up if !self.choices.is_empty() => {
                self.selected = self.selected.saturating_sub(1);
                QuestionKey::Handled
            }
            KeyCode::Down if !self.choices.is_empty() => {
                self.selected = (self.selected + 1).min(last);
                QuestionKey::Handled
            }
            KeyCode::Char(c) if typed.is_empty() && key.modifiers.is_empty() => {
                let picked = c.to_digit(10).and_then(|n| (n as usize).checked_sub(1));
                match picked.and_then(|n| self.choices.get(n)) {
                    Some(choice) => QuestionKey::Answer(QuestionAnswer::Text {
                        text: choice.clone(),
                    }),
                    None => QuestionKey::NotForIt,
                }
            }
            _ => QuestionKey::NotForIt,
        }
    }

    pub fn lines(&self) -> Vec<Line<'static>> {
        let dim = Style::default().fg(Color::DarkGray);
        let title = Style::default()
            .fg(Color::Magenta)
            .add_modifier(Modifier::BOLD);
        let mut lines = vec![Line::styled("? The agent asks", title)];
        lines.extend(
            self.question
                .lines()
                .map(|line| Line::from(format!("  {line}"))),
        );
        for (n, choice) in self.choices.iter().enumerate() {
            let selected = n == self.selected;
            let style = match selected {
                true => Style::default().fg(Color::Black).bg(Color::Magenta),
                false => Style::default(),
            };
            let marker = if selected { "› " } else { "  " };
            lines.push(Line::from(vec![Span::styled(
                format!("{marker}{}. {choice}", n + 1),
                style,
            )]));
        }
        let hint = match (self.answered, self.choices.is_empty()) {
            (true, _) => "answer sent…",
            (false, true) => "type your answer · Enter sends · Esc skips",
            (false, false) => "↑↓ or 1-9 pick · or type your own · Enter sends · Esc skips",
        };
        lines.push(Line::styled(hint, dim));
        lines
    }
}

/// What a key means to an open question.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum QuestionKey {
    /// Send this answer.
    Answer(QuestionAnswer),
    /// The key moved the selection.
    Handled,
    /// Not for the question: the key goes on as usual.
    NotForIt,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crossterm::event::KeyModifiers;

    fn press(code: KeyCode) -> KeyEvent {
        KeyEvent::new(code, KeyModifiers::NONE)
    }

    #[test]
    fn choices_are_picked_by_arrow_or_digit_and_typed_text_wins() {
        let shown = Instant::now();
        let later = shown + ANSWER_DELAY;
        let choices = vec!["red".to_string(), "blue".to_string()];
        let mut prompt = QuestionPrompt::new("q".into(), "Which?".into(), choices, shown);
        let text = |t: &str| QuestionKey::Answer(QuestionAnswer::Text { text: t.into() });
        assert_eq!(
            prompt.key(&press(KeyCode::Char('2')), shown, ""),
            QuestionKey::NotForIt,
            "too soon"
        );
        assert_eq!(
            prompt.key(&press(KeyCode::Char('2')), later, ""),
            text("blue")
        );
        assert_eq!(
            prompt.key(&press(KeyCode::Char('2')), later, "x"),
            QuestionKey::NotForIt,
            "typed while the box has text"
        );
        assert_eq!(
            prompt.key(&press(KeyCode::Down), later, ""),
            QuestionKey::Handled
        );
        assert_eq!(prompt.key(&press(KeyCode::Enter), later, ""), text("blue"));
        assert_eq!(
            prompt.key(&press(KeyCode::Enter), later, " green "),
            text("green")
        );
        assert_eq!(
            prompt.key(&press(KeyCode::Esc), later, ""),
            QuestionKey::Answer(QuestionAnswer::Dismissed)
        );
        prompt.answered = true;
        assert_eq!(
            prompt.key(&press(KeyCode::Esc), later, ""),
            QuestionKey::NotForIt
        );
    }
}
