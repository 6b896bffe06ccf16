//! The archive tier: stretches of conversation moved out of the working set, each with a
//! topic, summary, full messages and importance (embeddings are pieces, `recall.rs`). Writing an entry and
//! retiring its messages from the working set happen in one transaction; the FTS index follows
//! through triggers and the in-memory vector cache is updated after the commit.

use rusqlite::{OptionalExtension, Transaction, params};
use serde_json::Value;

use super::db::{Db, from_sql_int, now_ms, to_sql_int};
use super::error::StoreError;
use super::types::{ArchiveEntry, NewArchiveEntry};
use crate::llm::{ContentBlock, Message};

impl Db {
    /// Archives one stretch of a session and deactivates its messages (`first_seq..=last_seq`).
    pub fn archive_messages(&mut self, entry: NewArchiveEntry) -> Result<i64, StoreError> {
        let ids = self.archive_many(std::slice::from_ref(&entry))?;
        ids.first()
            .copied()
            .ok_or_else(|| StoreError::Corrupt("archive insert returned no id".to_owned()))
    }

    /// Keeps the whole of one working-set message in the archive (as `entry`) and puts the cut
    /// `replacement` in its place, in one transaction: for a message too big for the context.
    pub fn archive_and_cut(
        &mut self,
        entry: NewArchiveEntry,
        replacement: &crate::llm::Message,
        tokens: u32,
    ) -> Result<i64, StoreError> {
        let now = now_ms();
        let seq = entry.first_seq;
        let tx = self.conn.transaction()?;
        let id = insert_entry(&tx, &entry, now)?;
        tx.prepare_cached(
            "UPDATE messages SET content = ?3, tokens = ?4, active = 1
             WHERE session_id = ?1 AND seq = ?2",
        )?
        .execute(params![
            entry.session_id,
            seq,
            serde_json::to_string(&replacement.content)?,
            tokens
        ])?;
        tx.commit()?;
        Ok(id)
    }

    /// Archives several stretches in one transaction (imports, benchmarks); ids in order.
    pub fn archive_many(&mut self, entries: &[NewArchiveEntry]) -> Result<Vec<i64>, StoreError> {
        let now = now_ms();
        let tx = self.conn.transaction()?;
        let mut written = Vec::with_capacity(entries.len());
        for entry in entries {
            written.push(insert_entry(&tx, entry, now)?);
        }
        tx.commit()?;
        Ok(written)
    }

    #[cfg(test)]
    /// Replaces topic and summary (after a model-written summary arrives); the FTS index
    /// follows through the update trigger.
    pub fn update_archive_summary(
        &mut self,
        id: i64,
        topic: &str,
        summary: &str,
    ) -> Result<(), StoreError> {
        self.update_archive(
            "UPDATE archive SET topic = ?2, summary = ?3 WHERE id = ?1",
            params![id, topic, summary],
            id,
        )
    }

    #[cfg(test)]
    /// Deletes an entry. Its messages stay inactive: the working set never grows back.
    pub fn delete_archive(&mut self, id: i64) -> Result<(), StoreError> {
        self.update_archive("DELETE FROM archive WHERE id = ?1", params![id], id)
    }

    #[cfg(test)]
    fn update_archive(
        &mut self,
        sql: &str,
        values: impl rusqlite::Params,
        id: i64,
    ) -> Result<(), StoreError> {
        let tx = self.conn.transaction()?;
        if tx.prepare_cached(sql)?.execute(values)? == 0 {
            return Err(not_found(id));
        }
        tx.commit()?;
        Ok(())
    }

