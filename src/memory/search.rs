//! Archive search: FTS5 bm25 for keywords (`keyword`), the in-memory vector cache for
//! meaning, combined by `ranking`. Each signal contributes a bounded pool of candidates, and
//! only those candidates' rows are read.

use std::collections::HashSet;

use rusqlite::{Connection, OptionalExtension};

use super::db::Db;
use super::error::StoreError;
use super::fts_query::query_terms;
use super::keyword::keyword_candidates;
use super::ranking::{SearchMode, combined_score, normalize_bm25, sort_hits};
use super::types::SearchHit;
use super::vectors::{VectorCache, from_blob, normalize};

/// Candidates each signal contributes for a search returning `limit` hits.
fn pool_size(limit: usize) -> usize {
    limit.saturating_mul(4).clamp(50, 1000)
}

impl Db {
    /// The archive entries best matching `query`, best first. With `query_embedding` the
    /// ranking is hybrid (semantic, keyword, importance); without, keyword and importance.
    /// Any text is a valid query; one without words finds nothing.
    pub fn search_archive(
        &mut self,
        query: &str,
        query_embedding: Option<&[f32]>,
        limit: usize,
    ) -> Result<Vec<SearchHit>, StoreError> {
        let terms = query_terms(query);
        if terms.is_empty() || limit == 0 {
            return Ok(Vec::new());
        }
        let pool = pool_size(limit);
        let keyword = normalize_bm25(&keyword_candidates(&self.conn, &terms, pool)?);
        let mut candidates: Vec<(i64, f64, Option<f64>)> = keyword
            .iter()
            .map(|&(id, score)| (id, score, None))
            .collect();
        let mode = match query_embedding {
            None => SearchMode::Keyword,
            Some(embedding) => {
                let mut query = embedding.to_vec();
                normalize(&mut query);
                let cache = self.vector_cache(query.len())?;
                for candidate in candidates.iter_mut() {
                    candidate.2 = cache.similarity(candidate.0, &query).map(f64::from);
                }
                let known: HashSet<i64> = candidates.iter().map(|c| c.0).collect();
                for (id, cosine) in cache.top(&query, pool) {
                    if cosine > 0.0 && !known.contains(&id) {
                        candidates.push((id, 0.0, Some(f64::from(cosine))));
                    }
                }
                SearchMode::Hybrid
            }
        };
        let mut hits = Vec::with_capacity(candidates.len());
        let mut row = self.conn.prepare_cached(
            "SELECT session_id, created_at, importance, topic, summary FROM archive WHERE id = ?1",
        )?;
        for (id, keyword, semantic) in candidates {
            let hit = row
                .query_row([id], |row| {
                    let importance: f64 = row.get(2)?;
                    Ok(SearchHit {
                        id,
                        session_id: row.get(0)?,
                        created_at: row.get(1)?,
                        topic: row.get(3)?,
                        summary: row.get(4)?,
                        importance,
                        keyword,
                        semantic,
                        score: combined_score(mode, keyword, semantic, importance),
                    })
                })
                .optional()?;
            hits.extend(hit);
        }
        sort_hits(&mut hits);
        hits.truncate(limit);
        Ok(hits)
    }

    /// The embeddings of dimension `dim`, loaded from the database on first use (or when the
    /// query's dimension changed, i.e. another embedding model is configured).
    fn vector_cache(&mut self, dim: usize) -> Result<&VectorCache, StoreError> {
        let stale = self.vectors.as_ref().is_none_or(|cache| cache.dim() != dim);
        if stale {
            self.vectors = Some(load_vectors(&self.conn, dim)?);
        }
        Ok(self.vectors.get_or_insert_with(|| VectorCache::new(dim)))
    }
}

fn load_vectors(conn: &Connection, dim: usize) -> Result<VectorCache, StoreError> {
    let mut cache = VectorCache::new(dim);
    let bytes = i64::try_from(dim.saturating_mul(4)).unwrap_or(i64::MAX);
    let mut stmt =
        conn.prepare("SELECT id, embedding FROM archive WHERE length(embedding) = ?1")?;
    let mut rows = stmt.query([bytes])?;
    while let Some(row) = rows.next()? {
        let id: i64 = row.get(0)?;
        let blob = row.get_ref(1)?.as_blob().map_err(|_| {
            StoreError::Corrupt(format!("archive entry {id} has a non-blob embedding"))
        })?;
        cache.upsert(id, &from_blob(blob));
    }
    Ok(cache)
}

#[cfg(test)]
#[path = "search_tests.rs"]
mod tests;
