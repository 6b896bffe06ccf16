//! The daemon's searches for other processes (`mnemo memory search` asks over the gateway).
//! It keeps one embedder for them, made by the first search rather than at start (the idle
//! daemon stays small) and let go `IDLE` after the last one, so a search costs the query's
//! embedding instead of the model's load.

use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use super::log::ServeLog;
use crate::gateway::search::{ArchiveSearcher, SearchAsk};
use crate::host::{LaunchError, Loaded};
use crate::memory::embed::{ArchiveSearch, EmbeddingClient};
use crate::memory::recall::RecallScope;
use crate::memory::{StoreError, search_archive};

/// How long the embedder stays loaded after a search.
pub const IDLE: Duration = Duration::from_secs(600);
/// The most hits one search may ask for: each costs ranking work and reply bytes.
pub const MAX_LIMIT: usize = 1000;
/// Searches run at once; more wait their turn (each is CPU work on a small machine).
const RUNNING: usize = 4;

#[derive(Debug, thiserror::Error)]
pub enum SearchError {
    #[error("`query` is empty")]
    EmptyQuery,
    #[error("`limit` is {0}; it is at most {MAX_LIMIT}")]
    Limit(usize),
    #[error("this daemon keeps the database {kept}, not {asked}")]
    OtherDatabase { kept: String, asked: String },
    #[error("this daemon searches with {kept}, not {asked}")]
    OtherModel { kept: String, asked: String },
    #[error(transparent)]
    Launch(#[from] LaunchError),
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// The embedder kept for searches, and when the last search came.
struct Kept {
    embedder: Option<Arc<EmbeddingClient>>,
    last_search: Instant,
}

pub struct Searcher {
    loaded: Arc<Loaded>,
    log: ServeLog,
    cancel: CancellationToken,
    kept: Mutex<Kept>,
    running: tokio::sync::Semaphore,
}

impl ArchiveSearcher for Searcher {
    fn answer(
        self: Arc<Self>,
        ask: SearchAsk,
    ) -> futures_util::future::BoxFuture<'static, Result<ArchiveSearch, String>> {
        Box::pin(async move { self.search(ask).await.map_err(|e| e.to_string()) })
    }
}

impl Searcher {
    pub fn new(loaded: Arc<Loaded>, log: ServeLog, cancel: CancellationToken) -> Arc<Searcher> {
        Arc::new(Searcher {
            loaded,
            log,
            cancel,
            kept: Mutex::new(Kept {
                embedder: None,
                last_search: Instant::now(),
            }),
            running: tokio::sync::Semaphore::new(RUNNING),
        })
    }

    /// Searches as `ask` says, with the kept embedder.
    pub async fn search(self: &Arc<Self>, ask: SearchAsk) -> Result<ArchiveSearch, SearchError> {
        if ask.query.trim().is_empty() {
            return Err(SearchError::EmptyQuery);
        }
        if ask.limit > MAX_LIMIT {
            return Err(SearchError::Limit(ask.limit));
        }
        let kept_db = self
            .loaded
            .db_path
            .as_ref()
            .map(|p| p.display().to_string());
        if let Some(asked) = ask.database
            && kept_db.as_ref() != Some(&asked)
        {
            let kept = kept_db.unwrap_or_else(|| "none".into());
            return Err(SearchError::OtherDatabase { kept, asked });
        }
        // The semaphore is never closed, so a turn always comes.
        let _turn = self.running.acquire().await.ok();
        let embedder = self.embedder();
        let kept_model = embedder.as_ref().map(|e| e.model_id());
        if let Some(asked) = ask.model
            && kept_model.as_ref() != Some(&asked)
        {
            let kept = kept_model.unwrap_or_else(|| "no embedding model".into());
            return Err(SearchError::OtherModel { kept, asked });
        }
        let scope = RecallScope {
            workspace: ask.workspace,
            except_session: ask.except_session,
        };
        let store = self.loaded.store()?;
        let found = search_archive(&store, embedder.as_deref(), &ask.query, scope, ask.limit);
        Ok(found.await?)
    }

    /// The kept embedder (made now when there is none), for one search.
    fn embedder(self: &Arc<Self>) -> Option<Arc<EmbeddingClient>> {
        let mut kept = self.kept.lock().unwrap_or_else(PoisonError::into_inner);
        kept.last_search = Instant::now();
        if let Some(embedder) = &kept.embedder {
            return Some(embedder.clone());
        }
        let embedder = self.loaded.new_embedder()?;
        kept.embedder = Some(embedder.clone());
        drop(kept);
        tokio::spawn(self.clone().let_go_when_idle());
        self.log.line(&format!(
            "searching by meaning with {}, kept until {} min without a search",
            embedder.model_id(),
            IDLE.as_secs() / 60
        ));
        Some(embedder)
    }

    /// Sleeps until `IDLE` after the last search (again when one came meanwhile), then lets
    /// the embedder go; a search still running keeps its own handle until it ends.
    async fn let_go_when_idle(self: Arc<Self>) {
        loop {
            let deadline = self.last_search() + IDLE;
            tokio::select! {
                () = tokio::time::sleep_until(deadline) => {}
                () = self.cancel.cancelled() => return,
            }
            let idle = {
                let mut kept = self.kept.lock().unwrap_or_else(PoisonError::into_inner);
                let idle = kept.last_search + IDLE <= Instant::now();
                if idle {
                    drop(kept.embedder.take());
                }
                idle
            };
            if idle {
                self.log.line(&format!(
                    "let the embedding model go after {} min without a search",
                    IDLE.as_secs() / 60
                ));
                if let Ok(store) = self.loaded.store() {
                    let _ = store.call(|db| db.release_memory()).await;
                }
                super::idle::work_done();
                return;
            }
        }
    }

    fn last_search(&self) -> Instant {
        let kept = self.kept.lock().unwrap_or_else(PoisonError::into_inner);
        kept.last_search
    }
}

#[cfg(test)]
#[path = "searcher_tests.rs"]
mod tests;
