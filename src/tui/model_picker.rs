//! The model picker of `/model`: the configured models with whether each has its key, the
//! current one marked. Typing filters; Enter switches the session to the chosen model (one
//! whose key is missing says which variable to set instead).

use crossterm::event::{KeyCode, KeyEvent};
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};

use super::filter::Filter;

/// One configured model as the picker shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ModelInfo {
    pub name: String,
    /// "claude-sonnet-4-5 on api.anthropic.com"
    pub detail: String,
    pub key: KeyNote,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum KeyNote {
    Available(String),
    Missing(String),
    NotNeeded,
    /// The running model, which is not in the config (a command-line or `scripted:` model).
    InUse,
}

impl KeyNote {
    fn describe(&self) -> String {
        match self {
            KeyNote::Available(var) => format!("key in {var}"),
            KeyNote::Missing(var) => format!("no key: set {var}"),
            KeyNote::NotNeeded => "no key needed".to_string(),
            KeyNote::InUse => "in use".to_string(),
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ModelOutcome {
    Switch(String),
    /// The chosen model cannot run: why.
    Refused(String),
    Close,
    /// Enter when nothing matches what was typed.
    Typed(String),
    Handled,
}

#[derive(Debug, Clone)]
pub struct ModelPicker {
    models: Vec<ModelInfo>,
    current: String,
    filter: Filter,
    visible: Vec<usize>,
    selected: usize,
}

impl ModelPicker {
    /// The picker of `models`; a `current` model that is not among them (chosen on the
    /// command line) is listed first, so the list always shows what runs now.
    pub fn new(mut models: Vec<ModelInfo>, current: String) -> Self {
        if !current.is_empty() && !models.iter().any(|m| m.name == current) {
            let running = ModelInfo {
                name: current.clone(),
                detail: "not in the config".to_string(),
                key: KeyNote::InUse,
            };
            models.insert(0, running);
        }
        let selected = models.iter().position(|m| m.name == current).unwrap_or(0);
        Self {
            visible: (0..models.len()).collect(),
            models,
            current,
            filter: Filter::default(),
            selected,
        }
    }

    pub fn typed(&self) -> &str {
        self.filter.query()
    }

    pub fn handle_key(&mut self, key: KeyEvent) -> ModelOutcome {
        let last = self.visible.len().saturating_sub(1);
        match key.code {
            KeyCode::Up => self.selected = self.selected.saturating_sub(1),
            KeyCode::Down => self.selected = (self.selected + 1).min(last),
            KeyCode::Esc => return ModelOutcome::Close,
            KeyCode::Enter => {
                let Some(model) = self.visible.get(self.selected).map(|&i| &self.models[i]) else {
                    return ModelOutcome::Typed(self.filter.query().to_string());
                };
                return match &model.key {
                    KeyNote::Missing(var) => ModelOutcome::Refused(format!(
                        "{} has no key: set {var} in the environment and start mnemo again",
                        model.name
                    )),
                    _ => ModelOutcome::Switch(model.name.clone()),
                };
            }
            _ => {
                if self.filter.handle_key(key) {
                    let filter = &self.filter;
                    self.visible = (0..self.models.len())
                        .filter(|&i| {
                            let m = &self.models[i];
                            filter.matches(&format!("{} {}", m.name, m.detail))
                        })
                        .collect();
                    self.selected = 0;
                }
            }
        }
        ModelOutcome::Handled
    }

    pub fn lines(&self) -> Vec<Line<'static>> {
        let dim = Style::default().fg(Color::DarkGray);
        let title = Style::default()
            .fg(Color::Cyan)
            .add_modifier(Modifier::BOLD);
        let mut lines = vec![Line::default(), Line::styled("Switch the model", title)];
        if !self.filter.query().is_empty() {
            lines.push(Line::from(vec![
                Span::styled("  filter: ", dim),
                Span::raw(self.filter.query().to_string()),
            ]));
        }
        if self.visible.is_empty() {
            lines.push(Line::styled("  no model matches", dim));
        }
        let name_width = self.models.iter().map(|m| m.name.len()).max().unwrap_or(0);
        let key_width = self
            .models
            .iter()
            .map(|m| m.key.describe().len())
            .max()
            .unwrap_or(0);
        for (slot, &index) in self.visible.iter().enumerate() {
            let model = &self.models[index];
            let selected = slot == self.selected;
            let base = match selected {
                true => Style::default().fg(Color::Black).bg(Color::Cyan),
                false => Style::default(),
            };
            let key_style = match (&model.key, selected) {
                (_, true) => base,
                (KeyNote::Missing(_), false) => Style::default().fg(Color::Red),
                _ => Style::default().fg(Color::Green),
            };
            let current = if model.name == self.current {
                " (current)"
            } else {
                ""
            };
            lines.push(Line::from(vec![
                Span::styled(if selected { "› " } else { "  " }, base),
                Span::styled(
                    format!("{:<name_width$}", model.name),
                    base.add_modifier(Modifier::BOLD),
                ),
                Span::styled(
                    format!("  {:<key_width$}  ", model.key.describe()),
                    key_style,
                ),
                Span::styled(
                    format!("{}{current}", model.detail),
                    if selected { base } else { dim },
                ),
            ]));
        }
        lines.push(Line::styled(
            "type to filter · ↑↓ choose · Enter switch · Esc close",
            dim,
        ));
        lines
    }
}

#[cfg(test)]
mod tests {
    use crossterm::event::KeyModifiers;

    use super::*;

    fn info(name: &str, key: KeyNote) -> ModelInfo {
        ModelInfo {
            name: name.into(),
            detail: format!("{name}-id"),
            key,
        }
    }

    #[test]
    fn filtering_then_enter_switches_and_a_missing_key_is_explained() {
        let models = vec![
            info(
                "claude-sonnet",
                KeyNote::Available("ANTHROPIC_API_KEY".into()),
            ),
            info("gpt", KeyNote::Missing("OPENAI_API_KEY".into())),
            info("ollama", KeyNote::NotNeeded),
        ];
        let mut picker = ModelPicker::new(models, "claude-sonnet".into());
        let key = |c| KeyEvent::new(KeyCode::Char(c), KeyModifiers::NONE);
        picker.handle_key(key('g'));
        picker.handle_key(key('p'));
        let enter = KeyEvent::new(KeyCode::Enter, KeyModifiers::NONE);
        let refused = picker.handle_key(enter);
        assert!(matches!(refused, ModelOutcome::Refused(m) if m.contains("set OPENAI_API_KEY")));
        picker.handle_key(KeyEvent::new(KeyCode::Backspace, KeyModifiers::NONE));
        picker.handle_key(KeyEvent::new(KeyCode::Backspace, KeyModifiers::NONE));
        picker.handle_key(key('o'));
        picker.handle_key(key('l'));
        assert_eq!(
            picker.handle_key(enter),
            ModelOutcome::Switch("ollama".into())
        );
    }

    #[test]
    fn a_model_given_on_the_command_line_is_listed_as_current() {
        let models = vec![info("gpt", KeyNote::Missing("OPENAI_API_KEY".into()))];
        let mut picker = ModelPicker::new(models, "scripted:/tmp/s.json".into());
        let text: Vec<String> = picker.lines().iter().map(|l| l.to_string()).collect();
        let first = text.get(2).map(String::as_str).unwrap_or_default();
        assert!(first.starts_with("› scripted:/tmp/s.json"), "{text:#?}");
        assert!(first.contains("in use"), "{text:#?}");
        assert!(first.ends_with("(current)"), "{text:#?}");
        let enter = KeyEvent::new(KeyCode::Enter, KeyModifiers::NONE);
        assert_eq!(
            picker.handle_key(enter),
            ModelOutcome::Switch("scripted:/tmp/s.json".into())
        );
    }
}
