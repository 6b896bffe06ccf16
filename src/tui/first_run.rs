//! The first-run panel. When no model can be prepared (most often: no API key in the
//! environment) the session still opens and this panel says how to configure a provider,
//! instead of the program failing before the user saw anything.

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, BorderType, Borders, Widget};

use super::wrap::wrap_lines;
use crate::host::LaunchError;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FirstRun {
    /// The model and the variable its key is read from, when a key was missing.
    missing_key: Option<(String, String)>,
    /// The launch error in words, for anything else.
    problem: String,
}

impl FirstRun {
    pub fn from_error(error: &LaunchError) -> Self {
        let missing_key = match error {
            LaunchError::MissingKey { model, var } => Some((model.clone(), var.clone())),
            _ => None,
        };
        Self {
            missing_key,
            problem: error.to_string(),
        }
    }

    fn lines(&self) -> Vec<Line<'static>> {
        let bold = Style::default().add_modifier(Modifier::BOLD);
        let code = Style::default().fg(Color::Cyan);
        let mut lines = Vec::new();
        match &self.missing_key {
            Some((model, var)) => {
                lines.push(Line::from(vec![
                    Span::raw("The model "),
                    Span::styled(model.clone(), bold),
                    Span::raw(" needs an API key. Set it in the environment and start again:"),
                ]));
                lines.push(Line::styled(format!("    export {var}=…"), code));
            }
            None => {
                lines.push(Line::styled("No model could be prepared:", bold));
                lines.push(Line::raw(format!("    {}", self.problem)));
            }
        }
        lines.push(Line::raw(""));
        lines.push(Line::raw("Or run a local model (no key needed):"));
        lines.push(Line::styled("    mnemo --model ollama", code));
        lines.push(Line::styled(
            "    mnemo --provider openai --base-url http://localhost:11434/v1 --model NAME",
            code,
        ));
        lines.push(Line::raw(""));
        lines.push(Line::from(vec![
            Span::styled("mnemo config", code),
            Span::raw(" lists the configured models and which have a key. "),
            Span::styled("/quit", code),
            Span::raw(" leaves."),
        ]));
        lines
    }

    /// Rows the panel needs at `width`, borders included.
    pub fn height(&self, width: u16) -> u16 {
        let inner = width.saturating_sub(4).max(1);
        wrap_lines(&self.lines(), inner).len() as u16 + 2
    }

    pub fn render(&self, area: Rect, buf: &mut Buffer) {
        let block = Block::default()
            .borders(Borders::ALL)
            .border_type(BorderType::Rounded)
            .border_style(Style::default().fg(Color::Yellow))
            .title(Span::styled(
                " Set up a model ",
                Style::default().fg(Color::Yellow),
            ));
        let inner = block.inner(area);
        block.render(area, buf);
        let inner = Rect {
            x: inner.x + 1,
            width: inner.width.saturating_sub(2),
            ..inner
        };
        for (row, line) in wrap_lines(&self.lines(), inner.width.max(1))
            .iter()
            .take(usize::from(inner.height))
            .enumerate()
        {
            let y = inner.y + row as u16;
            buf.set_line(inner.x, y, line, inner.width);
        }
    }
}
