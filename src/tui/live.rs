//! The live area under the scrollback: the first-run panel, the unfinished line of the
//! streamed message, reasoning in progress, running tool panes, pending input, the session
//! picker, the command popup, the composer and the status line. Its height follows its content.

use std::time::Instant;

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::Widget;

use super::agents::tree_order;
use super::cells::reasoning_summary;
use super::slash::{PopupItem, SlashCommand};
use super::state::AppState;
use super::wrap::{wrap_line, wrap_lines};
use crate::protocol::UserMessageKind;

/// The live area laid out for one width.
pub struct LiveView {
    lines: Vec<Line<'static>>,
    first_run_height: u16,
    popup: Option<(Vec<PopupItem>, usize)>,
    composer_height: u16,
}

/// Lays the live area out at `width`, at most `max_height` rows: when content does not fit,
/// its oldest lines give way first; the composer and status line always stay.
pub fn live_view(state: &AppState, width: u16, max_height: u16, now: Instant) -> LiveView {
    let popup = state.composer.popup();
    let popup_height = popup.as_ref().map_or(0, |(c, _)| c.len() as u16);
    let mut composer_height = state.composer.height(width);
    let fixed = popup_height + 2;
    composer_height = composer_height.min(max_height.saturating_sub(fixed).max(1));
    let mut room = max_height.saturating_sub(fixed + composer_height);
    let first_run_height = match &state.first_run {
        Some(panel) if panel.height(width) <= room => panel.height(width),
        _ => 0,
    };
    room -= first_run_height;
    let mut lines = content_lines(state, width, now);
    let excess = lines.len().saturating_sub(usize::from(room));
    lines.drain(..excess);
    LiveView {
        lines,
        first_run_height,
        popup,
        composer_height,
    }
}

fn content_lines(state: &AppState, width: u16, now: Instant) -> Vec<Line<'static>> {
    let mut logical: Vec<Line<'static>> = Vec::new();
    let dim_italic = Style::default()
        .fg(Color::DarkGray)
        .add_modifier(Modifier::ITALIC);
    if !state.reasoning.is_empty() {
        let summary = reasoning_summary(&state.reasoning);
        let one_line: String = summary.chars().take(usize::from(width)).collect();
        logical.push(Line::default());
        logical.push(Line::styled(one_line, dim_italic));
    }
    let tail = state.stream.tail_lines(width);
    if !tail.is_empty() && !state.stream.has_committed() {
        logical.push(Line::default());
    }
    logical.extend(tail);
    for tool in &state.running {
        logical.push(Line::default());
        logical.extend(tool.lines(now));
    }
    if !state.agents.is_empty() {
        logical.push(Line::default());
        for pane in tree_order(&state.agents) {
            logical.push(pane.line(now));
        }
    }
    if state.plan_offer.is_some() {
        logical.push(Line::default());
        logical.extend(super::plan_offer::offer_lines());
    }
    let plan = super::todo_panel::panel_lines(&state.todo);
    if !plan.is_empty() {
        logical.push(Line::default());
        logical.extend(plan);
    }
    if !state.pending.is_empty() {
        logical.push(Line::default());
    }
    for pending in &state.pending {
        let (label, colour) = match pending.kind {
            _ if pending.waiting => ("⏳ sent when the session is ready: ", Color::Cyan),
            UserMessageKind::Injected => ("↳ injecting: ", Color::Yellow),
            UserMessageKind::Queued => ("⏭ queued: ", Color::Magenta),
            UserMessageKind::Prompt
            | UserMessageKind::Continuation
            | UserMessageKind::StepLimit
            | UserMessageKind::SkillRequest => ("› ", Color::DarkGray),
        };
        let folded = super::paste::folded(&pending.text, &pending.folds);
        let shown = folded.as_deref().unwrap_or(&pending.text);
        let mut text = shown.lines().next().unwrap_or_default().to_string();
        if shown.lines().nth(1).is_some() {
            text.push_str(" …");
        }
        logical.push(Line::from(vec![
            Span::styled(label, Style::default().fg(colour)),
            Span::styled(text, Style::default().fg(Color::Gray)),
        ]));
    }
    if let Some(prompt) = state.approvals.first() {
        logical.push(Line::default());
        logical.extend(prompt.lines());
        if state.approvals.len() > 1 {
            let more = format!(
                "  ({} more questions after this one)",
                state.approvals.len() - 1
            );
            logical.push(Line::styled(more, Style::default().fg(Color::DarkGray)));
        }
    }
    if let Some(prompt) = state
        .questions
        .first()
        .filter(|_| state.approvals.is_empty())
    {
        logical.push(Line::default());
        logical.extend(prompt.lines());
    }
    if let Some(picker) = &state.picker {
        logical.extend(picker.lines(width));
    }
    if let Some(picker) = &state.model_picker {
        logical.extend(picker.lines());
    }
    if let Some(picker) = &state.rewind_picker {
        logical.extend(picker.lines());
    }
    let mut lines = Vec::with_capacity(logical.len());
    for line in &logical {
        wrap_line(line, width, &mut lines);
    }
    lines
}

