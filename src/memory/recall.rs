//! Recall: what is remembered (archive entries, experiences, the working messages of
//! sessions and the dream notes) found by keyword and by meaning, fused by rank (`ranking.rs`). Keywords go through FTS5 without function words;
//! meaning through the in-memory piece index, its best candidates scored again exactly from
//! the stored vectors (written through `recall_store.rs`).

use std::collections::HashMap;

use rusqlite::params;
use serde::Serialize;

use super::db::Db;
use super::error::StoreError;
use super::fts_query::{content_terms, quote_terms, terms_matched};
use super::keyword::keyword_candidates;
use super::piece_file::PieceFile;
use super::piece_index::{Key, PieceIndex, Source};
use super::ranking::{self, Signals};
use super::recall_store::last_piece_row;
use super::types::SearchHit;
use super::vectors::{dot, from_blob, normalize};

/// Where to look: one workspace or all, and a session whose working messages are left out
/// (the asking session has them in its context already).
#[derive(Debug, Clone, Default, Serialize)]
pub struct RecallScope {
    pub workspace: Option<String>,
    pub except_session: Option<String>,
}

impl RecallScope {
    /// Everything remembered, in every workspace.
    pub fn everywhere() -> Self {
        Self::default()
    }

    /// One workspace's conversations and notes (and the notes kept for every workspace).
    pub fn workspace(path: impl Into<String>) -> Self {
        Self {
            workspace: Some(path.into()),
            except_session: None,
        }
    }

    /// `workspace`'s when given, else everything's.
    pub fn within(workspace: Option<String>) -> Self {
        workspace.map_or_else(Self::everywhere, Self::workspace)
    }

    pub(super) fn admits_workspace(&self, cwd: Option<&str>) -> bool {
        self.workspace.as_deref().is_none_or(|w| cwd == Some(w))
    }
}

/// Retired pieces (of entries deleted, updated or archived) the index may carry beyond a
/// quarter of the live ones before it is rebuilt.
const RETIRED_SLACK: usize = 1000;

/// The kv key of the database's own random id, which its piece files carry.
const DB_ID_KEY: &str = "db_id";

