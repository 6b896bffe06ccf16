//! Tests of `recall.rs`: keyword ranking without function words, meaning by the best piece,
//! fusion, experiences, scope, the in-memory index following the store, hostile queries.

use super::*;
use crate::memory::recall_store::Unembedded;
use crate::memory::test_support::{new_entry, new_session};
use crate::memory::types::{NewArchiveEntry, Scope};

type TestResult = Result<(), Box<dyn std::error::Error>>;

const MODEL: &str = "test:model";

fn db_with_session() -> Result<Db, StoreError> {
    let mut db = Db::open_in_memory()?;
    db.create_session(new_session("s1", "/w"))?;
    Ok(db)
}

fn entry(text: &str, importance: f64) -> NewArchiveEntry {
    let mut entry = new_entry("s1", "notes", text, (1, 1));
    entry.summary = String::new();
    entry.importance = importance;
    entry
}

fn ids(hits: &[SearchHit]) -> Vec<i64> {
    hits.iter().map(|hit| hit.id).collect()
}

fn archived(db: &mut Db, text: &str, pieces: &[Vec<f32>]) -> Result<i64, StoreError> {
    let id = db.archive_messages(entry(text, 0.5))?;
    if !pieces.is_empty() {
        db.store_pieces(MODEL, (Source::Archive, id), pieces)?;
    }
    Ok(id)
}

#[test]
fn keywords_rank_by_bm25_and_function_words_do_not_match() -> TestResult {
    let mut db = db_with_session()?;
    let strong = db.archive_messages(entry("kubernetes kubernetes kubernetes pods", 0.5))?;
    let weak = db.archive_messages(entry(
        "kubernetes mentioned once among many other words about lunch and weather",
        0.5,
    ))?;
    let chatter = db.archive_messages(entry("how do we do what we do", 0.5))?;
    let hits = db.recall(
        "How do we run Kubernetes?",
        None,
        &RecallScope::everywhere(),
        10,
    )?;
    assert_eq!(ids(&hits), vec![strong, weak], "{hits:#?}");
    assert!(!ids(&hits).contains(&chatter));
    assert_eq!(hits[0].keyword, 1.0);
    assert_eq!(hits[0].semantic, None);
    assert_eq!(
        db.recall("kubernetes", None, &RecallScope::everywhere(), 1)?
            .len(),
        1
    );
    Ok(())
}

#[test]
fn an_entry_is_found_by_its_best_piece_when_no_word_is_shared() -> TestResult {
    let mut db = db_with_session()?;
    let keyword_only = archived(
        &mut db,
        "kubernetes cluster upgrade",
        &[vec![0.0, 1.0, 0.0]],
    )?;
    // Its second piece is about what was asked; the first says something else.
    let close = archived(
        &mut db,
        "container orchestration rollout",
        &[vec![0.0, 0.0, 1.0], vec![0.95, 0.31, 0.0]],
    )?;
    archived(&mut db, "unrelated lunch", &[vec![-1.0, 0.0, 0.0]])?;
    let hits = db.recall(
        "kubernetes",
        Some((MODEL, &[1.0, 0.0, 0.0])),
        &RecallScope::everywhere(),
        10,
    )?;
    assert_eq!(ids(&hits)[..2], [close, keyword_only], "{hits:#?}");
    assert!(hits[0].semantic.unwrap_or(0.0) > 0.9);
    // Vectors of another model are never compared.
    let other = db.recall(
        "orchestration",
        Some(("other:model", &[1.0, 0.0, 0.0])),
        &RecallScope::everywhere(),
        10,
    )?;
    assert_eq!(ids(&other), vec![close]);
    assert_eq!(other[0].semantic, None);
    Ok(())
}

