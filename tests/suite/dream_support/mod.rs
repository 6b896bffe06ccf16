//! Builders for the dream tests and bench: a store with archive entries, a scripted model that
//! records what it was asked, and a chain around it.

// Each test binary uses a different part of this module.
#![allow(dead_code)]

use std::sync::{Arc, Mutex, PoisonError};

use futures_util::future::BoxFuture;
use mnemo::llm::Price;
use mnemo::llm::fallback::{ChainModel, FallbackChain, RetryPolicy};
use mnemo::llm::scripted::{Script, ScriptedProvider};
use mnemo::llm::{EventStream, Message, ModelRequest, Provider, ProviderError};
use mnemo::memory::{Db, NewArchiveEntry, NewSession, StoreError};
use serde_json::json;

/// A scripted model that keeps every request it was sent.
pub struct Recording {
    inner: ScriptedProvider,
    seen: Mutex<Vec<ModelRequest>>,
}

impl Recording {
    /// Answers each call with the next of `texts`.
    pub fn answering(texts: &[String]) -> Arc<Self> {
        Arc::new(Self {
            inner: scripted(texts),
            seen: Mutex::default(),
        })
    }

    pub fn requests(&self) -> Vec<ModelRequest> {
        self.seen
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }
}

impl Provider for Recording {
    fn label(&self) -> &str {
        "recording"
    }

    fn stream(&self, request: ModelRequest) -> BoxFuture<'_, Result<EventStream, ProviderError>> {
        self.seen
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(request.clone());
        self.inner.stream(request)
    }
}

/// A scripted model answering each call with the next of `texts`.
pub fn scripted(texts: &[String]) -> ScriptedProvider {
    // One chunk per answer: the model answers at once.
    let turns: Vec<_> = texts.iter().map(|t| json!({ "chunks": [t] })).collect();
    let script: Script =
        serde_json::from_value(json!({ "turns": turns })).unwrap_or_else(|e| panic!("script: {e}"));
    ScriptedProvider::new(script)
}

/// A chain of `provider` alone.
pub fn chain(provider: Arc<dyn Provider>) -> Arc<FallbackChain> {
    Arc::new(FallbackChain::new(
        vec![ChainModel {
            name: "dreamer".into(),
            provider,
            context_window: 200_000,
            max_output_tokens: 8192,
            price: Price::default(),
        }],
        RetryPolicy::default(),
    ))
}

/// The editor's answer for these notes.
pub fn editor_json(memory: &str, user: &str) -> String {
    json!({ "memory": memory, "user": user }).to_string()
}

/// Archives `count` entries of session `s-dream` (created on first use); topics are
/// `{prefix} {n}`.
pub fn add_entries(db: &mut Db, prefix: &str, count: usize) -> Result<Vec<i64>, StoreError> {
    if db.session("s-dream").is_err() {
        db.create_session(NewSession {
            id: "s-dream".into(),
            parent_id: None,
            cwd: "/work/project".into(),
            model: "m".into(),
            title: "dream source".into(),
        })?;
    }
    let entries: Vec<NewArchiveEntry> = (0..count)
        .map(|n| NewArchiveEntry {
            session_id: "s-dream".into(),
            topic: format!("{prefix} {n}"),
            summary: format!("The person asked about {prefix} {n}; it was settled."),
            messages: vec![
                Message::user_text(format!("How do I configure {prefix} {n}?")),
                Message::assistant(vec![mnemo::llm::ContentBlock::Text {
                    text: format!("Set `{prefix}_{n} = true` in config.toml and restart."),
                }]),
            ],
            token_count: 40,
            importance: 0.5,
            first_seq: n as i64,
            last_seq: n as i64,
            started_at: 1_700_000_000_000,
            ended_at: 1_700_000_060_000,
        })
        .collect();
    db.archive_many(&entries)
}
