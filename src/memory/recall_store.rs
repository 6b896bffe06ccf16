//! The vectors behind recall by meaning: what has none yet for a model, and storing the
//! pieces of one item. Whoever embeds (compaction and turns in the background,
//! `mnemo memory reindex`) reads and writes through these.

use rusqlite::{OptionalExtension, params};

use super::db::Db;
use super::error::StoreError;
use super::piece_index::{Key, Source};
use super::vectors::{normalize, to_blob};
use crate::llm::Message;

/// The kv key of the highest piece row ever written.
const LAST_PIECE_KEY: &str = "memory_pieces_last_id";

/// The highest piece row the database ever had (deleted rows included).
pub(super) fn last_piece_row(conn: &rusqlite::Connection) -> Result<i64, StoreError> {
    Ok(conn.query_row(
        "SELECT max(coalesce((SELECT CAST(value AS INTEGER) FROM kv WHERE key = ?1), 0),
                    coalesce((SELECT max(id) FROM memory_pieces), 0))",
        [LAST_PIECE_KEY],
        |r| r.get(0),
    )?)
}

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
    /// The text of a working message.
    Message {
        id: i64,
        text: String,
    },
    /// A paragraph of the current dream notes.
    Dream {
        id: i64,
        text: String,
    },
}

impl Unembedded {
    pub fn key(&self) -> Key {
        match self {
            Unembedded::Archive { id, .. } => (Source::Archive, *id),
            Unembedded::Experience { id, .. } => (Source::Experience, *id),
            Unembedded::Message { id, .. } => (Source::Message, *id),
            Unembedded::Dream { id, .. } => (Source::Dream, *id),
        }
    }
}

/// Rows of `table` (by `id`) with no piece of the model (`?1`) for `source`.
fn missing(table: &str, id: &str, source: &str) -> String {
    format!(
        "FROM {table} WHERE NOT EXISTS (SELECT 1 FROM memory_pieces p WHERE p.model = ?1
         AND p.source = '{source}' AND p.source_id = {id})"
    )
}

impl Db {
    /// Up to `limit` entries, experiences, working messages and dream-note paragraphs (newest
    /// first in each) without vectors of `model`.
    pub fn unembedded(&self, model: &str, limit: usize) -> Result<Vec<Unembedded>, StoreError> {
        let mut left = i64::try_from(limit).unwrap_or(i64::MAX);
        let mut found = Vec::new();
        let sql = format!(
            "SELECT a.id, a.topic, a.summary, a.messages {} ORDER BY a.id DESC LIMIT ?2",
            missing("archive a", "a.id", "archive")
        );
        let mut stmt = self.conn.prepare_cached(&sql)?;
        let rows = stmt.query_map(params![model, left], |row| {
            Ok((
                row.get(0)?,
                row.get(1)?,
                row.get(2)?,
                row.get::<_, String>(3)?,
            ))
        })?;
        for row in rows {
            let (id, topic, summary, messages) = row?;
            found.push(Unembedded::Archive {
                id,
                topic,
                summary,
                messages: serde_json::from_str(&messages)?,
            });
        }
        for (sql, source) in [
            (
                format!(
                    "SELECT e.id, e.text {} ORDER BY e.id DESC LIMIT ?2",
                    missing("experiences e", "e.id", "experience")
                ),
                Source::Experience,
            ),
            (
                format!(
                    "SELECT f.rowid, f.text {} ORDER BY f.rowid DESC LIMIT ?2",
                    missing("messages_fts f", "f.rowid", "message")
                ),
                Source::Message,
            ),
            (
                format!(
                    "SELECT d.id, d.text {} ORDER BY d.id DESC LIMIT ?2",
                    missing("dream_paragraphs d", "d.id", "dream")
                ),
                Source::Dream,
            ),
        ] {
            left = i64::try_from(limit.saturating_sub(found.len())).unwrap_or(0);
            if left == 0 {
                break;
            }
            let mut stmt = self.conn.prepare_cached(&sql)?;
            let rows = stmt.query_map(params![model, left], |row| {
                Ok((row.get::<_, i64>(0)?, row.get::<_, String>(1)?))
            })?;
            for row in rows {
                let (id, text) = row?;
                found.push(match source {
                    Source::Message => Unembedded::Message { id, text },
                    Source::Dream => Unembedded::Dream { id, text },
                    _ => Unembedded::Experience { id, text },
                });
            }
        }
        Ok(found)
    }

    /// How many entries, experiences, working messages and dream-note paragraphs have no
    /// vectors of `model`.
    pub fn count_unembedded(&self, model: &str) -> Result<usize, StoreError> {
        let sql = format!(
            "SELECT (SELECT count(*) {}) + (SELECT count(*) {}) + (SELECT count(*) {})
                 + (SELECT count(*) {})",
            missing("archive a", "a.id", "archive"),
            missing("experiences e", "e.id", "experience"),
            missing("messages_fts f", "f.rowid", "message"),
            missing("dream_paragraphs d", "d.id", "dream"),
        );
        let count: i64 = self.conn.query_row(&sql, [model], |row| row.get(0))?;
        Ok(usize::try_from(count).unwrap_or(0))
    }

    /// Stores the vectors of `key`'s pieces for `model`, replacing earlier ones. Nothing is
    /// stored for something deleted (or archived, for a working message) meanwhile.
    pub fn store_pieces(
        &mut self,
        model: &str,
        key: Key,
        vectors: &[Vec<f32>],
    ) -> Result<(), StoreError> {
        let (source, id) = key;
        let tx = self.conn.transaction()?;
        let exists = match source {
            Source::Archive => "SELECT id FROM archive WHERE id = ?1",
            Source::Experience => "SELECT id FROM experiences WHERE id = ?1",
            Source::Message => "SELECT rowid FROM messages_fts WHERE rowid = ?1",
            Source::Dream => "SELECT id FROM dream_paragraphs WHERE id = ?1",
        };
        let exists: Option<i64> = tx.query_row(exists, [id], |r| r.get(0)).optional()?;
        if exists.is_none() {
            return Ok(());
        }
        tx.execute(
            "DELETE FROM memory_pieces WHERE model = ?1 AND source = ?2 AND source_id = ?3",
            params![model, source.as_str(), id],
        )?;
        // Rows are numbered past every row there ever was, never reusing the id of a deleted
        // last row: the piece index reads "rows after the last it holds".
        let mut last = last_piece_row(&tx)?;
        {
            let mut insert = tx.prepare_cached(
                "INSERT INTO memory_pieces(id, source, source_id, ord, model, embedding)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
            )?;
            for (ord, vector) in vectors.iter().enumerate() {
                let mut unit = vector.clone();
                normalize(&mut unit);
                last += 1;
                insert.execute(params![
                    last,
                    source.as_str(),
                    id,
                    ord as i64,
                    model,
                    to_blob(&unit)
                ])?;
            }
        }
        tx.execute(
            "INSERT INTO kv(key, value) VALUES (?1, ?2)
             ON CONFLICT(key) DO UPDATE SET value = excluded.value",
            params![LAST_PIECE_KEY, last.to_string()],
        )?;
        tx.commit()?;
        Ok(())
    }
}
