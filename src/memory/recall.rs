//! Recall: what is remembered (archive entries and experiences) found by keyword and by
//! meaning, fused by rank (`ranking.rs`). Keywords go through FTS5 without function words;
//! meaning through the in-memory piece index, its best candidates scored again exactly from
//! the stored vectors. Pieces are written by whoever embeds (compaction in the background,
//! `mnemo memory reindex`): this module stores and reads them.

use std::collections::HashMap;

use rusqlite::{OptionalExtension, params};

use super::db::Db;
use super::error::StoreError;
use super::fts_query::{content_terms, quote_terms};
use super::keyword::keyword_candidates;
use super::piece_index::{Key, PieceIndex, Source};
use super::ranking::{self, Signals};
use super::types::SearchHit;
use super::vectors::{dot, from_blob, normalize, to_blob};
use crate::llm::Message;

/// Something remembered without vectors of the current model.
#[derive(Debug, Clone)]
pub enum Unembedded {
    Archive {
        id: i64,
        topic: String,
        summary: String,
        messages: Vec<Message>,
    },
    Experience {
        id: i64,
        text: String,
    },
}

impl Unembedded {
    pub fn key(&self) -> Key {
        match self {
            Unembedded::Archive { id, .. } => (Source::Archive, *id),
            Unembedded::Experience { id, .. } => (Source::Experience, *id),
        }
    }
}

/// Candidates each signal contributes for a search returning `limit` hits.
fn pool_size(limit: usize) -> usize {
    limit.saturating_mul(4).clamp(50, 1000)
}

/// How many of the meaning candidates are scored again exactly.
fn rerank_size(limit: usize) -> usize {
    limit.saturating_mul(4).clamp(20, 200)
}

impl Db {
    /// Bytes the in-memory piece index takes (0 before the first search by meaning).
    pub fn piece_index_bytes(&self) -> usize {
        self.pieces.as_ref().map_or(0, PieceIndex::memory_bytes)
    }

    /// Up to `limit` entries and experiences (newest first) without vectors of `model`.
    pub fn unembedded(&self, model: &str, limit: usize) -> Result<Vec<Unembedded>, StoreError> {
        let limit = i64::try_from(limit).unwrap_or(i64::MAX);
        let mut found = Vec::new();
        let mut stmt = self.conn.prepare_cached(
            "SELECT a.id, a.topic, a.summary, a.messages FROM archive a
             WHERE NOT EXISTS (SELECT 1 FROM memory_pieces p WHERE p.model = ?1
                               AND p.source = 'archive' AND p.source_id = a.id)
             ORDER BY a.id DESC LIMIT ?2",
        )?;
        let rows = stmt.query_map(params![model, limit], |row| {
            Ok((
                row.get(0)?,
                row.get(1)?,
                row.get(2)?,
                row.get::<_, String>(3)?,
            ))
        })?;
        for row in rows {
            let (id, topic, summary, messages) = row?;
            let messages = serde_json::from_str(&messages)?;
            found.push(Unembedded::Archive {
                id,
                topic,
                summary,
                messages,
            });
        }
        let left = limit - found.len() as i64;
        let mut stmt = self.conn.prepare_cached(
            "SELECT e.id, e.text FROM experiences e
             WHERE NOT EXISTS (SELECT 1 FROM memory_pieces p WHERE p.model = ?1
                               AND p.source = 'experience' AND p.source_id = e.id)
             ORDER BY e.id DESC LIMIT ?2",
        )?;
        let rows = stmt.query_map(params![model, left.max(0)], |row| {
            Ok(Unembedded::Experience {
                id: row.get(0)?,
                text: row.get(1)?,
            })
        })?;
        for row in rows {
            found.push(row?);
        }
        Ok(found)
    }

