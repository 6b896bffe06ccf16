//! `search` over the gateway: what a client asks (the daemon answers with the store's
//! `ArchiveSearch` as it is), and the asking side: `mnemo memory search` asks the daemon of
//! its data directory, whose model is loaded already, and searches in-process whenever no
//! answer comes.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use futures_util::future::BoxFuture;

use super::client::{GatewayClient, Target};
use super::wire::HostOp;
pub use crate::host::api::SearchAsk;
use crate::memory::embed::ArchiveSearch;

/// How long reaching the daemon may take, its hello and token exchange included: a daemon
/// that is slower than this is hung or swamped, and searching in-process is quicker.
const CONNECT_WAIT: Duration = Duration::from_millis(300);
/// How long a search may take in the daemon (its first one loads the model).
const SEARCH_WAIT: Duration = Duration::from_secs(10);

/// Answers the gateway's searches: the daemon's searcher, which keeps its embedder loaded
/// between them. The error is what the client is told.
pub trait ArchiveSearcher: Send + Sync {
    fn answer(self: Arc<Self>, ask: SearchAsk)
    -> BoxFuture<'static, Result<ArchiveSearch, String>>;
}

/// The answer of the daemon running on `data_dir`, or `None` when none runs or it did not
/// answer (refused, too slow, older and without `search`): the caller searches itself.
pub async fn ask_daemon(data_dir: &Path, ask: &SearchAsk) -> Option<ArchiveSearch> {
    // A lock check: without a daemon, asking costs nothing more.
    if !crate::host::daemon::serve_running(data_dir) {
        return None;
    }
    let connect = GatewayClient::connect(data_dir, Target::Socket);
    let client = tokio::time::timeout(CONNECT_WAIT, connect)
        .await
        .ok()?
        .ok()?;
    let op = serde_json::to_value(HostOp::Search(ask.clone())).ok()?;
    let answer = tokio::time::timeout(SEARCH_WAIT, client.request(None, op))
        .await
        .ok()?
        .ok()?;
    // A hit this mnemo cannot read (a newer daemon's source) fails here: search in-process.
    serde_json::from_value::<ArchiveSearch>(answer).ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::memory::piece_index::Source;
    use crate::memory::types::SearchHit;

    #[test]
    fn hits_cross_the_wire_unchanged() -> Result<(), serde_json::Error> {
        let hit = SearchHit {
            id: 7,
            source: Source::Message,
            session_id: Some("s1".into()),
            created_at: 1_700_000_000_000,
            topic: "user message".into(),
            summary: "two\nlines".into(),
            importance: 0.5,
            keyword: 0.25,
            semantic: Some(0.731_234_567_8),
            score: 0.012_345_678_9,
        };
        let found = ArchiveSearch {
            hits: vec![hit.clone()],
            keyword_only: Some("why".into()),
        };
        let line = serde_json::to_string(&found)?;
        let back = serde_json::from_str::<ArchiveSearch>(&line)?;
        assert_eq!(back.hits, [hit], "{line}");
        assert_eq!(back.keyword_only.as_deref(), Some("why"));
        let unknown = line.replace("\"message\"", "\"hologram\"");
        assert!(serde_json::from_str::<ArchiveSearch>(&unknown).is_err());
        Ok(())
    }
}