impl LiveView {
    pub fn height(&self) -> u16 {
        let popup = self.popup.as_ref().map_or(0, |(c, _)| c.len() as u16);
        self.first_run_height + self.lines.len() as u16 + popup + 1 + self.composer_height + 1
    }

    /// Draws into `area` (as tall as `height()`).
    pub fn render(&self, state: &AppState, area: Rect, buf: &mut Buffer, now: Instant) {
        let mut y = area.y;
        let bottom = area.y + area.height;
        let mut take = |rows: u16| {
            let rect = Rect::new(area.x, y, area.width, rows.min(bottom.saturating_sub(y)));
            y = (y + rows).min(bottom);
            rect
        };
        if let Some(panel) = &state.first_run {
            let rect = take(self.first_run_height);
            if rect.height > 0 {
                panel.render(rect, buf);
            }
        }
        for line in &self.lines {
            let rect = take(1);
            buf.set_line(rect.x, rect.y, line, rect.width);
        }
        if let Some((commands, selected)) = &self.popup {
            for (index, command) in commands.iter().enumerate() {
                let rect = take(1);
                popup_row(command, index == *selected).render(rect, buf);
            }
        }
        let rule = take(1);
        let dim = Style::default().fg(Color::DarkGray);
        buf.set_string(rule.x, rule.y, "─".repeat(usize::from(rule.width)), dim);
        let composer = take(self.composer_height);
        state.composer.render(composer, buf);
        let status = take(1);
        state.status.render(now, state.hint(now), status, buf);
    }
}

fn popup_row(command: &PopupItem, selected: bool) -> Line<'static> {
    let (name_style, text_style) = if selected {
        let style = Style::default().fg(Color::Black).bg(Color::Cyan);
        (style.add_modifier(Modifier::BOLD), style)
    } else {
        (
            Style::default().fg(Color::Cyan),
            Style::default().fg(Color::DarkGray),
        )
    };
    Line::from(vec![
        Span::styled(
            format!(
                "  /{:<width$} ",
                command.name,
                width = SlashCommand::NAME_WIDTH
            ),
            name_style,
        ),
        Span::styled(format!("{} ", command.description), text_style),
    ])
}

/// What the terminal shows: the end of the scrollback `history` with the live area right
/// under it. Tests and benchmarks use it to see the screen as a user would.
pub fn render_screen(
    state: &AppState,
    history: &[Line<'static>],
    area: Rect,
    buf: &mut Buffer,
    now: Instant,
) {
    let view = live_view(state, area.width, area.height.saturating_sub(1), now);
    let live_height = view.height().min(area.height);
    let wrapped = wrap_lines(history, area.width);
    let shown = wrapped.len().min(usize::from(area.height - live_height));
    for (row, line) in wrapped[wrapped.len() - shown..].iter().enumerate() {
        buf.set_line(area.x, area.y + row as u16, line, area.width);
    }
    let live = Rect::new(area.x, area.y + shown as u16, area.width, live_height);
    view.render(state, live, buf, now)
}
