//! `[dream]`: the cycle that reads the archive between sessions and rewrites the notes files
//! (`src/jobs/dream.rs`).

use std::time::Duration;

use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct DreamConfig {
    /// The model that dreams (a `[models]` entry); the default model when unset.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// `mnemo serve` dreams once at least this many archive entries are new.
    pub min_entries: usize,
    /// With an Anthropic model: send both calls through the Message Batches API (half price,
    /// answers within minutes to hours).
    pub batch: bool,
    /// How long a batch may take before the calls are made directly instead.
    pub batch_limit_secs: f64,
}

impl Default for DreamConfig {
    fn default() -> Self {
        Self {
            model: None,
            min_entries: 5,
            batch: false,
            batch_limit_secs: 1800.0,
        }
    }
}

impl DreamConfig {
    /// The batch time limit; at least a millisecond.
    pub fn batch_limit(&self) -> Duration {
        Duration::from_secs_f64(self.batch_limit_secs.max(0.001))
    }
}
