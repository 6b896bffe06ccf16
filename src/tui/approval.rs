//! A question from the agent in the live area: the command or the diff it wants to apply, why
//! it asks, and the answers (y: allow once, a: allow for this session when the action can be
//! remembered, n or Esc: deny). While a question is open the keys answer it (Ctrl+C still
//! interrupts), but not in its first moments: a key typed for something else must not answer
//! a question that just appeared. It stays until the agent confirms the answer.

use std::cell::RefCell;
use std::time::{Duration, Instant};

use crossterm::event::{KeyCode, KeyEvent};
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};

use super::diff::{self, Fold};
use super::highlight;
use crate::protocol::{ApprovalAction, ApprovalDecision};

/// Diff lines shown in the question; the rest is summarised.
const MAX_DIFF_LINES: usize = 16;
/// Keys pressed this soon after a question appeared were meant for something else.
pub const ANSWER_DELAY: Duration = Duration::from_millis(400);

#[derive(Debug, Clone, PartialEq)]
pub struct ApprovalPrompt {
    pub id: String,
    pub tool: String,
    pub action: ApprovalAction,
    pub reason: String,
    /// What "allow for this session" covers; `None`: only once.
    pub session_grant: Option<String>,
    pub shown_at: Instant,
    /// The answer sent, while the agent has not confirmed it.
    pub answered: Option<ApprovalDecision>,
}

impl ApprovalPrompt {
    /// The decision `key` stands for, if it may answer now.
    pub fn decision_for(&self, key: &KeyEvent, now: Instant) -> Option<ApprovalDecision> {
        if now.saturating_duration_since(self.shown_at) < ANSWER_DELAY {
            return None;
        }
        match key.code {
            KeyCode::Char('y' | 'Y') => Some(ApprovalDecision::AllowOnce),
            KeyCode::Char('a' | 'A') if self.session_grant.is_some() => {
                Some(ApprovalDecision::AllowSession)
            }
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
                for line in diff_lines(path, text) {
                    let mut spans = vec![Span::raw("  ")];
                    spans.extend(line.spans);
                    lines.push(Line::from(spans));
                }
            }
            ApprovalAction::Memory { change } => {
                lines.push(Line::from(vec![
                    Span::styled("? ", bold),
                    Span::styled("Change what later sessions remember?", bold),
                ]));
                lines.push(Line::raw(format!("  {change}")));
            }
        }
        lines.push(Line::styled(
            format!("  {} wants this: {}", self.tool, self.reason),
            dim(),
        ));
        if let Some(decision) = self.answered {
            let answer = match decision {
                ApprovalDecision::AllowOnce => "allowed once",
                ApprovalDecision::AllowSession => "allowed for this session",
                ApprovalDecision::Deny => "denied",
            };
            lines.push(Line::styled(format!("  {answer}…"), dim()));
            return lines;
        }
        let key = |k: &'static str| Span::styled(k, accent.add_modifier(Modifier::BOLD));
        let mut answers = vec![Span::raw("  "), key("y"), Span::raw(" allow once   ")];
        if let Some(grant) = &self.session_grant {
            answers.push(key("a"));
            answers.push(Span::raw(format!(" allow {grant} for this session   ")));
        }
        answers.extend([key("n"), Span::raw(" deny")]);
        lines.push(Line::from(answers));
        lines
    }
}

/// The last diff rendered for a question and what it was rendered from.
struct RenderedDiff {
    path: String,
    diff: String,
    highlighted: bool,
    lines: Vec<Line<'static>>,
}

thread_local! {
    /// `lines()` runs on every frame while a question is open; highlighting must not. One
    /// entry suffices: only the first question is drawn.
    static RENDERED: RefCell<Option<RenderedDiff>> = const { RefCell::new(None) };
}

/// The folded, highlighted diff of a write, rendered again only when it changes or when the
/// syntax sets finish loading.
fn diff_lines(path: &str, text: &str) -> Vec<Line<'static>> {
    let highlighted = highlight::is_ready();
    RENDERED.with_borrow_mut(|cached| {
        if let Some(hit) = cached.as_ref()
            && hit.highlighted == highlighted
            && hit.path == path
            && hit.diff == text
        {
            return hit.lines.clone();
        }
        let fold = Fold::After {
            lines: MAX_DIFF_LINES,
            hint: "",
        };
        let lines = diff::render(text, Some(path), fold);
        *cached = Some(RenderedDiff {
            path: path.to_string(),
            diff: text.to_string(),
            highlighted,
            lines: lines.clone(),
        });
        lines
    })
}

fn dim() -> Style {
    Style::default().fg(Color::DarkGray)
}
