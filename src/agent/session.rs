//! The state one agent task owns: settings, provider, tools, history and running totals.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::mpsc;

use crate::config::Price;
use crate::llm::{Message, Provider, Usage};
use crate::protocol::Event;
use crate::tools::ToolRegistry;

/// Fixed for the life of a session.
#[derive(Debug, Clone)]
pub struct SessionSettings {
    /// Canonical workspace root.
    pub workspace: PathBuf,
    /// The model's name as the user knows it (config entry name).
    pub model_name: String,
    pub system_prompt: String,
    pub max_steps: u32,
    pub repeat_limit: u32,
    pub tool_timeout: Duration,
    pub max_output_tokens: u32,
    pub context_window: u64,
    pub price: Price,
}

pub struct Session {
    pub id: String,
    pub settings: SessionSettings,
    pub(super) provider: Arc<dyn Provider>,
    pub(super) tools: ToolRegistry,
    pub(super) history: Vec<Arc<Message>>,
    pub(super) turns: u64,
    pub(super) total_usage: Usage,
    pub(super) cost_usd: f64,
    events: Option<mpsc::Sender<Event>>,
}

impl Session {
    pub fn new(
        settings: SessionSettings,
        provider: Arc<dyn Provider>,
        tools: ToolRegistry,
    ) -> Self {
        Self {
            id: uuid::Uuid::new_v4().to_string(),
            settings,
            provider,
            tools,
            history: Vec::new(),
            turns: 0,
            total_usage: Usage::default(),
            cost_usd: 0.0,
            events: None,
        }
    }

    /// Every message of the conversation so far, oldest first.
    pub fn history(&self) -> &[Arc<Message>] {
        &self.history
    }

    pub fn total_usage(&self) -> Usage {
        self.total_usage
    }

    pub fn cost_usd(&self) -> f64 {
        self.cost_usd
    }

    pub(super) fn attach(&mut self, events: mpsc::Sender<Event>) {
        self.events = Some(events);
    }

    pub(super) fn detach(&mut self) {
        self.events = None;
    }

    pub(super) fn event_sender(&self) -> Option<mpsc::Sender<Event>> {
        self.events.clone()
    }

    pub(super) async fn announce(&self) {
        self.emit(Event::SessionStarted {
            session_id: self.id.clone(),
            model: self.settings.model_name.clone(),
            workspace: self.settings.workspace.display().to_string(),
        })
        .await;
    }

    pub(super) async fn emit(&self, event: Event) {
        if let Some(events) = &self.events {
            // A front end that went away must not stop the session from finishing its step.
            let _ = events.send(event).await;
        }
    }

    /// Appends a completed message. This is the one place history grows.
    pub(super) fn commit(&mut self, message: Message) {
        self.history.push(Arc::new(message));
    }

    /// Adds one model call's usage and reports it.
    pub(super) async fn record_usage(&mut self, usage: Usage) {
        self.total_usage.add(&usage);
        self.cost_usd += self.settings.price.cost(&usage);
        let window = self.settings.context_window.max(1) as f64;
        let used = (usage.prompt_tokens() + usage.output_tokens) as f64;
        self.emit(Event::Usage {
            last: usage,
            total: self.total_usage,
            cost_usd: self.cost_usd,
            context_percent: (used / window * 100.0).min(100.0) as f32,
        })
        .await;
    }
}
