//! The status line: what the session is, what it costs and what the agent is doing right now
//! (model, short session id, context used, tokens in and out, cost, state).

use std::time::Instant;

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::Widget;

use super::wrap::str_width;
use crate::llm::Usage;
use crate::present::compact_count;
use crate::sandbox::ApprovalMode;

/// What the agent is doing, as far as the events tell.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Activity {
    /// The session is being prepared.
    Starting,
    /// No model could be prepared (the first-run panel explains why).
    Offline,
    Idle,
    /// Waiting for the model (or reading its reasoning).
    Thinking,
    /// Model text is streaming in.
    Responding,
    RunningTool,
    /// A model call failed and is tried again (or another model takes over).
    Retrying,
    /// An interrupt was sent; the turn has not ended yet.
    Interrupting,
    /// A tool call waits for the user to allow or deny it.
    AwaitingApproval,
    /// A tool call (`ask_user`) waits for the user's answer to a question.
    AwaitingAnswer,
}

impl Activity {
    pub fn label(self) -> &'static str {
        match self {
            Activity::Starting => "starting",
            Activity::Offline => "no model",
            Activity::Idle => "idle",
            Activity::Thinking => "thinking",
            Activity::Responding => "responding",
            Activity::RunningTool => "running tool",
            Activity::Retrying => "retrying",
            Activity::Interrupting => "interrupting",
            Activity::AwaitingApproval => "waiting for approval",
            Activity::AwaitingAnswer => "waiting for your answer",
        }
    }

    /// Whether a turn is running (input becomes an injection or a queued message).
    pub fn is_busy(self) -> bool {
        match self {
            Activity::Thinking
            | Activity::Responding
            | Activity::RunningTool
            | Activity::Retrying
            | Activity::Interrupting
            | Activity::AwaitingApproval
            | Activity::AwaitingAnswer => true,
            Activity::Starting | Activity::Offline | Activity::Idle => false,
        }
    }
}

#[derive(Debug, Clone)]
pub struct Status {
    pub model: String,
    pub session_id: String,
    pub workspace: String,
    pub activity: Activity,
    pub turn_started: Option<Instant>,
    pub total: Usage,
    pub cost_usd: f64,
    pub context_percent: f32,
    /// Shown when it is not the default (auto).
    pub approval_mode: ApprovalMode,
    /// Plan mode is on (the approval mode is read-only meanwhile).
    pub planning: bool,
    /// The session runs in `mnemo serve` and this screen is attached to it.
    pub attached: bool,
    /// The last turns' usage and cost, oldest first (`/cost`), at most `TURNS_KEPT`.
    pub turns: std::collections::VecDeque<TurnCost>,
}

/// Turns whose usage `/cost` lists.
pub const TURNS_KEPT: usize = 10;

/// One finished turn's usage and cost.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct TurnCost {
    pub turn: u64,
    pub usage: Usage,
    pub cost_usd: f64,
}

impl Default for Status {
    fn default() -> Self {
        Self {
            model: String::new(),
            session_id: String::new(),
            workspace: String::new(),
            activity: Activity::Starting,
            turn_started: None,
            total: Usage::default(),
            cost_usd: 0.0,
            context_percent: 0.0,
            approval_mode: ApprovalMode::default(),
            planning: false,
            attached: false,
            turns: std::collections::VecDeque::new(),
        }
    }
}

