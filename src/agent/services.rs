//! What the sessions of one process share: the store, the model that writes compaction
//! summaries, the embedder of archive entries, and the builders of
//! chains by model name (for sub-agents and for `Op::SetModel`). A
//! session holds them behind one `Arc`, and the sub-agents it starts hold the same one.

use std::sync::Arc;

use super::subagents::{ModelFactory, ModelResolver};
use crate::llm::fallback::ChainModel;
use crate::memory::{EmbeddingClient, Store};

#[derive(Clone)]
pub struct Services {
    pub store: Store,
    /// Writes compaction summaries; the session's own model when `None`.
    pub compressor: Option<ChainModel>,
    /// Gives archive entries an embedding for semantic search, when configured.
    pub embedder: Option<Arc<EmbeddingClient>>,
    /// Builds chains for sub-agents that ask for another model.
    pub model_resolver: Option<ModelResolver>,
    /// Builds the chain `Op::SetModel` names.
    pub model_factory: Option<ModelFactory>,
    /// Where the dream notes files live: a hand edit there reaches the next prompt.
    pub notes_dir: Option<std::path::PathBuf>,
}

impl Services {
    /// Only the store: summaries by the session's own model, no embeddings, and sub-agents
    /// on the session's model.
    pub fn new(store: Store) -> Self {
        Self {
            store,
            compressor: None,
            embedder: None,
            model_resolver: None,
            model_factory: None,
            notes_dir: None,
        }
    }
}