#[test]
fn experiences_are_recalled_beside_the_archive_within_their_scope() -> TestResult {
    let mut db = db_with_session()?;
    db.create_session(new_session("s2", "/other"))?;
    let here = db.archive_messages(entry("the staging database listens on port 6543", 0.5))?;
    let mut elsewhere = entry("the staging database of another project uses 5432", 0.5);
    elsewhere.session_id = "s2".into();
    let there = db.archive_messages(elsewhere)?;
    let (note, _) = db.remember(
        "staging database credentials live in the vault",
        &Scope::Project("/w".into()),
        "user",
    )?;
    let hits = db.recall("staging database", None, &RecallScope::everywhere(), 10)?;
    assert_eq!(hits.len(), 3);
    assert!(
        hits.iter()
            .any(|h| h.source == Source::Experience && h.id == note)
    );
    let scoped = db.recall("staging database", None, &RecallScope::workspace("/w"), 10)?;
    let keys: Vec<(Source, i64)> = scoped.iter().map(|h| (h.source, h.id)).collect();
    assert!(keys.contains(&(Source::Archive, here)) && keys.contains(&(Source::Experience, note)));
    assert!(!keys.contains(&(Source::Archive, there)));
    Ok(())
}

#[test]
fn the_index_follows_new_pieces_deletions_and_reindexing() -> TestResult {
    let mut db = db_with_session()?;
    let a = archived(&mut db, "alpha topic", &[vec![3.0, 4.0]])?;
    let query = [0.6_f32, 0.8];
    let hits = db.recall("zzz", Some((MODEL, &query)), &RecallScope::everywhere(), 10)?;
    assert_eq!(ids(&hits), vec![a]);
    assert!((hits[0].semantic.unwrap_or(0.0) - 1.0).abs() < 1e-6);

    // Written after the index was loaded: found by meaning alone.
    let b = archived(&mut db, "beta words", &[vec![6.0, 8.0]])?;
    assert_eq!(
        db.recall("zzz", Some((MODEL, &query)), &RecallScope::everywhere(), 10)?
            .len(),
        2
    );
    assert_eq!(db.count_unembedded(MODEL)?, 0);

    db.delete_archive(a)?;
    assert_eq!(
        ids(&db.recall("zzz", Some((MODEL, &query)), &RecallScope::everywhere(), 10)?),
        vec![b]
    );
    let c = db.archive_messages(entry("gamma", 0.5))?;
    assert_eq!(db.count_unembedded(MODEL)?, 1);
    assert!(matches!(
        db.unembedded(MODEL, 10)?.as_slice(),
        [Unembedded::Archive { id, .. }] if *id == c
    ));
    db.delete_session("s1")?;
    assert!(
        db.recall("zzz", Some((MODEL, &query)), &RecallScope::everywhere(), 10)?
            .is_empty()
    );
    Ok(())
}

#[test]
fn hostile_queries_never_error() -> TestResult {
    let mut db = db_with_session()?;
    archived(&mut db, "near and or not foo bar x a b", &[vec![1.0, 0.0]])?;
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
        db.recall(query, None, &RecallScope::everywhere(), 10)?;
        db.recall(
            query,
            Some((MODEL, &[1.0, 0.0])),
            &RecallScope::everywhere(),
            10,
        )?;
        db.recall(
            query,
            Some((MODEL, &[1.0, 0.0, 0.0])),
            &RecallScope::everywhere(),
            10,
        )?;
    }
    assert!(
        db.recall("*** ---", None, &RecallScope::everywhere(), 10)?
            .is_empty()
    );
    assert_eq!(
        db.recall("NEAR(", None, &RecallScope::everywhere(), 10)?
            .len(),
        1
    );
    assert!(
        db.recall("foo", None, &RecallScope::everywhere(), 0)?
            .is_empty()
    );
    Ok(())
}

