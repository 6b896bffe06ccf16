//! A question from the agent in the live area: the command or the diff it wants to apply, why
//! it asks, and a numbered menu of answers (1: allow once, 2: allow for this session when the
//! action can be remembered, 3 or Esc: deny). Letters are always typed into the box, never
//! answers: a sentence typed as a question appeared ("yes but first tell me why") once allowed
//! the command with its first letter and kept the rest. The digits answer only while the box
//! is empty; Alt with y, a or n answers at any time. No key answers in the question's first
//! moments (a key typed for something else is typed). The question stays until the agent
//! confirms the answer.

use std::cell::RefCell;
use std::time::{Duration, Instant};

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};

use super::cells::NoticeLevel;
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
    /// Why it can be allowed only once, when the agent said ("it has a pipe `|`").
    pub only_once: Option<String>,
    pub shown_at: Instant,
    /// The answer sent, while the agent has not confirmed it.
    pub answered: Option<ApprovalDecision>,
}

/// What a key means to an open question.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Answer {
    Decision(ApprovalDecision),
    /// An answer key for an answer the question does not offer, with why.
    Unavailable(String),
    /// An answer key pressed in the question's first moments.
    TooSoon,
    /// Not an answer: the key is typed.
    NotAnAnswer,
}

impl ApprovalPrompt {
    /// What `key` means now: a digit of the menu while the box is empty (not `typing`), Alt
    /// with y, a or n, or Esc. Any other key, and every plain letter, is typed.
    pub fn decision_for(&self, key: &KeyEvent, now: Instant, typing: bool) -> Answer {
        let alt = key.modifiers.contains(KeyModifiers::ALT);
        let choice = match key.code {
            KeyCode::Char(c) if alt => match c.to_ascii_lowercase() {
                'y' => Choice::Once,
                'a' => Choice::Session,
                'n' => Choice::Deny,
                _ => return Answer::NotAnAnswer,
            },
            KeyCode::Char('1') if !typing => Choice::Once,
            KeyCode::Char('2') if !typing => Choice::Session,
            KeyCode::Char('3') if !typing => Choice::Deny,
            KeyCode::Esc => Choice::Deny,
            _ => return Answer::NotAnAnswer,
        };
        // Even an answer the question does not offer waits: it was typed for something else.
        if now.saturating_duration_since(self.shown_at) < ANSWER_DELAY {
            return Answer::TooSoon;
        }
        Answer::Decision(match choice {
            Choice::Once => ApprovalDecision::AllowOnce,
            Choice::Session if self.session_grant.is_some() => ApprovalDecision::AllowSession,
            Choice::Session => return Answer::Unavailable(self.no_session_grant()),
            Choice::Deny => ApprovalDecision::Deny,
        })
    }
}

/// The answers of the menu.
enum Choice {
    Once,
    Session,
    Deny,
}

impl ApprovalPrompt {
    /// The line the transcript keeps of the question and its answer.
    pub fn record(&self, decision: ApprovalDecision) -> (NoticeLevel, String) {
        let what = match &self.action {
            ApprovalAction::Command { command, .. } => {
                format!(
                    "{}: {}",
                    self.tool,
                    command.lines().next().unwrap_or_default()
                )
            }
            ApprovalAction::Write { path, .. } => format!("{}: {path}", self.tool),
            ApprovalAction::Memory { change } | ApprovalAction::Schedule { change } => {
                format!("{}: {change}", self.tool)
            }
            ApprovalAction::McpCall { server, tool, .. } => {
                format!("{tool} of MCP server {server}")
            }
            ApprovalAction::Network { host, port } => format!("{}: {host}:{port}", self.tool),
        };
        match (decision, self.answered) {
            (ApprovalDecision::AllowOnce, _) => {
                (NoticeLevel::Info, format!("Allowed once · {what}"))
            }
            (ApprovalDecision::AllowSession, _) => {
                let grant = self.session_grant.as_deref().unwrap_or("the same");
                (
                    NoticeLevel::Info,
                    format!("Allowed for this session ({grant}) · {what}"),
                )
            }
            (ApprovalDecision::Deny, Some(_)) => {
                (NoticeLevel::Warning, format!("Denied by you · {what}"))
            }
            (ApprovalDecision::Deny, None) => (
                NoticeLevel::Warning,
                format!("Not run: the question was withdrawn unanswered · {what}"),
            ),
        }
    }
}

impl ApprovalPrompt {
    /// Why "allow for this session" is not offered, naming what the command has.
    pub fn no_session_grant(&self) -> String {
        match &self.only_once {
            Some(why) => format!(
                "2 (allow for this session) is not offered for this command: {why}, and a \
                 session grant could not say what it covers"
            ),
            None => "2 (allow for this session) is not offered for this question".into(),
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
            ApprovalAction::Schedule { change } => {
                lines.push(Line::from(vec![
                    Span::styled("? ", bold),
                    Span::styled("Change what mnemo serve runs on its own?", bold),
                ]));
                lines.push(Line::raw(format!("  {change}")));
            }
            ApprovalAction::McpCall {
                server,
                tool,
                arguments,
            } => {
                lines.push(Line::from(vec![
                    Span::styled("? ", bold),
                    Span::styled(format!("Call {tool} of MCP server {server}?"), bold),
                    Span::styled("  (it may change things outside the workspace)", dim()),
                ]));
                for line in arguments.lines() {
                    lines.push(Line::raw(format!("    {line}")));
                }
            }
            ApprovalAction::Network { host, port } => {
                lines.push(Line::from(vec![
                    Span::styled("? ", bold),
                    Span::styled(format!("Allow a connection to {host}:{port}?"), bold),
                ]));
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
        let mut answers = vec![Span::raw("  "), key("1"), Span::raw(" allow once   ")];
        if let Some(grant) = &self.session_grant {
            answers.push(key("2"));
            answers.push(Span::raw(format!(" allow for this session: {grant}   ")));
        }
        answers.extend([key("3"), Span::raw(" deny")]);
        lines.push(Line::from(answers));
        if let (None, Some(why)) = (&self.session_grant, &self.only_once) {
            lines.push(Line::styled(
                format!("  (no \"allow for this session\": {why}, so it is asked each time)"),
                dim(),
            ));
        }
        lines.push(Line::styled(
            "  letters are typed; while you type a message, Alt+y / Alt+a / Alt+n answer",
            dim(),
        ));
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
