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
            | Activity::AwaitingApproval => true,
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
        }
    }
}

/// Tokens as "950", "12.3k", "1.2M".
pub fn compact_count(n: u64) -> String {
    match n {
        0..1_000 => n.to_string(),
        1_000..1_000_000 => format!("{:.1}k", n as f64 / 1e3),
        _ => format!("{:.1}M", n as f64 / 1e6),
    }
}

impl Status {
    fn activity_span(&self, now: Instant) -> Span<'static> {
        let colour = match self.activity {
            Activity::Idle => Color::Green,
            Activity::Starting | Activity::Thinking | Activity::Responding => Color::Cyan,
            Activity::RunningTool | Activity::Retrying => Color::Yellow,
            Activity::AwaitingApproval => Color::Magenta,
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

    /// The status line; `hint` replaces the key hints on the right (e.g. "press Ctrl+C
    /// again to quit").
    pub fn line(&self, now: Instant, hint: Option<&str>) -> (Line<'static>, Line<'static>) {
        let dim = Style::default().fg(Color::DarkGray);
        let sep = || Span::styled(" · ", dim);
        let mut left = vec![Span::raw(" "), self.activity_span(now)];
        if !self.model.is_empty() {
            left.push(sep());
            left.push(Span::raw(self.model.clone()));
        }
        if !self.session_id.is_empty() {
            left.push(sep());
            let short: String = self.session_id.chars().take(8).collect();
            left.push(Span::styled(short, dim));
        }
        if self.approval_mode != ApprovalMode::default() {
            left.push(sep());
            let colour = match self.approval_mode {
                ApprovalMode::Full => Color::Red,
                ApprovalMode::ReadOnly | ApprovalMode::Ask | ApprovalMode::Auto => Color::Cyan,
            };
            let label = format!("approval {}", self.approval_mode);
            left.push(Span::styled(label, Style::default().fg(colour)));
        }
        if self.total.input_tokens + self.total.output_tokens > 0 {
            let input = self.total.input_tokens
                + self.total.cache_read_tokens
                + self.total.cache_write_tokens;
            left.push(sep());
            left.push(Span::raw(format!("ctx {:.0}%", self.context_percent)));
            left.push(sep());
            left.push(Span::raw(format!(
                "↑{} ↓{}",
                compact_count(input),
                compact_count(self.total.output_tokens)
            )));
            left.push(sep());
            left.push(Span::raw(format!("${:.4}", self.cost_usd)));
        }
        let right = match hint {
            Some(hint) => Span::styled(
                format!("{hint} "),
                Style::default()
                    .fg(Color::Yellow)
                    .add_modifier(Modifier::BOLD),
            ),
            None if self.activity.is_busy() => {
                Span::styled("⏎ inject · ⇥ queue · Esc interrupt ".to_string(), dim)
            }
            None => Span::styled("/ commands · Ctrl+T transcript ".to_string(), dim),
        };
        (Line::from(left), Line::from(right))
    }

    /// Draws the line; a hint wins over the left part when both do not fit.
    pub fn render(&self, now: Instant, hint: Option<&str>, area: Rect, buf: &mut Buffer) {
        let (left, right) = self.line(now, hint);
        let right_width = (str_width(&right.to_string()) as u16).min(area.width);
        let fits = left.width() as u16 + right_width < area.width;
        let left_width = if fits || hint.is_none() {
            area.width
        } else {
            area.width - right_width
        };
        (&left).render(
            Rect {
                width: left_width,
                ..area
            },
            buf,
        );
        if fits || hint.is_some() {
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
        let (left, _) = status.line(now, None);
        assert_eq!(left.to_string(), " ● running tool 0s · m");
    }
}