    pub fn archive_entry(&self, id: i64) -> Result<ArchiveEntry, StoreError> {
        let mut stmt = self.conn.prepare_cached(
            "SELECT session_id, topic, summary, messages, token_count, importance, first_seq,
                 last_seq, started_at, ended_at, created_at
             FROM archive WHERE id = ?1",
        )?;
        let row = stmt
            .query_row([id], |row| {
                Ok((
                    ArchiveEntry {
                        id,
                        session_id: row.get(0)?,
                        topic: row.get(1)?,
                        summary: row.get(2)?,
                        messages: Vec::new(),
                        token_count: from_sql_int(row.get(4)?),
                        importance: row.get(5)?,
                        first_seq: row.get(6)?,
                        last_seq: row.get(7)?,
                        started_at: row.get(8)?,
                        ended_at: row.get(9)?,
                        created_at: row.get(10)?,
                    },
                    row.get::<_, String>(3)?,
                ))
            })
            .optional()?;
        let (mut entry, messages) = row.ok_or_else(|| not_found(id))?;
        entry.messages = serde_json::from_str(&messages)?;
        Ok(entry)
    }

    #[cfg(test)]
    pub fn archive_count(&self) -> Result<u64, StoreError> {
        let mut stmt = self.conn.prepare_cached("SELECT count(*) FROM archive")?;
        Ok(from_sql_int(stmt.query_row([], |row| row.get(0))?))
    }
}

fn insert_entry(
    tx: &Transaction<'_>,
    entry: &NewArchiveEntry,
    now: i64,
) -> Result<i64, StoreError> {
    let id = tx
        .prepare_cached(
            "INSERT INTO archive(session_id, topic, summary, messages, body, token_count,
                 importance, first_seq, last_seq, started_at, ended_at, created_at)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12)",
        )?
        .insert(params![
            entry.session_id,
            entry.topic,
            entry.summary,
            serde_json::to_string(&entry.messages)?,
            searchable_text(&entry.messages),
            to_sql_int(entry.token_count),
            entry.importance.clamp(0.0, 1.0),
            entry.first_seq,
            entry.last_seq,
            entry.started_at,
            entry.ended_at,
            now
        ])?;
    tx.prepare_cached(
        "UPDATE messages SET active = 0
         WHERE session_id = ?1 AND seq BETWEEN ?2 AND ?3 AND active = 1",
    )?
    .execute(params![entry.session_id, entry.first_seq, entry.last_seq])?;
    Ok(id)
}

/// The text full-text search sees for an entry: message text, tool names and inputs, tool
/// results. Thinking is left out.
pub fn searchable_text(messages: &[Message]) -> String {
    let mut out = String::new();
    for block in messages.iter().flat_map(|message| &message.content) {
        match block {
            ContentBlock::Text { text } => push_line(&mut out, text),
            // Base64 is never searched; the image's name is.
            ContentBlock::Image(image) => push_line(&mut out, &image.name),
            ContentBlock::Thinking { .. } => {}
            ContentBlock::ToolUse { name, input, .. } => {
                push_line(&mut out, name);
                push_values(&mut out, input);
            }
            ContentBlock::ToolResult { content, .. } => push_line(&mut out, content),
            ContentBlock::Server(server) => push_line(&mut out, &server.summary()),
        }
    }
    out
}

fn push_line(out: &mut String, text: &str) {
    if !out.is_empty() {
        out.push('\n');
    }
    out.push_str(text);
}

/// The string and number leaves of a tool input; keys are the same in every call and would
/// only add noise to the index.
fn push_values(out: &mut String, value: &Value) {
    match value {
        Value::String(text) => push_line(out, text),
        Value::Number(number) => push_line(out, &number.to_string()),
        Value::Array(items) => items.iter().for_each(|item| push_values(out, item)),
        // By key, whatever order the call wrote them in (serde_json keeps insertion order
        // once any crate asks for `preserve_order`).
        Value::Object(fields) => {
            let mut fields: Vec<(&String, &Value)> = fields.iter().collect();
            fields.sort_by(|a, b| a.0.cmp(b.0));
            fields
                .into_iter()
                .for_each(|(_, item)| push_values(out, item));
        }
        Value::Null | Value::Bool(_) => {}
    }
}

fn not_found(id: i64) -> StoreError {
    StoreError::NotFound {
        what: "archive entry",
        key: id.to_string(),
    }
}

#[cfg(test)]
#[path = "archive_tests.rs"]
mod tests;