impl Status {
    fn activity_span(&self, now: Instant) -> Span<'static> {
        let colour = match self.activity {
            Activity::Idle => Color::Green,
            Activity::Starting | Activity::Thinking | Activity::Responding => Color::Cyan,
            Activity::RunningTool | Activity::Retrying => Color::Yellow,
            Activity::AwaitingApproval | Activity::AwaitingAnswer => Color::Magenta,
            Activity::Interrupting | Activity::Offline => Color::Red,
        };
        let mut text = format!("● {}", self.activity.label());
        if let Some(started) = self.turn_started
            && self.activity.is_busy()
        {
            let secs = now.saturating_duration_since(started).as_secs();
            text.push_str(&format!(" {secs}s"));
        }
        Span::styled(
            text,
            Style::default().fg(colour).add_modifier(Modifier::BOLD),
        )
    }

    /// The left part's pieces after the activity, in display order, each with its rank: the
    /// lowest gives way first when the line is short (tokens), the approval mode (what the
    /// agent may do) last.
    fn pieces(&self) -> Vec<(u8, Vec<Span<'static>>)> {
        let dim = Style::default().fg(Color::DarkGray);
        let mut pieces = Vec::new();
        if !self.model.is_empty() {
            pieces.push((3, vec![Span::raw(self.model.clone())]));
        }
        if !self.session_id.is_empty() {
            let short: String = self.session_id.chars().take(8).collect();
            pieces.push((1, vec![Span::styled(short, dim)]));
        }
        if self.attached {
            let style = Style::default().fg(Color::Magenta);
            pieces.push((5, vec![Span::styled("attached", style)]));
        }
        if self.planning {
            let style = Style::default()
                .fg(Color::Blue)
                .add_modifier(Modifier::BOLD);
            pieces.push((5, vec![Span::styled("plan mode", style)]));
        } else if self.approval_mode != ApprovalMode::default() {
            let colour = match self.approval_mode {
                ApprovalMode::Full => Color::Red,
                ApprovalMode::ReadOnly | ApprovalMode::Ask | ApprovalMode::Auto => Color::Cyan,
            };
            let label = format!("approval {}", self.approval_mode);
            pieces.push((5, vec![Span::styled(label, Style::default().fg(colour))]));
        }
        if self.total.input_tokens + self.total.output_tokens > 0 {
            let input = self.total.input_tokens
                + self.total.cache_read_tokens
                + self.total.cache_write_tokens;
            let ctx = format!("ctx {:.0}%", self.context_percent);
            pieces.push((4, vec![Span::raw(ctx)]));
            let tokens = format!(
                "↑{} ↓{}",
                compact_count(input),
                compact_count(self.total.output_tokens)
            );
            pieces.push((0, vec![Span::raw(tokens)]));
            pieces.push((2, vec![Span::raw(format!("${:.4}", self.cost_usd))]));
        }
        pieces
    }

    /// The key hints on the right, longest first; `hint` (e.g. "press Ctrl+C again to quit")
    /// replaces them.
    fn hints(&self, hint: Option<&str>) -> Vec<Span<'static>> {
        let dim = Style::default().fg(Color::DarkGray);
        match hint {
            Some(hint) => {
                let style = Style::default()
                    .fg(Color::Yellow)
                    .add_modifier(Modifier::BOLD);
                vec![Span::styled(format!("{hint} "), style)]
            }
            None if self.activity.is_busy() => vec![
                Span::styled("⏎ inject · ⇥ queue · Esc interrupt ", dim),
                Span::styled("Esc interrupt ", dim),
            ],
            None => vec![
                Span::styled("/ commands · Ctrl+T transcript ", dim),
                Span::styled("/ commands ", dim),
            ],
        }
    }

    /// The status line for `width` columns. What must stay (the activity, the interrupt hint)
    /// always does: the less important pieces give way first, then the longer hints.
    pub fn line(
        &self,
        now: Instant,
        hint: Option<&str>,
        width: u16,
    ) -> (Line<'static>, Line<'static>) {
        let width = usize::from(width);
        let mut pieces = self.pieces();
        let hints = self.hints(hint);
        let mut right = 0;
        let activity = self.activity_span(now);
        loop {
            let left = left_line(&activity, &pieces);
            let right_width = str_width(&hints[right].content);
            if left.width() + right_width < width {
                return (left, Line::from(hints[right].clone()));
            }
            let lowest = pieces.iter().map(|(rank, _)| *rank).min();
            match lowest {
                // Tokens and the session id give way before the long hint, the rest after it.
                Some(rank) if rank < 2 || right + 1 == hints.len() => {
                    pieces.retain(|(r, _)| *r != rank);
                }
                _ if right + 1 < hints.len() => right += 1,
                _ => return (left, Line::from(hints[right].clone())),
            }
        }
    }

    /// Draws the line; the right part (the hint) wins over the left when both do not fit.
    pub fn render(&self, now: Instant, hint: Option<&str>, area: Rect, buf: &mut Buffer) {
        let (left, right) = self.line(now, hint, area.width);
        let right_width = (right.width() as u16).min(area.width);
        (&left).render(
            Rect {
                width: area.width - right_width,
                ..area
            },
            buf,
        );
        let x = area.x + area.width - right_width;
        (&right).render(
            Rect {
                x,
                width: right_width,
                ..area
            },
            buf,
        );
    }
}

fn left_line(activity: &Span<'static>, pieces: &[(u8, Vec<Span<'static>>)]) -> Line<'static> {
    let sep = Span::styled(" · ", Style::default().fg(Color::DarkGray));
    let mut spans = vec![Span::raw(" "), activity.clone()];
    for (_, piece) in pieces {
        spans.push(sep.clone());
        spans.extend(piece.iter().cloned());
    }
    Line::from(spans)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn token_counts_are_compact() {
        assert_eq!(compact_count(950), "950");
        assert_eq!(compact_count(12_345), "12.3k");
        assert_eq!(compact_count(1_200_000), "1.2M");
    }

    #[test]
    fn busy_states_show_elapsed_seconds() {
        let now = Instant::now();
        let status = Status {
            activity: Activity::RunningTool,
            turn_started: Some(now),
            model: "m".into(),
            ..Status::default()
        };
        let (left, _) = status.line(now, None, 80);
        assert_eq!(left.to_string(), " ● running tool 0s · m");
    }

    #[test]
    fn the_interrupt_hint_stays_at_every_width_down_to_60_columns() {
        let now = Instant::now();
        let status = Status {
            activity: Activity::RunningTool,
            turn_started: Some(now),
            model: "claude-sonnet-4-5-20250929".into(),
            session_id: "0f3c9a7e-5b1d-4c2e".into(),
            approval_mode: ApprovalMode::Full,
            total: Usage {
                input_tokens: 154_000,
                output_tokens: 8_500,
                ..Usage::default()
            },
            context_percent: 81.0,
            cost_usd: 12.5,
            ..Status::default()
        };
        for width in 60..=200u16 {
            let (left, right) = status.line(now, None, width);
            let shown = format!("{left}{right}");
            assert!(
                right.to_string().contains("Esc interrupt"),
                "{width}: {shown}"
            );
            assert!(
                left.width() + right.width() < usize::from(width),
                "{width}: {shown}"
            );
            assert!(shown.contains("running tool 0s"), "{width}: {shown}");
            assert!(shown.contains("approval full"), "{width}: {shown}");
        }
        let (left, right) = status.line(now, None, 200);
        assert!(left.to_string().contains("$12.5000"));
        assert!(right.to_string().contains("⏎ inject"));
    }
}
