//! Tests of `search.rs`: ranking with hand-made vectors, cache coherence, hostile queries.

use super::*;
use crate::memory::test_support::{new_entry, new_session};
use crate::memory::types::NewArchiveEntry;

type TestResult = Result<(), Box<dyn std::error::Error>>;

fn db_with_session() -> Result<Db, StoreError> {
    let mut db = Db::open_in_memory()?;
    db.create_session(new_session("s1", "/w"))?;
    Ok(db)
}

fn entry(text: &str, importance: f64, embedding: Option<Vec<f32>>) -> NewArchiveEntry {
    let mut entry = new_entry("s1", "notes", text, (1, 1));
    entry.summary = String::new();
    entry.importance = importance;
    entry.embedding = embedding;
    entry
}

fn ids(hits: &[SearchHit]) -> Vec<i64> {
    hits.iter().map(|hit| hit.id).collect()
}

#[test]
fn keyword_search_scores_by_bm25_and_importance() -> TestResult {
    let mut db = db_with_session()?;
    let strong = db.archive_messages(entry("kubernetes kubernetes kubernetes pods", 0.5, None))?;
    let weak = db.archive_messages(entry(
        "kubernetes mentioned once among many other words about lunch and weather",
        0.5,
        None,
    ))?;
    db.archive_messages(entry("nothing relevant", 0.5, None))?;
    let hits = db.search_archive("Kubernetes", None, 10)?;
    assert_eq!(ids(&hits), vec![strong, weak]);
    assert_eq!(hits[0].keyword, 1.0);
    assert!(hits[1].keyword > 0.0 && hits[1].keyword < 1.0);
    assert_eq!(hits[0].semantic, None);
    assert!((hits[0].score - (0.8 + 0.2 * 0.5)).abs() < 1e-9);
    assert_eq!(db.search_archive("kubernetes", None, 1)?.len(), 1);
    Ok(())
}

#[test]
fn a_semantically_close_entry_outranks_a_keyword_only_match() -> TestResult {
    let mut db = db_with_session()?;
    let keyword_only = db.archive_messages(entry(
        "kubernetes cluster upgrade",
        0.5,
        Some(vec![0.0, 1.0, 0.0]),
    ))?;
    let close = db.archive_messages(entry(
        "container orchestration rollout",
        0.5,
        Some(vec![0.95, 0.31, 0.0]),
    ))?;
    db.archive_messages(entry("unrelated lunch", 0.5, Some(vec![-1.0, 0.0, 0.0])))?;
    let hits = db.search_archive("kubernetes", Some(&[1.0, 0.0, 0.0]), 10)?;
    assert_eq!(ids(&hits), vec![close, keyword_only]);
    // 0.5 * cos + 0.3 * keyword + 0.2 * importance
    assert!((hits[0].score - (0.5 * hits[0].semantic.unwrap_or(0.0) + 0.1)).abs() < 1e-9);
    assert!(hits[0].semantic.unwrap_or(0.0) > 0.9);
    assert_eq!((hits[1].keyword, hits[1].semantic), (1.0, Some(0.0)));
    assert!((hits[1].score - 0.4).abs() < 1e-9);
    Ok(())
}

#[test]
fn importance_breaks_near_ties_and_exact_ties_go_to_the_newer_entry() -> TestResult {
    let mut db = db_with_session()?;
    let important_old = db.archive_messages(entry("redis cache eviction", 0.9, None))?;
    let plain = db.archive_messages(entry("redis cache eviction", 0.4, None))?;
    let plain_newer = db.archive_messages(entry("redis cache eviction", 0.4, None))?;
    let hits = db.search_archive("redis eviction", None, 10)?;
    assert_eq!(ids(&hits), vec![important_old, plain_newer, plain]);
    Ok(())
}

#[test]
fn embeddings_are_normalized_and_the_cache_follows_every_change() -> TestResult {
    let mut db = db_with_session()?;
    let a = db.archive_messages(entry("alpha topic", 0.5, Some(vec![3.0, 4.0])))?;
    let query = [0.6_f32, 0.8];
    let semantic = |hits: &[SearchHit], id: i64| {
        hits.iter()
            .find(|hit| hit.id == id)
            .and_then(|hit| hit.semantic)
    };
    let hits = db.search_archive("alpha", Some(&query), 10)?;
    assert!((semantic(&hits, a).unwrap_or(0.0) - 1.0).abs() < 1e-6);

    // Written after the cache was loaded: found by meaning alone.
    let b = db.archive_messages(entry("beta words", 0.5, Some(vec![6.0, 8.0])))?;
    let hits = db.search_archive("alpha", Some(&query), 10)?;
    assert!((semantic(&hits, b).unwrap_or(0.0) - 1.0).abs() < 1e-6);

    db.set_archive_embedding(b, &[-8.0, 6.0])?;
    let hits = db.search_archive("alpha", Some(&query), 10)?;
    assert_eq!(ids(&hits), vec![a]);

    db.delete_archive(a)?;
    let hits = db.search_archive("alpha beta", Some(&query), 10)?;
    assert_eq!(ids(&hits), vec![b]);
    assert_eq!(semantic(&hits, b), Some(0.0));

    // Another embedding model (another dimension) reloads the cache for that dimension.
    let hits = db.search_archive("beta", Some(&[1.0, 0.0, 0.0]), 10)?;
    assert_eq!((ids(&hits), hits[0].semantic), (vec![b], None));
    Ok(())
}

#[test]
fn deleting_a_session_removes_its_vectors_from_the_cache() -> TestResult {
    let mut db = db_with_session()?;
    db.create_session(new_session("s2", "/w"))?;
    let mut other = entry("gamma", 0.5, Some(vec![1.0, 0.0]));
    other.session_id = "s2".to_owned();
    db.archive_messages(other)?;
    assert_eq!(
        db.search_archive("unrelated", Some(&[1.0, 0.0]), 10)?.len(),
        1
    );
    db.delete_session("s2")?;
    assert!(
        db.search_archive("unrelated", Some(&[1.0, 0.0]), 10)?
            .is_empty()
    );
    Ok(())
}

#[test]
fn hostile_queries_never_error() -> TestResult {
    let mut db = db_with_session()?;
    db.archive_messages(entry("near and or not foo bar x a b", 0.5, None))?;
    let queries = [
        "\"unbalanced",
        "foo*",
        "-x",
        "a:b",
        "(x",
        "NEAR(",
        "AND",
        "OR NOT",
        "",
        "   ",
        "!!! ??? ... ***",
        "^foo",
        "x\"\"y",
        "topic:foo OR body:bar",
        "{col1 col2}: x",
        "ünïcödé 中文 🙂",
    ];
    for query in queries {
        db.search_archive(query, None, 10)?;
        db.search_archive(query, Some(&[1.0, 0.0]), 10)?;
    }
    assert!(db.search_archive("", Some(&[1.0, 0.0]), 10)?.is_empty());
    assert!(db.search_archive("*** ---", None, 10)?.is_empty());
    assert_eq!(db.search_archive("NEAR(", None, 10)?.len(), 1);
    assert!(db.search_archive("foo", None, 0)?.is_empty());
    Ok(())
}
