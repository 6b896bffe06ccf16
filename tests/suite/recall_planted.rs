//! Recall measured on planted facts: 32 facts, each said in its own session among unrelated
//! requests and compacted into the archive (a mechanical summary, as compaction writes one
//! without a model), then asked about twice: with a rare word the conversation used, and in
//! other words. Keyword-only recall must find the first kind; with the built-in model (the
//! real all-MiniLM-L6-v2 from PyPI) both. The figures are printed (`--nocapture`).

use crate::embed_support;
use crate::recall_support::{archive_session, turn};

use mnemo::memory::recall::RecallScope;
use std::path::Path;

use mnemo::memory::embed::backfill::embed_pending;
use mnemo::memory::{EmbeddingClient, Store, search_archive};
use serde::Deserialize;

#[derive(Deserialize)]
struct Fact {
    said: String,
    keyword: String,
    meaning: String,
}

/// Requests that have nothing to do with the facts, two per session around each fact.
const FILLER: [(&str, &str); 8] = [
    (
        "Rename the helper parse_args to read_arguments everywhere",
        "Renamed in 4 files.",
    ),
    (
        "Fix the typo in the README introduction",
        "Fixed: 'recieve' is now 'receive'.",
    ),
    (
        "Why does the unit test for the date formatter fail?",
        "It assumed UTC; I set the zone.",
    ),
    (
        "Add a --verbose flag to the command line tool",
        "Added, it prints each step.",
    ),
    (
        "Make the table header sticky when scrolling",
        "Done with position: sticky.",
    ),
    (
        "Bump the version number to 2.4.1",
        "Bumped in the manifest and changelog.",
    ),
    (
        "Remove the unused imports in the utils module",
        "Removed seven imports.",
    ),
    (
        "Sort the list of contributors alphabetically",
        "Sorted by family name.",
    ),
];

/// One session per fact, its conversation archived as one entry.
async fn plant(store: &Store, facts: &[Fact]) -> Result<(), Box<dyn std::error::Error>> {
    for (i, fact) in facts.iter().enumerate() {
        let before = FILLER[i % FILLER.len()];
        let after = FILLER[(i + 3) % FILLER.len()];
        let mut messages = Vec::new();
        messages.extend(turn(before.0, before.1));
        messages.extend(turn(
            &format!("Note for later: {}", fact.said),
            "Noted, I will keep that in mind.",
        ));
        messages.extend(turn(after.0, after.1));
        archive_session(store, i, messages).await?;
    }
    Ok(())
}

/// (recall@1, recall@3) of `questions`, fact `i` being archive entry `i + 1`.
async fn recall(
    store: &Store,
    embedder: Option<&EmbeddingClient>,
    questions: &[&str],
) -> Result<(f64, f64), Box<dyn std::error::Error>> {
    let (mut first, mut top3) = (0, 0);
    for (i, question) in questions.iter().enumerate() {
        let found = search_archive(store, embedder, question, RecallScope::everywhere(), 3).await?;
        let ids: Vec<i64> = found.hits.iter().map(|h| h.id).collect();
        let wanted = i as i64 + 1;
        first += usize::from(ids.first() == Some(&wanted));
        top3 += usize::from(ids.contains(&wanted));
    }
    let n = questions.len() as f64;
    Ok((first as f64 / n, top3 as f64 / n))
}

fn facts() -> Result<Vec<Fact>, Box<dyn std::error::Error>> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/recall/facts.json");
    Ok(serde_json::from_str(&std::fs::read_to_string(path)?)?)
}

#[tokio::test(flavor = "multi_thread")]
async fn planted_facts_are_recalled_by_keyword_and_by_meaning() -> embed_support::TestResult {
    let facts = facts()?;
    assert!(facts.len() >= 30);
    let dir = tempfile::tempdir()?;
    let store = Store::open(&dir.path().join("mnemo.db"))?;
    plant(&store, &facts).await?;
    let keyword_questions: Vec<&str> = facts.iter().map(|f| f.keyword.as_str()).collect();
    let meaning_questions: Vec<&str> = facts.iter().map(|f| f.meaning.as_str()).collect();

    let plain_keyword = recall(&store, None, &keyword_questions).await?;
    let plain_meaning = recall(&store, None, &meaning_questions).await?;

    let embedder = EmbeddingClient::local(embed_support::model_dir()?);
    let embedded = embed_pending(&store, &embedder, |_, _| {}).await?;
    assert_eq!(embedded, facts.len());
    let model_keyword = recall(&store, Some(&embedder), &keyword_questions).await?;
    let model_meaning = recall(&store, Some(&embedder), &meaning_questions).await?;

    println!(
        "recall over {} planted facts (recall@1 / recall@3):\n\
         keyword only: shared rare word {:.2} / {:.2}, other words {:.2} / {:.2}\n\
         with all-MiniLM-L6-v2: shared rare word {:.2} / {:.2}, other words {:.2} / {:.2}",
        facts.len(),
        plain_keyword.0,
        plain_keyword.1,
        plain_meaning.0,
        plain_meaning.1,
        model_keyword.0,
        model_keyword.1,
        model_meaning.0,
        model_meaning.1,
    );
    assert!(
        plain_keyword.1 >= 0.9,
        "keyword search finds shared words: {plain_keyword:?}"
    );
    assert!(
        model_keyword.1 >= 0.9,
        "the model keeps what keywords find: {model_keyword:?}"
    );
    assert!(
        model_meaning.1 >= 0.7 && model_meaning.1 > plain_meaning.1 + 0.3,
        "meaning is recalled: {model_meaning:?} against {plain_meaning:?} without the model"
    );
    Ok(())
}
