//! Tests of `keyword.rs` over an archive large enough for the bounded paths.

use super::*;
use crate::memory::Db;
use crate::memory::recall::RecallScope;
use crate::memory::test_support::{new_entry, new_session};

type TestResult = Result<(), Box<dyn std::error::Error>>;

const ENTRIES: i64 = 5_000;

/// Every entry holds "common"; every other one "frequent" (a share of 0.5 is still ranked);
/// the first three "rare"; entries with `id % 20 < 9` hold "middling" (45%, more matches than
/// `RANK_BUDGET`).
fn big_archive() -> Result<Db, StoreError> {
    let mut db = Db::open_in_memory()?;
    db.create_session(new_session("s1", "/w"))?;
    let entries: Vec<_> = (1..=ENTRIES)
        .map(|id| {
            let mut text = String::from("common");
            if id % 2 == 0 {
                text.push_str(" frequent");
            }
            if id <= 3 {
                text.push_str(" rare");
            }
            if id % 20 < 9 {
                text.push_str(" middling");
            }
            new_entry("s1", "entry", &text, (id, id))
        })
        .collect();
    db.archive_many(&entries)?;
    Ok(db)
}

fn terms(words: &[&str]) -> Vec<String> {
    words.iter().map(|w| (*w).to_owned()).collect()
}

#[test]
fn bounded_paths_pick_rare_terms_recent_matches_or_ties() -> TestResult {
    let db = big_archive()?;

    // A rare term is ranked exactly over the whole archive, however old its entries.
    let hits = keyword_candidates(&db.conn, &terms(&["common", "rare"]), 50)?;
    let mut ids: Vec<i64> = hits.iter().map(|h| h.0).collect();
    ids.sort_unstable();
    assert_eq!(ids, vec![1, 2, 3]);

    // Too common for an exact ranking: the newest matches are ranked.
    let hits = keyword_candidates(&db.conn, &terms(&["middling"]), 50)?;
    assert_eq!(hits.len(), 50);
    let oldest_allowed = ENTRIES - NEWEST_BUDGET * 20 / 9 - 20;
    assert!(
        hits.iter()
            .all(|&(id, rank)| id > oldest_allowed && rank < 0.0)
    );

    // Only words in most entries: the newest matches, tied.
    let hits = keyword_candidates(&db.conn, &terms(&["common"]), 5)?;
    let ids: Vec<i64> = hits.iter().map(|h| h.0).collect();
    assert_eq!(ids, vec![5_000, 4_999, 4_998, 4_997, 4_996]);
    assert!(hits.iter().all(|h| h.1 == hits[0].1));

    // "frequent" (half the entries) keeps its small weight and still ranks.
    let hits = keyword_candidates(&db.conn, &terms(&["frequent", "common"]), 10)?;
    assert!(hits.iter().all(|&(id, _)| id % 2 == 0));
    Ok(())
}

#[test]
fn search_over_a_large_archive_prefers_the_rare_word() -> TestResult {
    let mut db = big_archive()?;
    let hits = db.recall("the common rare thing", None, &RecallScope::everywhere(), 3)?;
    let mut ids: Vec<i64> = hits.iter().map(|h| h.id).collect();
    ids.sort_unstable();
    assert_eq!(ids, vec![1, 2, 3]);
    Ok(())
}
