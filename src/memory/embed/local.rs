//! The built-in model behind the embedding client: loaded on first use (off the async
//! threads), then shared; inference runs on the blocking pool.

use std::path::PathBuf;
use std::sync::Arc;

use tokio::sync::OnceCell;

use super::EmbedError;
use crate::memory::local_embed::LocalEmbedder;

pub(super) struct Local {
    dir: PathBuf,
    model: OnceCell<Result<Arc<LocalEmbedder>, String>>,
}

impl Local {
    pub(super) fn new(dir: PathBuf) -> Self {
        Self {
            dir,
            model: OnceCell::new(),
        }
    }

    /// Whether the model is in memory already.
    pub(super) fn is_loaded(&self) -> bool {
        matches!(self.model.get(), Some(Ok(_)))
    }

    pub(super) async fn model(&self) -> Result<Arc<LocalEmbedder>, EmbedError> {
        let dir = self.dir.clone();
        let loaded = self
            .model
            .get_or_init(|| async move {
                let loading = tokio::task::spawn_blocking(move || LocalEmbedder::load(&dir));
                match loading.await {
                    Ok(Ok(model)) => Ok(Arc::new(model)),
                    Ok(Err(err)) => Err(err.to_string()),
                    Err(join) => Err(format!("loading stopped: {join}")),
                }
            })
            .await;
        loaded.clone().map_err(EmbedError::Local)
    }

    pub(super) async fn embed(&self, texts: &[String]) -> Result<Vec<Vec<f32>>, EmbedError> {
        if texts.is_empty() {
            return Ok(Vec::new());
        }
        let model = self.model().await?;
        let texts = texts.to_vec();
        tokio::task::spawn_blocking(move || {
            let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
            model.embed(&refs)
        })
        .await
        .map_err(|e| EmbedError::Local(e.to_string()))?
        .map_err(|e| EmbedError::Local(e.to_string()))
    }
}
