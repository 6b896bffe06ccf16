//! The steps of the set-up panel, answered in the message box: choose a configured model
//! whose key is in the environment, or a local OpenAI-compatible server (its URL, checked
//! with one request, then the model's name). The app loop does the checking and the saving
//! (`setup_apply`); this holds only what was asked and answered.

use crate::config::user_file::ServedModel;
use crate::llm::reach::Probe;

/// Where llama.cpp's server and most others listen.
pub const DEFAULT_URL: &str = "http://127.0.0.1:8080/v1";
/// Ollama's OpenAI-compatible endpoint.
pub const OLLAMA_URL: &str = "http://127.0.0.1:11434/v1";
/// The name the local server's model gets in the user config.
pub const LOCAL_ENTRY: &str = "local";

/// A configured model whose key is set in the environment.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Offer {
    pub name: String,
    pub var: String,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Step {
    /// The offers and the local server, by number; `note` says what was wrong with an answer.
    Choose {
        note: Option<String>,
    },
    /// The server's URL; `note` holds the last check that failed.
    Url {
        note: Option<String>,
    },
    Checking {
        url: String,
    },
    /// The model's name on a server that answered.
    Model {
        base_url: String,
        answered: String,
        models: Vec<String>,
    },
    /// The choice is being written and the session started.
    Saving,
}

/// What the app does with an answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SetupAction {
    /// Show the panel again, with this text in the box.
    Ask(Option<String>),
    /// Check that a server answers at this base URL.
    Check(String),
    /// Make this model the default (writing its entry when `served`) and start a session.
    Use {
        name: String,
        served: Option<ServedModel>,
    },
}

/// The panel's questions and answers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Setup {
    pub offers: Vec<Offer>,
    pub step: Step,
}

impl Setup {
    pub fn new(offers: Vec<Offer>) -> Self {
        Self {
            offers,
            step: Step::Choose { note: None },
        }
    }

    /// The number that picks the local server.
    pub fn local_number(&self) -> usize {
        self.offers.len() + 1
    }

    /// An answer typed in the message box.
    pub fn answer(&mut self, text: &str) -> SetupAction {
        let text = text.trim();
        match &self.step {
            Step::Choose { .. } if looks_like_url(text) => self.check(text),
            Step::Choose { .. } => match text.parse::<usize>() {
                Ok(n) if (1..=self.offers.len()).contains(&n) => {
                    self.step = Step::Saving;
                    SetupAction::Use {
                        name: self.offers[n - 1].name.clone(),
                        served: None,
                    }
                }
                Ok(n) if n == self.local_number() => {
                    self.step = Step::Url { note: None };
                    SetupAction::Ask(Some(DEFAULT_URL.to_string()))
                }
                _ => {
                    let note = format!("type a number from 1 to {}", self.local_number());
                    self.step = Step::Choose { note: Some(note) };
                    SetupAction::Ask(None)
                }
            },
            Step::Url { .. } if looks_like_url(text) => self.check(text),
            Step::Url { .. } => {
                let note = format!("“{text}” is not a URL: it starts with http:// or https://");
                self.step = Step::Url { note: Some(note) };
                SetupAction::Ask(Some(text.to_string()))
            }
            Step::Model { base_url, .. } if !text.is_empty() => {
                let served = ServedModel {
                    base_url: base_url.clone(),
                    model: text.to_string(),
                };
                self.step = Step::Saving;
                SetupAction::Use {
                    name: LOCAL_ENTRY.to_string(),
                    served: Some(served),
                }
            }
            Step::Model { .. } | Step::Checking { .. } | Step::Saving => {
                SetupAction::Ask(Some(text.to_string()).filter(|t| !t.is_empty()))
            }
        }
    }

    fn check(&mut self, url: &str) -> SetupAction {
        let url = url.trim_end_matches('/').to_string();
        self.step = Step::Checking { url: url.clone() };
        SetupAction::Check(url)
    }

    /// What the check of `url` found; the text for the box next.
    pub fn checked(&mut self, url: &str, found: &Probe) -> Option<String> {
        match found.answers() {
            true => {
                let models = match &found.answer {
                    crate::llm::reach::Answer::Answers { models, .. } => models.clone(),
                    crate::llm::reach::Answer::Silent(_) => Vec::new(),
                };
                let first = models.first().cloned();
                self.step = Step::Model {
                    base_url: url.to_string(),
                    answered: found.to_string(),
                    models,
                };
                first
            }
            false => {
                let note = format!("{found}: start it, or type another URL");
                self.step = Step::Url { note: Some(note) };
                Some(url.to_string())
            }
        }
    }

    /// Esc: from the server's questions back to the choice; whether it went back.
    pub fn back(&mut self) -> bool {
        let asking = matches!(self.step, Step::Url { .. } | Step::Model { .. });
        if asking {
            self.step = Step::Choose { note: None };
        }
        asking
    }

    /// The choice could not be saved or used: back to the start, saying why.
    pub fn failed(&mut self, why: String) {
        self.step = Step::Choose { note: Some(why) };
    }
}

fn looks_like_url(text: &str) -> bool {
    (text.starts_with("http://") || text.starts_with("https://"))
        && crate::llm::http::host_of(text).is_some()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::llm::reach::Answer;

    fn offers() -> Vec<Offer> {
        vec![Offer {
            name: "claude-sonnet".into(),
            var: "ANTHROPIC_API_KEY".into(),
        }]
    }

    #[test]
    fn a_keyed_model_is_chosen_by_its_number() {
        let mut setup = Setup::new(offers());
        assert_eq!(
            setup.answer("1"),
            SetupAction::Use {
                name: "claude-sonnet".into(),
                served: None
            }
        );
    }

    #[test]
    fn a_local_server_is_checked_then_named() {
        let mut setup = Setup::new(offers());
        assert_eq!(setup.answer("7"), SetupAction::Ask(None));
        assert!(matches!(setup.step, Step::Choose { note: Some(_) }));
        assert_eq!(
            setup.answer("2"),
            SetupAction::Ask(Some(DEFAULT_URL.into()))
        );
        assert!(setup.back(), "Esc goes back to the choice");
        assert!(matches!(setup.step, Step::Choose { note: None }));
        assert!(!setup.back());
        assert_eq!(
            setup.answer("2"),
            SetupAction::Ask(Some(DEFAULT_URL.into()))
        );
        assert_eq!(
            setup.answer("localhost:8080"),
            SetupAction::Ask(Some("localhost:8080".into()))
        );
        let url = "http://127.0.0.1:9/v1";
        assert_eq!(setup.answer(url), SetupAction::Check(url.into()));
        let down = Probe {
            server: "127.0.0.1:9".into(),
            answer: Answer::Silent("connection refused".into()),
        };
        assert_eq!(setup.checked(url, &down), Some(url.to_string()));
        let Step::Url { note: Some(note) } = &setup.step else {
            panic!("{:?}", setup.step);
        };
        assert!(
            note.contains("does not answer (connection refused)"),
            "{note}"
        );
        assert_eq!(setup.answer(url), SetupAction::Check(url.into()));
        let up = Probe {
            server: "127.0.0.1:9".into(),
            answer: Answer::Answers {
                status: 200,
                models: vec!["qwen".into()],
            },
        };
        assert_eq!(setup.checked(url, &up), Some("qwen".to_string()));
        assert_eq!(
            setup.answer("qwen"),
            SetupAction::Use {
                name: LOCAL_ENTRY.into(),
                served: Some(ServedModel {
                    base_url: url.into(),
                    model: "qwen".into()
                })
            }
        );
    }
}
