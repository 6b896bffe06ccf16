//! Sub-agents in the live area: one line per running sub-agent, indented by its depth under
//! whoever started it, with what it is doing now and for how long.

use std::time::Instant;

use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};

use crate::protocol::AgentActivity;
use crate::tools::describe;

#[derive(Debug, Clone, PartialEq)]
pub struct AgentPane {
    pub run_id: String,
    pub parent_run: Option<String>,
    pub depth: u32,
    pub label: String,
    pub activity: AgentActivity,
    pub started: Instant,
}

impl AgentPane {
    pub fn line(&self, now: Instant) -> Line<'static> {
        let indent = "  ".repeat(self.depth.saturating_sub(1) as usize);
        let secs = now.saturating_duration_since(self.started).as_secs_f64();
        let dim = Style::default().fg(Color::DarkGray);
        Line::from(vec![
            Span::raw(format!("{indent}  ")),
            Span::styled("↳ ", Style::default().fg(Color::Magenta)),
            Span::styled(
                self.run_id.clone(),
                Style::default()
                    .fg(Color::Magenta)
                    .add_modifier(Modifier::BOLD),
            ),
            Span::raw(format!("  {}", self.label)),
            Span::styled(
                format!("  · {} · {secs:.1}s", describe::activity(&self.activity)),
                dim,
            ),
        ])
    }
}

/// The panes in tree order: every sub-agent right under the one that started it.
pub fn tree_order(panes: &[AgentPane]) -> Vec<&AgentPane> {
    fn visit<'a>(panes: &'a [AgentPane], parent: Option<&str>, out: &mut Vec<&'a AgentPane>) {
        for pane in panes.iter().filter(|p| p.parent_run.as_deref() == parent) {
            out.push(pane);
            visit(panes, Some(&pane.run_id), out);
        }
    }
    let mut out = Vec::with_capacity(panes.len());
    visit(panes, None, &mut out);
    // Panes whose parent already finished still show, at the end.
    for pane in panes {
        if !out.iter().any(|p| p.run_id == pane.run_id) {
            out.push(pane);
        }
    }
    out
}