#[test]
fn working_messages_of_other_sessions_are_recalled_until_archived() -> TestResult {
    let mut db = db_with_session()?;
    db.create_session(new_session("s2", "/other"))?;
    let first = crate::llm::Message::user_text("the pre-production database answers on port 6543");
    let tool_only = crate::llm::Message {
        role: crate::llm::Role::Assistant,
        content: vec![crate::llm::ContentBlock::ToolUse {
            id: "t1".into(),
            name: "shell".into(),
            input: serde_json::json!({"command": "psql -p 6543 database"}),
        }],
    };
    db.append_messages("s2", &[(1, &first, 10), (2, &tool_only, 10)])?;
    db.append_messages("s1", &[(1, &first, 10)])?;

    let everywhere = db.recall("database port", None, &RecallScope::everywhere(), 10)?;
    let sessions: Vec<_> = everywhere
        .iter()
        .map(|h| (h.source, h.session_id.clone().unwrap_or_default()))
        .collect();
    assert_eq!(everywhere.len(), 2, "{everywhere:#?}");
    assert!(sessions.contains(&(Source::Message, "s2".into())));
    assert!(everywhere[0].summary.contains("port 6543"));
    assert_eq!(everywhere[0].topic, "user message");

    // The asking session has its own messages in context; another workspace is left out.
    let others = RecallScope {
        workspace: None,
        except_session: Some("s1".into()),
    };
    let hits = db.recall("database port", None, &others, 10)?;
    assert_eq!(hits.len(), 1);
    assert_eq!(hits[0].session_id.as_deref(), Some("s2"));
    assert!(
        db.recall("database port", None, &RecallScope::workspace("/w"), 10)?
            .len()
            == 1
    );

    // Only messages with text wait for vectors; found by meaning once embedded.
    let pending = db.unembedded(MODEL, 10)?;
    let message_ids: Vec<i64> = pending
        .iter()
        .filter_map(|item| match item {
            Unembedded::Message { id, text } if text.contains("6543") => Some(*id),
            _ => None,
        })
        .collect();
    assert_eq!(message_ids.len(), 2, "{pending:#?}");
    assert_eq!(db.count_unembedded(MODEL)?, 2);
    for id in &message_ids {
        db.store_pieces(MODEL, (Source::Message, *id), &[vec![0.0, 1.0]])?;
    }
    let meaning = db.recall("zzz", Some((MODEL, &[0.0, 1.0])), &others, 10)?;
    assert_eq!(meaning.len(), 1);
    assert_eq!(meaning[0].source, Source::Message);

    // Compaction archives s2's stretch: its working message leaves search with its pieces.
    db.archive_messages(new_entry("s2", "ports", "the staging port", (1, 2)))?;
    let after = db.recall("database port", None, &others, 10)?;
    assert!(
        after.iter().all(|h| h.source == Source::Archive),
        "{after:#?}"
    );
    assert!(
        db.recall("zzz", Some((MODEL, &[0.0, 1.0])), &others, 10)?
            .iter()
            .all(|h| h.source != Source::Message)
    );
    assert_eq!(db.count_unembedded(MODEL)?, 1, "the new archive entry");
    Ok(())
}

/// The size of the piece file beside the database at `path` (0 when there is none).
fn piece_file_len(path: &std::path::Path) -> u64 {
    let dir = path.parent().map(std::fs::read_dir);
    dir.into_iter()
        .flatten()
        .flatten()
        .flatten()
        .filter(|e| {
            e.file_name()
                .to_string_lossy()
                .ends_with(".pieces-test_model")
        })
        .filter_map(|e| e.metadata().ok())
        .map(|m| m.len())
        .sum()
}

