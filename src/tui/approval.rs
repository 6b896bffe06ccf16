//! A question from the agent in the live area: the command or the diff it wants to apply, why
//! it asks, and the three answers (y: allow once, a: allow for this session, n or Esc: deny).
//! While a question is open the keys answer it; Ctrl+C still interrupts the turn.

use crossterm::event::{KeyCode, KeyEvent};
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};

use super::diff;
use crate::protocol::{ApprovalAction, ApprovalDecision};

/// Diff lines shown in the question; the rest is summarised.
const MAX_DIFF_LINES: usize = 16;

#[derive(Debug, Clone, PartialEq)]
pub struct ApprovalPrompt {
    pub id: String,
    pub tool: String,
    pub action: ApprovalAction,
    pub reason: String,
}

impl ApprovalPrompt {
    /// The decision a key stands for, if any.
    pub fn decision_for(key: &KeyEvent) -> Option<ApprovalDecision> {
        match key.code {
            KeyCode::Char('y' | 'Y') | KeyCode::Enter => Some(ApprovalDecision::AllowOnce),
            KeyCode::Char('a' | 'A') => Some(ApprovalDecision::AllowSession),
            KeyCode::Char('n' | 'N') | KeyCode::Esc => Some(ApprovalDecision::Deny),
            _ => None,
        }
    }

    pub fn lines(&self) -> Vec<Line<'static>> {
        let accent = Style::default().fg(Color::Yellow);
        let bold = accent.add_modifier(Modifier::BOLD);
        let mut lines = Vec::new();
        match &self.action {
            ApprovalAction::Command {
                command, sandbox, ..
            } => {
                lines.push(Line::from(vec![
                    Span::styled("? ", bold),
                    Span::styled("Run this command?", bold),
                    Span::styled(format!("  ({sandbox})"), dim()),
                ]));
                for (index, line) in command.lines().enumerate() {
                    let prompt = if index == 0 { "  $ " } else { "    " };
                    lines.push(Line::from(vec![
                        Span::styled(prompt, dim()),
                        Span::raw(line.to_string()),
                    ]));
                }
            }
            ApprovalAction::Write { path, diff: text } => {
                lines.push(Line::from(vec![
                    Span::styled("? ", bold),
                    Span::styled(format!("Apply this change to {path}?"), bold),
                ]));
                let body = diff::render(text);
                let hidden = body.len().saturating_sub(MAX_DIFF_LINES);
                for line in body.into_iter().take(MAX_DIFF_LINES) {
                    let mut spans = vec![Span::raw("  ")];
                    spans.extend(line.spans);
                    lines.push(Line::from(spans));
                }
                if hidden > 0 {
                    lines.push(Line::styled(format!("  … {hidden} more lines"), dim()));
                }
            }
        }
        lines.push(Line::styled(
            format!("  {} wants this: {}", self.tool, self.reason),
            dim(),
        ));
        let key = |k: &'static str| Span::styled(k, accent.add_modifier(Modifier::BOLD));
        lines.push(Line::from(vec![
            Span::raw("  "),
            key("y"),
            Span::raw(" allow once   "),
            key("a"),
            Span::raw(" allow for this session   "),
            key("n"),
            Span::raw(" deny"),
        ]));
        lines
    }
}

fn dim() -> Style {
    Style::default().fg(Color::DarkGray)
}
