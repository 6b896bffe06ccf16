//! Keyword candidates for archive search, with the bm25 work bounded. FTS5 computes bm25 for
//! every row a query matches (about 1.5 µs each), so an OR of common words over 100,000
//! entries would take hundreds of milliseconds. Before ranking, each term's document
//! frequency is estimated from the newest entries (a cheap rowid-range count), and then:
//! - terms in more than half of the entries are dropped: FTS5 clamps their bm25 weight (idf)
//!   to almost zero, so they would cost work without changing the order;
//! - the rarest terms whose matches fit `RANK_BUDGET` are ranked exactly over the whole
//!   archive (the dropped, commoner terms would add little to their scores);
//! - when even the rarest term is too common, only the newest `NEWEST_BUDGET` matches are
//!   ranked: an unspecific query prefers recent entries;
//! - a query of only very common words ranks its newest matches equally.

use rusqlite::{Connection, params};

use super::error::StoreError;
use super::fts_query::quote_terms;

/// Matches bm25 may rank exactly.
pub const RANK_BUDGET: i64 = 2_000;
/// Newest matches ranked when no term is rare enough for an exact ranking.
pub const NEWEST_BUDGET: i64 = 1_000;
/// Newest ids whose matches estimate a term's share of the archive.
const SAMPLE_SPAN: i64 = 2_000;
/// Document-frequency sum of the terms the newest-first ranking includes (FTS5 counts each
/// term's documents once per query, at a fraction of the cost of ranking them).
const SCAN_BUDGET: f64 = 30_000.0;

/// The best `pool` keyword matches of `terms` with their bm25 (lower is better).
pub(super) fn keyword_candidates(
    conn: &Connection,
    terms: &[String],
    pool: usize,
) -> Result<Vec<(i64, f64)>, StoreError> {
    let pool = i64::try_from(pool).unwrap_or(i64::MAX);
    let (min_id, max_id): (Option<i64>, Option<i64>) = conn
        .prepare_cached("SELECT (SELECT min(id) FROM archive), (SELECT max(id) FROM archive)")?
        .query_row([], |row| Ok((row.get(0)?, row.get(1)?)))?;
    let (Some(min_id), Some(max_id)) = (min_id, max_id) else {
        return Ok(Vec::new());
    };
    // An upper bound of the entry count (ids are never reused; deletions leave gaps).
    let entries = max_id - min_id + 1;
    if entries <= RANK_BUDGET {
        return ranked(conn, &quote_terms(terms), pool);
    }
    let boundary = max_id - SAMPLE_SPAN;
    let mut shares = Vec::with_capacity(terms.len());
    for term in terms {
        let sampled: i64 = conn
            .prepare_cached(
                "SELECT count(*) FROM archive_fts WHERE archive_fts MATCH ?1 AND rowid > ?2",
            )?
            .query_row(
                params![quote_terms(std::slice::from_ref(term)), boundary],
                |row| row.get(0),
            )?;
        shares.push((sampled as f64 / SAMPLE_SPAN as f64, term.clone()));
    }
    let all = quote_terms(terms);
    shares.retain(|(share, _)| *share <= 0.5);
    if shares.is_empty() {
        return newest_equal(conn, &all, pool);
    }
    shares.sort_by(|a, b| a.0.total_cmp(&b.0));
    let estimate = |share: f64| share * entries as f64;
    let mut exact = Vec::new();
    let mut sum = 0.0;
    for (share, term) in &shares {
        sum += estimate(*share);
        if sum > RANK_BUDGET as f64 {
            break;
        }
        exact.push(term.clone());
    }
    if !exact.is_empty() {
        return ranked(conn, &quote_terms(&exact), pool);
    }
    let mut scanned = Vec::new();
    let mut sum = 0.0;
    for (share, term) in &shares {
        sum += estimate(*share);
        if sum > SCAN_BUDGET && !scanned.is_empty() {
            break;
        }
        scanned.push(term.clone());
    }
    newest_ranked(conn, &quote_terms(&scanned), pool)
}

/// Exact bm25 order over every match.
fn ranked(conn: &Connection, expression: &str, pool: i64) -> Result<Vec<(i64, f64)>, StoreError> {
    let mut stmt = conn.prepare_cached(
        "SELECT rowid, rank FROM archive_fts WHERE archive_fts MATCH ?1 ORDER BY rank LIMIT ?2",
    )?;
    let hits = stmt
        .query_map(params![expression, pool], |row| {
            Ok((row.get(0)?, row.get(1)?))
        })?
        .collect::<Result<Vec<_>, _>>()?;
    Ok(hits)
}

/// bm25 order over the newest `NEWEST_BUDGET` matches.
fn newest_ranked(
    conn: &Connection,
    expression: &str,
    pool: i64,
) -> Result<Vec<(i64, f64)>, StoreError> {
    let mut stmt = conn.prepare_cached(
        "SELECT rowid, rank FROM archive_fts WHERE archive_fts MATCH ?1
         ORDER BY rowid DESC LIMIT ?2",
    )?;
    let mut hits: Vec<(i64, f64)> = stmt
        .query_map(params![expression, NEWEST_BUDGET], |row| {
            Ok((row.get(0)?, row.get(1)?))
        })?
        .collect::<Result<Vec<_>, _>>()?;
    hits.sort_by(|a, b| a.1.total_cmp(&b.1).then(b.0.cmp(&a.0)));
    hits.truncate(usize::try_from(pool).unwrap_or(usize::MAX));
    Ok(hits)
}

/// The newest matches, all with the same (best) score: no term says anything specific.
fn newest_equal(
    conn: &Connection,
    expression: &str,
    pool: i64,
) -> Result<Vec<(i64, f64)>, StoreError> {
    let mut stmt = conn.prepare_cached(
        "SELECT rowid FROM archive_fts WHERE archive_fts MATCH ?1 ORDER BY rowid DESC LIMIT ?2",
    )?;
    let hits = stmt
        .query_map(params![expression, pool], |row| Ok((row.get(0)?, -1.0)))?
        .collect::<Result<Vec<_>, _>>()?;
    Ok(hits)
}

#[cfg(test)]
#[path = "keyword_tests.rs"]
mod tests;