#[test]
fn the_next_process_finds_what_the_index_file_and_later_pieces_hold() -> TestResult {
    let dir = tempfile::tempdir()?;
    let path = dir.path().join("mnemo.db");
    let mut first = Db::open(&path)?;
    first.create_session(new_session("s1", "/w"))?;
    let near = archived(&mut first, "alpha", &[vec![1.0, 0.0, 0.0]])?;
    archived(&mut first, "beta", &[vec![0.0, 1.0, 0.0]])?;
    let query = [0.9_f32, 0.1, 0.0];
    let search =
        |db: &mut Db| db.recall("zzz", Some((MODEL, &query)), &RecallScope::everywhere(), 1);
    assert_eq!(ids(&search(&mut first)?), vec![near]);
    let written = piece_file_len(&path);
    assert!(written > 0, "the index is kept beside the database");

    let mut second = Db::open(&path)?;
    assert_eq!(ids(&search(&mut second)?), vec![near], "read from the file");
    let nearer = archived(&mut second, "gamma", &[vec![0.9, 0.1, 0.0]])?;
    assert_eq!(
        ids(&search(&mut first)?),
        vec![nearer],
        "rows written since"
    );
    assert!(piece_file_len(&path) > written, "the new piece is appended");

    // Storing an entry's pieces again deletes the last rows: new ones never reuse their ids,
    // or an index holding the old rows would never read the new.
    let last = |db: &Db| -> rusqlite::Result<i64> {
        db.conn
            .query_row("SELECT max(id) FROM memory_pieces", [], |r| r.get(0))
    };
    let before = last(&second)?;
    second.store_pieces(MODEL, (Source::Archive, nearer), &[vec![0.0, 0.0, 1.0]])?;
    let first_new: i64 = second.conn.query_row(
        "SELECT min(id) FROM memory_pieces WHERE source_id = ?1",
        [nearer],
        |r| r.get(0),
    )?;
    assert!(
        first_new > before,
        "{first_new} reuses an id up to {before}"
    );
    assert_eq!(
        ids(&search(&mut first)?),
        vec![near],
        "the moved piece is followed"
    );
    assert_eq!(
        ids(&Db::open(&path).and_then(|mut db| search(&mut db))?),
        vec![near]
    );

    // A daemon going idle lets the index go; the next search reads it again.
    assert!(first.piece_index_bytes() > 0);
    first.release_memory()?;
    assert_eq!(first.piece_index_bytes(), 0);
    assert_eq!(ids(&search(&mut first)?), vec![near]);
    Ok(())
}

#[test]
fn an_index_file_full_of_retired_pieces_is_rewritten() -> TestResult {
    let dir = tempfile::tempdir()?;
    let path = dir.path().join("mnemo.db");
    let mut db = Db::open(&path)?;
    db.create_session(new_session("s1", "/w"))?;
    db.create_session(new_session("s2", "/w"))?;
    let mut old = entry("old", 0.5);
    old.session_id = "s2".into();
    for _ in 0..1200 {
        let id = db.archive_messages(old.clone())?;
        db.store_pieces(MODEL, (Source::Archive, id), &[vec![0.0, 1.0]])?;
    }
    let kept = archived(&mut db, "kept", &[vec![1.0, 0.0]])?;
    let query = [1.0_f32, 0.0];
    let hits = db.recall("zzz", Some((MODEL, &query)), &RecallScope::everywhere(), 1)?;
    assert_eq!(ids(&hits), vec![kept]);
    let full = piece_file_len(&path);
    db.delete_session("s2")?;
    let hits = db.recall("zzz", Some((MODEL, &query)), &RecallScope::everywhere(), 5)?;
    assert_eq!(ids(&hits), vec![kept]);
    assert!(
        piece_file_len(&path) * 100 < full,
        "{} bytes left of {full}",
        piece_file_len(&path)
    );
    Ok(())
}

#[test]
fn searches_do_not_plan_their_queries_again() -> TestResult {
    let mut db = db_with_session()?;
    for i in 0..30 {
        let text = format!("service {i} handles table t{}", i % 7);
        archived(&mut db, &text, &[vec![1.0, i as f32, 0.0]])?;
    }
    let scope = RecallScope::everywhere();
    for query in [
        "which service handles table",
        "table t3 service",
        "handles t5",
    ] {
        let hits = db.recall(query, Some((MODEL, &[1.0, 0.5, 0.0])), &scope, 10)?;
        assert_eq!(hits.len(), 10);
    }
    // SQLite re-plans a statement whose plan may depend on the values bound to it; the
    // lookup of each hit (a join) was prepared again for every one of them.
    let lookup = db
        .conn
        .prepare_cached(crate::memory::recall_hits::ARCHIVE_HIT)?;
    assert!(lookup.get_status(rusqlite::StatementStatus::VmStep) > 0);
    assert_eq!(lookup.get_status(rusqlite::StatementStatus::RePrepare), 0);
    Ok(())
}
