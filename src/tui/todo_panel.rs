//! The agent's plan on screen: a cell in the transcript each time it changes, and a small
//! panel above the input box while a step is open.

use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};

use crate::present::{todo_heading, todo_step};
use crate::protocol::{TodoItem, TodoStatus};

/// Most steps the live panel shows; a longer plan shows a window around the open step.
const PANEL_STEPS: usize = 6;

/// The plan with its heading, every step shown: the transcript's record of an update.
pub fn plan_lines(items: &[TodoItem]) -> Vec<Line<'static>> {
    let mut lines = vec![heading(items)];
    lines.extend(items.iter().map(step_line));
    lines
}

/// The live panel: only while a step is open, at most [`PANEL_STEPS`] steps, starting a
/// little before the one in progress (or the first pending one).
pub fn panel_lines(items: &[TodoItem]) -> Vec<Line<'static>> {
    let Some(open) = items.iter().position(|i| i.status != TodoStatus::Done) else {
        return Vec::new();
    };
    let current = items
        .iter()
        .position(|i| i.status == TodoStatus::InProgress)
        .unwrap_or(open);
    let start = current
        .saturating_sub(1)
        .min(items.len().saturating_sub(PANEL_STEPS));
    let end = (start + PANEL_STEPS).min(items.len());
    let dim = Style::default().fg(Color::DarkGray);
    let mut lines = vec![heading(items)];
    if start > 0 {
        lines.push(Line::styled(format!("  … {start} earlier"), dim));
    }
    lines.extend(items[start..end].iter().map(step_line));
    if end < items.len() {
        lines.push(Line::styled(format!("  … {} more", items.len() - end), dim));
    }
    lines
}

fn heading(items: &[TodoItem]) -> Line<'static> {
    let style = Style::default()
        .fg(Color::Blue)
        .add_modifier(Modifier::BOLD);
    Line::styled(format!("☰ {}", todo_heading(items)), style)
}

fn step_line(item: &TodoItem) -> Line<'static> {
    let style = match item.status {
        TodoStatus::Done => Style::default()
            .fg(Color::DarkGray)
            .add_modifier(Modifier::CROSSED_OUT),
        TodoStatus::InProgress => Style::default()
            .fg(Color::Yellow)
            .add_modifier(Modifier::BOLD),
        TodoStatus::Pending => Style::default(),
    };
    Line::from(vec![Span::raw("  "), Span::styled(todo_step(item), style)])
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plan(statuses: &[TodoStatus]) -> Vec<TodoItem> {
        statuses
            .iter()
            .enumerate()
            .map(|(n, status)| TodoItem {
                step: format!("step {n}"),
                status: *status,
            })
            .collect()
    }

    fn texts(lines: &[Line<'static>]) -> Vec<String> {
        lines.iter().map(|l| l.to_string()).collect()
    }

    #[test]
    fn the_panel_follows_the_open_step_and_goes_once_all_are_done() {
        use TodoStatus::{Done, InProgress, Pending};
        let long = plan(&[
            Done, Done, Done, Done, InProgress, Pending, Pending, Pending, Pending,
        ]);
        assert_eq!(
            texts(&panel_lines(&long)),
            [
                "☰ Plan · 4 of 9 done",
                "  … 3 earlier",
                "  [x] step 3",
                "  [>] step 4",
                "  [ ] step 5",
                "  [ ] step 6",
                "  [ ] step 7",
                "  [ ] step 8",
            ]
        );
        assert!(panel_lines(&plan(&[Done, Done])).is_empty());
        assert_eq!(plan_lines(&plan(&[Done, Done])).len(), 3);
    }
}