/// The keyword candidates of a query, where each placed (see `Db::keyword_signals`).
#[derive(Debug)]
pub struct KeywordSignals(HashMap<Key, Signals>);

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

    /// What is remembered that best matches `query`, best first: by keyword, and by meaning
    /// when `semantic` gives the query's vector and the model that made it, within `scope`.
    pub fn recall(
        &mut self,
        query: &str,
        semantic: Option<(&str, &[f32])>,
        scope: &RecallScope,
        limit: usize,
    ) -> Result<Vec<SearchHit>, StoreError> {
        let keyword = self.keyword_signals(query, limit)?;
        self.recall_with(keyword, semantic, scope, limit)
    }

    /// The keyword half of `recall`, which needs no vector: a search can run it while the
    /// query is being embedded.
    pub fn keyword_signals(&self, query: &str, limit: usize) -> Result<KeywordSignals, StoreError> {
        let mut signals: HashMap<Key, Signals> = HashMap::new();
        let terms = content_terms(query);
        if limit == 0 || terms.is_empty() {
            return Ok(KeywordSignals(signals));
        }
        let pool = pool_size(limit);
        let archive: Vec<i64> = keyword_candidates(&self.conn, &terms, pool)?
            .into_iter()
            .map(|(id, _)| id)
            .collect();
        let expression = quote_terms(&terms);
        let experiences = self.fts_candidates(Source::Experience, &expression, pool)?;
        let messages = self.fts_candidates(Source::Message, &expression, pool)?;
        let dream = self.fts_candidates(Source::Dream, &expression, pool)?;
        for (source, ids) in [
            (Source::Archive, archive),
            (Source::Experience, experiences),
            (Source::Message, messages),
            (Source::Dream, dream),
        ] {
            let matched = terms_matched(&self.conn, fts_table(source), "rowid", &terms, &ids)?;
            for (rank, id) in ids.iter().enumerate() {
                let entry = signals.entry((source, *id)).or_default();
                entry.keyword = Some(rank);
                let count = matched.get(id).copied().unwrap_or(0);
                entry.coverage = count as f64 / terms.len() as f64;
            }
        }
        Ok(KeywordSignals(signals))
    }

    /// `recall` from its keyword half (`keyword_signals` for the same query and limit).
    pub fn recall_with(
        &mut self,
        keyword: KeywordSignals,
        semantic: Option<(&str, &[f32])>,
        scope: &RecallScope,
        limit: usize,
    ) -> Result<Vec<SearchHit>, StoreError> {
        if limit == 0 {
            return Ok(Vec::new());
        }
        let mut signals = keyword.0;
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
            let related = ranking::related(&signal);
            if !related {
                continue;
            }
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

    /// The best keyword matches among experiences or working messages, by bm25.
    fn fts_candidates(
        &self,
        source: Source,
        expression: &str,
        pool: usize,
    ) -> Result<Vec<i64>, StoreError> {
        let table = fts_table(source);
        let mut stmt = self.conn.prepare_cached(&format!(
            "SELECT rowid FROM {table} WHERE {table} MATCH ?1 ORDER BY rank LIMIT ?2"
        ))?;
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

    /// Loads the pieces of `model` on first use (from the piece file when it is current),
    /// and afterwards only those written since (by this process or another); keeps the piece
    /// file up to date for the next process.
    fn refresh_pieces(&mut self, model: &str, dim: usize) -> Result<(), StoreError> {
        let stale = self
            .pieces
            .as_ref()
            .is_none_or(|index| index.model() != model || index.dim() != dim);
        // The file is only touched when the index is loaded or grows, not on every search.
        let mut file = None;
        // Whether the index was read from the database alone, so the file is to be replaced.
        let mut rebuilt = false;
        if stale {
            file = self.piece_file(model)?;
            let newest = last_piece_row(&self.conn)?;
            let stored = file
                .as_ref()
                .and_then(|file| file.load(model, dim))
                .filter(|index| index.last_row <= newest);
            rebuilt = stored.is_none();
            self.pieces = Some(stored.unwrap_or_else(|| PieceIndex::new(model, dim)));
        }
        let Some(mut index) = self.pieces.take() else {
            return Ok(());
        };
        let known = index.last_row;
        self.read_pieces_after(&mut index)?;
        let added = index.last_row > known;
        if added && file.is_none() {
            file = self.piece_file(model)?;
        }
        if let Some(file) = file {
            let live: i64 = self.conn.query_row(
                "SELECT count(*) FROM memory_pieces WHERE model = ?1",
                [model],
                |r| r.get(0),
            )?;
            let live = usize::try_from(live).unwrap_or(0);
            if index.len() > live + (live / 4).max(RETIRED_SLACK) {
                index = PieceIndex::new(model, dim);
                self.read_pieces_after(&mut index)?;
                file.replace(&index);
            } else if rebuilt {
                file.replace(&index);
            } else if added {
                file.append(&index);
            }
        }
        self.pieces = Some(index);
        Ok(())
    }

    /// Adds the stored pieces of the index's model after its last row, in row order.
    fn read_pieces_after(&self, index: &mut PieceIndex) -> Result<(), StoreError> {
        // `+model`: walk the rows after `id` rather than every row of the model through its
        // index, which SQLite would otherwise pick (2.7 ms at 60,000 pieces, for no new row).
        let mut stmt = self.conn.prepare_cached(
            "SELECT id, source, source_id, embedding FROM memory_pieces
             WHERE +model = ?1 AND id > ?2 ORDER BY id",
        )?;
        let mut rows = stmt.query(params![index.model(), index.last_row])?;
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

    /// The piece file of `model` beside a database file; none for one in memory.
    fn piece_file(&self, model: &str) -> Result<Option<PieceFile>, StoreError> {
        let Some(path) = &self.path else {
            return Ok(None);
        };
        let id = match self.kv_get(DB_ID_KEY)? {
            Some(id) => id,
            None => {
                // Written once in the database's life; another process may win the race.
                self.conn.execute(
                    "INSERT OR IGNORE INTO kv(key, value) VALUES (?1, ?2)",
                    [DB_ID_KEY, &uuid::Uuid::new_v4().to_string()],
                )?;
                self.kv_get(DB_ID_KEY)?.unwrap_or_default()
            }
        };
        Ok(Some(PieceFile::new(path, id, model)))
    }
}

/// The full-text index of a source.
fn fts_table(source: Source) -> &'static str {
    match source {
        Source::Archive => "archive_fts",
        Source::Experience => "experiences_fts",
        Source::Message => "messages_fts",
        Source::Dream => "dream_paragraphs_fts",
    }
}

#[cfg(test)]
#[path = "recall_tests.rs"]
mod tests;
