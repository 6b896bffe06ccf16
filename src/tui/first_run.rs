//! The first-run panel. When no model can be prepared (most often: no API key in the
//! environment) the session still opens and this panel sets one up: a configured model whose
//! key is in the environment, or a local server (the steps are in `setup`), instead of the
//! program failing before the user saw anything.

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, BorderType, Borders, Widget};

use super::setup::{OLLAMA_URL, Offer, Setup, Step};
use super::wrap::wrap_lines;
use crate::host::LaunchError;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FirstRun {
    /// The model and the variable its key is read from, when a key was missing.
    missing_key: Option<(String, String)>,
    /// The launch error in words, for anything else.
    problem: String,
    /// The set-up steps, when choosing another model can help.
    setup: Option<Setup>,
}

impl FirstRun {
    pub fn from_error(error: &LaunchError) -> Self {
        let missing_key = match error {
            LaunchError::MissingKey { model, var } => Some((model.clone(), var.clone())),
            _ => None,
        };
        let about_the_model = matches!(
            error,
            LaunchError::MissingKey { .. } | LaunchError::Config(_) | LaunchError::Script(_)
        );
        Self {
            missing_key,
            problem: error.to_string(),
            setup: about_the_model.then(|| Setup::new(Vec::new())),
        }
    }

    /// The configured models whose key is in the environment, offered first.
    pub fn with_offers(mut self, offers: Vec<Offer>) -> Self {
        if let Some(setup) = &mut self.setup {
            *setup = Setup::new(offers);
        }
        self
    }

    /// Whether the panel asks the set-up questions (what is typed answers them).
    pub fn sets_up(&self) -> bool {
        self.setup.is_some()
    }

    /// The set-up steps, when the panel offers them.
    pub fn setup_mut(&mut self) -> Option<&mut Setup> {
        self.setup.as_mut()
    }

    fn lines(&self) -> Vec<Line<'static>> {
        let bold = Style::default().add_modifier(Modifier::BOLD);
        let code = Style::default().fg(Color::Cyan);
        let mut lines = Vec::new();
        if matches!(
            self.setup.as_ref().map(|s| &s.step),
            None | Some(Step::Choose { .. })
        ) {
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
        }
        match &self.setup {
            Some(setup) => setup_lines(setup, &mut lines),
            None => {
                lines.push(Line::raw("Or run a local model (no key needed):"));
                lines.push(Line::styled("    mnemo --model ollama", code));
                lines.push(Line::styled(
                    "    mnemo --provider openai --base-url http://localhost:11434/v1 --model NAME",
                    code,
                ));
                lines.push(Line::raw(""));
            }
        }
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

/// The lines of the set-up step the panel is at.
fn setup_lines(setup: &Setup, lines: &mut Vec<Line<'static>>) {
    let bold = Style::default().add_modifier(Modifier::BOLD);
    let code = Style::default().fg(Color::Cyan);
    let warn = Style::default().fg(Color::Yellow);
    let note = |lines: &mut Vec<Line<'static>>, note: &Option<String>| {
        if let Some(note) = note {
            lines.push(Line::styled(format!("  {note}"), warn));
        }
    };
    match &setup.step {
        Step::Choose { note: why } => {
            lines.push(Line::styled(
                "Or set one up now: type its number and press Enter",
                bold,
            ));
            for (n, offer) in setup.offers.iter().enumerate() {
                lines.push(Line::from(vec![
                    Span::styled(format!("  {}  ", n + 1), code),
                    Span::styled(offer.name.clone(), bold),
                    Span::raw(format!(" · its key is in {}", offer.var)),
                ]));
            }
            lines.push(Line::from(vec![
                Span::styled(format!("  {}  ", setup.local_number()), code),
                Span::styled("a local server", bold),
                Span::raw(" · OpenAI-compatible: llama.cpp, Ollama, vLLM, LM Studio"),
            ]));
            note(lines, why);
            lines.push(Line::raw(""));
            lines.push(Line::from(vec![
                Span::raw("Or from the command line: "),
                Span::styled("mnemo --model ollama", code),
            ]));
        }
        Step::Url { note: why } => {
            lines.push(Line::styled("A local OpenAI-compatible server", bold));
            lines.push(Line::raw(format!(
                "Type its URL and press Enter (Ollama: {OLLAMA_URL}); Esc goes back"
            )));
            note(lines, why);
        }
        Step::Checking { url } => {
            lines.push(Line::raw(format!("Checking {url} …")));
        }
        Step::Model {
            answered, models, ..
        } => {
            lines.push(Line::styled(
                format!("✓ {answered}"),
                Style::default().fg(Color::Green),
            ));
            lines.push(Line::raw(
                "Type the name of the model to use and press Enter; Esc goes back",
            ));
            if !models.is_empty() {
                lines.push(Line::raw(format!("  it serves: {}", models.join(", "))));
            }
        }
        Step::Saving => lines.push(Line::raw("Saving the choice and starting …")),
    }
    lines.push(Line::raw(""));
}
