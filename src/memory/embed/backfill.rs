//! Embeds what has no vectors of the current model: new messages and archive entries in the
//! background after each turn, everything older with `mnemo memory reindex`.

use super::{EmbedError, EmbeddingClient, Fits};
use crate::memory::pieces::{entry_pieces, split_to_fit};
use crate::memory::recall_store::Unembedded;
use crate::memory::{Store, StoreError};

/// Items read per round.
const BATCH: usize = 16;

#[derive(Debug, thiserror::Error)]
pub enum BackfillError {
    #[error(transparent)]
    Embed(#[from] EmbedError),
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// The texts to embed for `item`; never empty, so an item is not asked for again.
pub fn item_pieces(item: &Unembedded, fits: &Fits) -> Vec<String> {
    let fits = |text: &str| fits.fits(text);
    let pieces = match item {
        Unembedded::Archive {
            topic,
            summary,
            messages,
            ..
        } => entry_pieces(topic, summary, messages, &fits),
        Unembedded::Experience { text, .. }
        | Unembedded::Message { text, .. }
        | Unembedded::Dream { text, .. } => split_to_fit(text, &fits),
    };
    match pieces.is_empty() {
        true => vec!["(empty)".to_string()],
        false => pieces,
    }
}

/// Embeds every item without vectors of `embedder`'s model, newest first; `progress` hears
/// (done, total) after each item. Returns how many items were embedded.
pub async fn embed_pending(
    store: &Store,
    embedder: &EmbeddingClient,
    mut progress: impl FnMut(usize, usize),
) -> Result<usize, BackfillError> {
    let model = embedder.model_id();
    let wanted = model.clone();
    let total = store.call(move |db| db.count_unembedded(&wanted)).await?;
    let mut done = 0;
    progress(done, total);
    if total == 0 {
        // Nothing to embed: the model is not even loaded.
        return Ok(0);
    }
    let fits = embedder.fits().await?;
    loop {
        let wanted = model.clone();
        let items = store.call(move |db| db.unembedded(&wanted, BATCH)).await?;
        if items.is_empty() {
            return Ok(done);
        }
        for item in items {
            let texts = item_pieces(&item, &fits);
            let vectors = embedder.embed(&texts).await?;
            let (model, key) = (model.clone(), item.key());
            store
                .call(move |db| db.store_pieces(&model, key, &vectors))
                .await?;
            done += 1;
            progress(done, total.max(done));
        }
    }
}

/// Embeds what is pending in the background of a session: one backfill per client at a time
/// (a call while one runs makes it go round again instead of starting a second).
pub async fn embed_pending_in_background(
    store: &Store,
    embedder: &EmbeddingClient,
) -> Result<usize, BackfillError> {
    use std::sync::atomic::Ordering;
    embedder.backfill_wanted.store(true, Ordering::SeqCst);
    let Ok(_running) = embedder.backfilling.try_lock() else {
        return Ok(0);
    };
    let mut done = 0;
    while embedder.backfill_wanted.swap(false, Ordering::SeqCst) {
        done += embed_pending(store, embedder, |_, _| {}).await?;
    }
    Ok(done)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn nothing_to_embed_does_not_load_the_model() -> Result<(), Box<dyn std::error::Error>> {
        let dir = tempfile::tempdir()?;
        // A model folder that cannot load: any attempt would fail the backfill.
        std::fs::write(dir.path().join("config.json"), "not json")?;
        let embedder = EmbeddingClient::local(dir.path().to_path_buf());
        let store = Store::open_in_memory()?;
        assert_eq!(embed_pending(&store, &embedder, |_, _| {}).await?, 0);

        store
            .call(|db| {
                db.remember(
                    "a fact to embed",
                    &crate::memory::types::Scope::Global,
                    "test",
                )
            })
            .await?;
        let failed = embed_pending(&store, &embedder, |_, _| {}).await;
        assert!(
            failed.is_err(),
            "with something pending the model is loaded"
        );
        Ok(())
    }
}