    /// How many entries and experiences have no vectors of `model`.
    pub fn count_unembedded(&self, model: &str) -> Result<usize, StoreError> {
        let count: i64 = self.conn.query_row(
            "SELECT (SELECT count(*) FROM archive a WHERE NOT EXISTS (SELECT 1 FROM memory_pieces p
                     WHERE p.model = ?1 AND p.source = 'archive' AND p.source_id = a.id))
                  + (SELECT count(*) FROM experiences e WHERE NOT EXISTS (SELECT 1 FROM
                     memory_pieces p WHERE p.model = ?1 AND p.source = 'experience'
                     AND p.source_id = e.id))",
            [model],
            |row| row.get(0),
        )?;
        Ok(usize::try_from(count).unwrap_or(0))
    }

    /// Stores the vectors of `key`'s pieces for `model`, replacing earlier ones. Nothing is
    /// stored for something deleted meanwhile.
    pub fn store_pieces(
        &mut self,
        model: &str,
        key: Key,
        vectors: &[Vec<f32>],
    ) -> Result<(), StoreError> {
        let (source, id) = key;
        let tx = self.conn.transaction()?;
        let exists: Option<i64> = match source {
            Source::Archive => tx
                .query_row("SELECT id FROM archive WHERE id = ?1", [id], |r| r.get(0))
                .optional()?,
            Source::Experience => tx
                .query_row("SELECT id FROM experiences WHERE id = ?1", [id], |r| {
                    r.get(0)
                })
                .optional()?,
        };
        if exists.is_none() {
            return Ok(());
        }
        tx.execute(
            "DELETE FROM memory_pieces WHERE model = ?1 AND source = ?2 AND source_id = ?3",
            params![model, source.as_str(), id],
        )?;
        {
            let mut insert = tx.prepare_cached(
                "INSERT INTO memory_pieces(source, source_id, ord, model, embedding)
                 VALUES (?1, ?2, ?3, ?4, ?5)",
            )?;
            for (ord, vector) in vectors.iter().enumerate() {
                let mut unit = vector.clone();
                normalize(&mut unit);
                insert.execute(params![
                    source.as_str(),
                    id,
                    ord as i64,
                    model,
                    to_blob(&unit)
                ])?;
            }
        }
        tx.commit()?;
        Ok(())
    }

    /// What is remembered that best matches `query`, best first: by keyword, and by meaning
    /// when `semantic` gives the query's vector and the model that made it. `scope` limits the
    /// search to one workspace (its archive entries and its and global experiences).
    pub fn recall(
        &mut self,
        query: &str,
        semantic: Option<(&str, &[f32])>,
        scope: Option<&str>,
        limit: usize,
    ) -> Result<Vec<SearchHit>, StoreError> {
        if limit == 0 {
            return Ok(Vec::new());
        }
        let pool = pool_size(limit);
        let mut signals: HashMap<Key, Signals> = HashMap::new();
        let terms = content_terms(query);
        if !terms.is_empty() {
            let archive: Vec<i64> = keyword_candidates(&self.conn, &terms, pool)?
                .into_iter()
                .map(|(id, _)| id)
                .collect();
            let experiences = self.experience_candidates(&quote_terms(&terms), pool)?;
            for (source, ids) in [
                (Source::Archive, archive),
                (Source::Experience, experiences),
            ] {
                let matched = self.terms_matched(source, &terms, &ids)?;
                for (rank, id) in ids.iter().enumerate() {
                    let entry = signals.entry((source, *id)).or_default();
                    entry.keyword = Some(rank);
                    let count = matched.get(id).copied().unwrap_or(0);
                    entry.coverage = count as f64 / terms.len() as f64;
                }
            }
        }
        if let Some((model, vector)) = semantic {
            let mut query = vector.to_vec();
            normalize(&mut query);
            let exact = self.meaning_candidates(model, &query, rerank_size(limit))?;
            for (rank, (key, cosine)) in exact.iter().enumerate() {
                let entry = signals.entry(*key).or_default();
                entry.semantic = Some(rank);
                entry.cosine = Some(f64::from(*cosine));
            }
        }
        let mut hits = Vec::with_capacity(signals.len());
        for (key, signal) in signals {
            if let Some(mut hit) = self.hit(key, scope)? {
                hit.keyword = signal.keyword.map_or(0.0, |r| 1.0 / (1.0 + r as f64));
                hit.semantic = signal.cosine;
                hit.score = ranking::fused(&signal, hit.importance);
                hits.push(hit);
            }
        }
        ranking::sort_hits(&mut hits);
        hits.truncate(limit);
        Ok(hits)
    }

    /// How many of `terms` each of `ids` matches: a match on one incidental word of a long
    /// question is a weak keyword signal however well bm25 ranks it.
    fn terms_matched(
        &self,
        source: Source,
        terms: &[String],
        ids: &[i64],
    ) -> Result<HashMap<i64, usize>, StoreError> {
        let mut matched: HashMap<i64, usize> = HashMap::new();
        if ids.is_empty() {
            return Ok(matched);
        }
        let sql = match source {
            Source::Archive => {
                "SELECT rowid FROM archive_fts WHERE archive_fts MATCH ?1
                 AND rowid IN (SELECT value FROM json_each(?2))"
            }
            Source::Experience => {
                "SELECT rowid FROM experiences_fts WHERE experiences_fts MATCH ?1
                 AND rowid IN (SELECT value FROM json_each(?2))"
            }
        };
        let ids = serde_json::to_string(ids)?;
        let mut stmt = self.conn.prepare_cached(sql)?;
        for term in terms {
            let expression = quote_terms(std::slice::from_ref(term));
            let rows = stmt.query_map(params![expression, ids], |row| row.get::<_, i64>(0))?;
            for id in rows {
                *matched.entry(id?).or_default() += 1;
            }
        }
        Ok(matched)
    }

    fn experience_candidates(&self, expression: &str, pool: usize) -> Result<Vec<i64>, StoreError> {
        let mut stmt = self.conn.prepare_cached(
            "SELECT rowid FROM experiences_fts WHERE experiences_fts MATCH ?1 ORDER BY rank LIMIT ?2",
        )?;
        let pool = i64::try_from(pool).unwrap_or(i64::MAX);
        let ids = stmt
            .query_map(params![expression, pool], |row| row.get(0))?
            .collect::<Result<Vec<i64>, _>>()?;
        Ok(ids)
    }

    /// The `count` entries closest in meaning, each by its best piece, scored exactly.
    fn meaning_candidates(
        &mut self,
        model: &str,
        query: &[f32],
        count: usize,
    ) -> Result<Vec<(Key, f32)>, StoreError> {
        self.refresh_pieces(model, query.len())?;
        let Some(index) = &self.pieces else {
            return Ok(Vec::new());
        };
        let approximate = index.best(query, count);
        let mut stmt = self.conn.prepare_cached(
            "SELECT embedding FROM memory_pieces WHERE model = ?1 AND source = ?2 AND source_id = ?3",
        )?;
        let mut exact = Vec::with_capacity(approximate.len());
        for ((source, id), _) in approximate {
            let mut best = f32::MIN;
            let mut rows = stmt.query(params![model, source.as_str(), id])?;
            while let Some(row) = rows.next()? {
                if let Ok(blob) = row.get_ref(0)?.as_blob() {
                    let vector = from_blob(blob);
                    if vector.len() == query.len() {
                        best = best.max(dot(&vector, query));
                    }
                }
            }
            if best > f32::MIN {
                exact.push(((source, id), best));
            }
        }
        exact.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
        Ok(exact)
    }

    /// Loads the pieces of `model` on first use, and afterwards only those written since
    /// (by this process or another).
    fn refresh_pieces(&mut self, model: &str, dim: usize) -> Result<(), StoreError> {
        let stale = self
            .pieces
            .as_ref()
            .is_none_or(|index| index.model() != model || index.dim() != dim);
        if stale {
            self.pieces = Some(PieceIndex::new(model, dim));
        }
        let Some(index) = self.pieces.as_mut() else {
            return Ok(());
        };
        let mut stmt = self.conn.prepare_cached(
            "SELECT id, source, source_id, embedding FROM memory_pieces
             WHERE model = ?1 AND id > ?2 ORDER BY id",
        )?;
        let mut rows = stmt.query(params![model, index.last_row])?;
        while let Some(row) = rows.next()? {
            let row_id: i64 = row.get(0)?;
            let source: String = row.get(1)?;
            let Some(source) = Source::parse(&source) else {
                continue;
            };
            if let Ok(blob) = row.get_ref(3)?.as_blob() {
                index.push(row_id, (source, row.get(2)?), &from_blob(blob));
            }
        }
        Ok(())
    }

    /// The hit for `key`, or `None` when it is gone or outside `scope`.
    fn hit(&self, (source, id): Key, scope: Option<&str>) -> Result<Option<SearchHit>, StoreError> {
        let found = match source {
            Source::Archive => self
                .conn
                .prepare_cached(
                    "SELECT a.session_id, a.created_at, a.importance, a.topic, a.summary, s.cwd
                     FROM archive a LEFT JOIN sessions s ON s.id = a.session_id WHERE a.id = ?1",
                )?
                .query_row([id], |row| {
                    let cwd: Option<String> = row.get(5)?;
                    Ok((
                        SearchHit {
                            id,
                            source,
                            session_id: row.get(0)?,
                            created_at: row.get(1)?,
                            importance: row.get(2)?,
                            topic: row.get(3)?,
                            summary: row.get(4)?,
                            keyword: 0.0,
                            semantic: None,
                            score: 0.0,
                        },
                        cwd,
                    ))
                })
                .optional()?
                .filter(|(_, cwd)| scope.is_none_or(|s| cwd.as_deref() == Some(s))),
            Source::Experience => self
                .conn
                .prepare_cached("SELECT text, scope, created_at FROM experiences WHERE id = ?1")?
                .query_row([id], |row| {
                    let stored: String = row.get(1)?;
                    Ok((
                        SearchHit {
                            id,
                            source,
                            session_id: None,
                            created_at: row.get(2)?,
                            importance: 0.5,
                            topic: "remembered".to_string(),
                            summary: row.get(0)?,
                            keyword: 0.0,
                            semantic: None,
                            score: 0.0,
                        },
                        Some(stored),
                    ))
                })
                .optional()?
                .filter(|(_, stored)| {
                    scope.is_none_or(|s| {
                        matches!(stored.as_deref(), Some("global")) || stored.as_deref() == Some(s)
                    })
                }),
        };
        Ok(found.map(|(hit, _)| hit))
    }
}

#[cfg(test)]
#[path = "recall_tests.rs"]
mod tests;
