//! One pane per tool call: the tool name and its key argument, the live output while it runs
//! (last lines), then status and duration when done. A file change shows its diff (folded
//! to its first lines outside the expanded pager view); a failed call shows its error.

use crate::tools::describe::{key_argument, result_line};
use std::time::Instant;

use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};
use serde_json::Value;

use super::cells::Detail;
use super::diff;
use crate::protocol::ToolStatus;
use crate::tools::approvals::DENIED_BY_USER;

/// Live output kept per running call; older bytes are dropped (the finished call carries the
/// full, capped output).
const LIVE_TAIL_BYTES: usize = 16 * 1024;
/// Output lines shown under a running or finished call in the live view and scrollback.
pub const PREVIEW_LINES: usize = 5;
/// Diff lines shown before "… more lines" outside the pager.
const DIFF_PREVIEW_LINES: usize = 40;

/// A call that has started and not finished.
#[derive(Debug, Clone)]
pub struct RunningTool {
    pub call_id: String,
    pub name: String,
    pub arguments: Value,
    pub started: Instant,
    output: String,
}

impl RunningTool {
    pub fn new(call_id: String, name: String, arguments: Value, started: Instant) -> Self {
        Self {
            call_id,
            name,
            arguments,
            started,
            output: String::new(),
        }
    }

    pub fn push_output(&mut self, chunk: &str) {
        self.output.push_str(chunk);
        if self.output.len() > LIVE_TAIL_BYTES {
            let mut cut = self.output.len() - LIVE_TAIL_BYTES;
            while !self.output.is_char_boundary(cut) {
                cut += 1;
            }
            self.output.drain(..cut);
        }
    }

    /// Header and the last output lines, for the live area.
    pub fn lines(&self, now: Instant) -> Vec<Line<'static>> {
        let secs = now.saturating_duration_since(self.started).as_secs_f64();
        let mut lines = vec![header(
            Span::styled("⋯ ", Style::default().fg(Color::Yellow)),
            &self.name,
            &self.arguments,
            format!("{secs:.1}s"),
        )];
        lines.extend(
            tail(&self.output, PREVIEW_LINES, dim())
                .into_iter()
                .map(indent),
        );
        lines
    }
}

/// A finished call, as a transcript cell.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolCell {
    pub call_id: String,
    pub name: String,
    pub arguments: Value,
    pub status: ToolStatus,
    pub output: String,
    pub duration_ms: u64,
}

impl ToolCell {
    pub fn lines(&self, detail: Detail) -> Vec<Line<'static>> {
        let (mark, mark_style) = match self.status {
            ToolStatus::Ok => ("✓ ", Style::default().fg(Color::Green)),
            ToolStatus::Error => ("✗ ", Style::default().fg(Color::Red)),
        };
        let duration = format_duration(self.duration_ms);
        let mut lines = vec![header(
            Span::styled(mark, mark_style),
            &self.name,
            &self.arguments,
            duration,
        )];
        let body: Vec<Line<'static>> = match self.status {
            // The model is told at length not to try again; the person only needs the fact.
            ToolStatus::Error if self.output.contains(DENIED_BY_USER) => {
                vec![Line::styled(
                    "denied by you",
                    Style::default().fg(Color::Yellow),
                )]
            }
            ToolStatus::Error => {
                let red = Style::default().fg(Color::Red);
                match detail {
                    Detail::Expanded => styled_lines(&self.output, red),
                    Detail::Collapsed => tail(&self.output, PREVIEW_LINES + 3, red),
                }
            }
            ToolStatus::Ok if diff::has_diff(&self.output) => {
                let fold = match detail {
                    Detail::Expanded => diff::Fold::All,
                    Detail::Collapsed => diff::Fold::After {
                        lines: DIFF_PREVIEW_LINES,
                        hint: " (Ctrl+T to see all)",
                    },
                };
                let path = self.arguments.get("path").and_then(Value::as_str);
                diff::render(&self.output, path, fold)
            }
            ToolStatus::Ok => match detail {
                Detail::Expanded => styled_lines(&self.output, dim()),
                Detail::Collapsed => match result_line(&self.name, &self.output) {
                    Some(line) => vec![Line::raw(line)],
                    None => self.collapsed_output(),
                },
            },
        };
        lines.extend(body.into_iter().map(indent));
        lines
    }

    /// The output of a successful call outside the pager: its last lines.
    fn collapsed_output(&self) -> Vec<Line<'static>> {
        match self.name.as_str() {
            "read_file" => {
                let count = self.output.lines().count();
                vec![Line::styled(format!("{count} lines"), dim())]
            }
            _ => tail(&self.output, PREVIEW_LINES, dim()),
        }
    }
}

fn header(mark: Span<'static>, name: &str, arguments: &Value, timing: String) -> Line<'static> {
    let argument = key_argument(name, arguments);
    let mut spans = vec![
        mark,
        Span::styled(
            name.to_string(),
            Style::default().add_modifier(Modifier::BOLD),
        ),
    ];
    if !argument.is_empty() {
        spans.push(Span::raw(format!("  {argument}")));
    }
    spans.push(Span::styled(format!("  · {timing}"), dim()));
    Line::from(spans)
}

fn format_duration(ms: u64) -> String {
    if ms < 1000 {
        format!("{ms}ms")
    } else {
        format!("{:.1}s", ms as f64 / 1000.0)
    }
}

fn dim() -> Style {
    Style::default().fg(Color::DarkGray)
}

fn indent(line: Line<'static>) -> Line<'static> {
    let mut spans = Vec::with_capacity(line.spans.len() + 1);
    spans.push(Span::raw("  "));
    spans.extend(line.spans);
    Line::from(spans).style(line.style)
}

fn styled_lines(text: &str, style: Style) -> Vec<Line<'static>> {
    text.lines()
        .map(|l| Line::styled(l.replace('\t', "    "), style))
        .collect()
}

/// The last `count` lines of `text`, preceded by a note of how many were left out.
fn tail(text: &str, count: usize, style: Style) -> Vec<Line<'static>> {
    let all: Vec<&str> = text.lines().collect();
    let skipped = all.len().saturating_sub(count);
    let mut lines = Vec::with_capacity(count + 1);
    if skipped > 0 {
        lines.push(Line::styled(format!("… {skipped} earlier lines"), dim()));
    }
    lines.extend(
        all[skipped..]
            .iter()
            .map(|l| Line::styled(l.replace('\t', "    "), style)),
    );
    lines
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn the_key_argument_is_the_path_command_or_pattern() {
        assert_eq!(key_argument("shell", &json!({"command": "ls\nwc"})), "ls…");
        assert_eq!(key_argument("read_file", &json!({"path": "a.rs"})), "a.rs");
        let grep = json!({"pattern": "fn main", "path": "src"});
        assert_eq!(key_argument("grep", &grep), "fn main  in src");
        assert_eq!(key_argument("custom", &json!({"x": 1})), "{\"x\":1}");
    }

    #[test]
    fn live_output_keeps_only_the_tail() {
        let mut running = RunningTool::new("c".into(), "shell".into(), json!({}), Instant::now());
        for n in 0..10_000 {
            running.push_output(&format!("line {n}\n"));
        }
        let lines = running.lines(running.started);
        assert_eq!(lines.len(), 1 + 1 + PREVIEW_LINES);
        assert_eq!(lines[lines.len() - 1].to_string(), "  line 9999");
    }
}
