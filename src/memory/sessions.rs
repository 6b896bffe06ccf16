//! Sessions: creating, finding (by id or unique prefix), listing and deleting them. Deleting a
//! session removes its messages, turns and archive entries in one transaction.

use rusqlite::{OptionalExtension, Row, params};

use super::db::{Db, from_sql_int, now_ms};
use super::error::StoreError;
use super::types::{NewSession, SessionRow};

/// The shortest id prefix `session` accepts, so a typo does not pick a random session.
pub const MIN_PREFIX: usize = 4;

/// The status of a freshly created session.
pub const NEW_SESSION_STATUS: &str = "active";

/// A session row with its message count and, as its preview, the first 240 characters of its
/// last message with text. The preview walks the messages back from the last one and reads
/// only those it passes (0.2 ms for a session of 20,000 messages, where sorting every text
/// block took 50).
const SELECT_SESSION: &str = "SELECT s.id, s.parent_id, s.created_at, s.updated_at, s.cwd,
        s.title, s.subtitle, s.model, s.status,
        (SELECT count(*) FROM messages m WHERE m.session_id = s.id),
        (SELECT (SELECT substr(trim(json_extract(b.value, '$.text')), 1, 240)
                   FROM json_each(m.content) b
                  WHERE json_extract(b.value, '$.type') = 'text'
                    AND trim(json_extract(b.value, '$.text')) <> ''
                  ORDER BY b.key DESC LIMIT 1)
           FROM messages m
          WHERE m.session_id = s.id AND m.role IN ('user', 'assistant')
            AND EXISTS (SELECT 1 FROM json_each(m.content) b
                         WHERE json_extract(b.value, '$.type') = 'text'
                           AND trim(json_extract(b.value, '$.text')) <> '')
          ORDER BY m.seq DESC LIMIT 1)
    FROM sessions s";

fn session_row(row: &Row<'_>) -> rusqlite::Result<SessionRow> {
    Ok(SessionRow {
        id: row.get(0)?,
        parent_id: row.get(1)?,
        created_at: row.get(2)?,
        updated_at: row.get(3)?,
        cwd: row.get(4)?,
        title: row.get(5)?,
        subtitle: row.get(6)?,
        model: row.get(7)?,
        status: row.get(8)?,
        message_count: from_sql_int(row.get(9)?),
        preview: row.get(10)?,
    })
}

/// The settings key of a session's compaction summary.
pub fn summary_key(session_id: &str) -> String {
    format!("summary:{session_id}")
}

/// The settings key of the subdirectories whose instruction files a session has had.
pub fn nested_key(session_id: &str) -> String {
    format!("nested_instructions:{session_id}")
}

/// The settings key of a session's visible plan (the `todo` tool's last list).
pub fn todo_key(session_id: &str) -> String {
    format!("todo:{session_id}")
}

/// Every settings key that holds a part of one session's state: deleting the session deletes
/// them.
const SESSION_STATE_KEYS: [fn(&str) -> String; 4] = [summary_key, nested_key, todo_key, plan_key];

/// The settings key of a session's plan from plan mode, and whether it was approved.
pub fn plan_key(session_id: &str) -> String {
    format!("plan:{session_id}")
}

impl Db {
    pub fn create_session(&mut self, new: NewSession) -> Result<SessionRow, StoreError> {
        let now = now_ms();
        let tx = self.conn.transaction()?;
        tx.prepare_cached(
            "INSERT INTO sessions(id, parent_id, created_at, updated_at, cwd, title, model, status)
             VALUES (?1, ?2, ?3, ?3, ?4, ?5, ?6, ?7)",
        )?
        .execute(params![
            new.id,
            new.parent_id,
            now,
            new.cwd,
            new.title,
            new.model,
            NEW_SESSION_STATUS
        ])?;
        tx.commit()?;
        Ok(SessionRow {
            id: new.id,
            parent_id: new.parent_id,
            created_at: now,
            updated_at: now,
            cwd: new.cwd,
            title: new.title,
            subtitle: None,
            model: new.model,
            status: NEW_SESSION_STATUS.to_owned(),
            message_count: 0,
            preview: None,
        })
    }

    /// A new session holding a copy of `id`'s working set and compaction summary, so its
    /// conversation can go on elsewhere while the original stays as it is.
    pub fn fork_session(&mut self, id: &str, new_id: &str) -> Result<SessionRow, StoreError> {
        let now = now_ms();
        let tx = self.conn.transaction()?;
        let copied = tx
            .prepare_cached(
                "INSERT INTO sessions(id, parent_id, created_at, updated_at, cwd, title, model,
                                      status)
                 SELECT ?2, NULL, ?3, ?3, cwd, 'fork of ' || coalesce(nullif(title, ''), id),
                        model, ?4 FROM sessions WHERE id = ?1",
            )?
            .execute(params![id, new_id, now, NEW_SESSION_STATUS])?;
        if copied == 0 {
            return Err(StoreError::NotFound {
                what: "session",
                key: id.to_owned(),
            });
        }
        tx.prepare_cached(
            "INSERT INTO messages(session_id, seq, role, tokens, active, created_at, content, kind)
             SELECT ?2, seq, role, tokens, 1, created_at, content, kind FROM messages
             WHERE session_id = ?1 AND active = 1",
        )?
        .execute(params![id, new_id])?;
        let mut copy = tx
            .prepare_cached("INSERT INTO kv(key, value) SELECT ?2, value FROM kv WHERE key = ?1")?;
        copy.execute(params![summary_key(id), summary_key(new_id)])?;
        copy.execute(params![nested_key(id), nested_key(new_id)])?;
        drop(copy);
        tx.commit()?;
        self.session(new_id)
    }

    /// The session with this exact id, or the only one whose id starts with it (at least
    /// `MIN_PREFIX` characters).
    pub fn session(&self, id_or_prefix: &str) -> Result<SessionRow, StoreError> {
        let exact = self
            .conn
            .prepare_cached(&format!("{SELECT_SESSION} WHERE s.id = ?1"))?
            .query_row([id_or_prefix], session_row)
            .optional()?;
        if let Some(row) = exact {
            return Ok(row);
        }
        if id_or_prefix.chars().count() < MIN_PREFIX {
            return Err(StoreError::PrefixTooShort {
                prefix: id_or_prefix.to_owned(),
                min: MIN_PREFIX,
            });
        }
        let mut stmt = self.conn.prepare_cached(&format!(
            "{SELECT_SESSION} WHERE substr(s.id, 1, length(?1)) = ?1 LIMIT 2"
        ))?;
        let mut found = stmt
            .query_map([id_or_prefix], session_row)?
            .collect::<Result<Vec<_>, _>>()?;
        match found.len() {
            0 => Err(not_found(id_or_prefix)),
            1 => Ok(found.remove(0)),
            _ => {
                let count: i64 = self.conn.query_row(
                    "SELECT count(*) FROM sessions WHERE substr(id, 1, length(?1)) = ?1",
                    [id_or_prefix],
                    |row| row.get(0),
                )?;
                Err(StoreError::Ambiguous {
                    prefix: id_or_prefix.to_owned(),
                    count: usize::try_from(count).unwrap_or(usize::MAX),
                })
            }
        }
    }

    /// Top-level sessions (not sub-agent children), heartbeat and schedule runs included,
    /// most recently updated first.
    pub fn list_sessions(
        &self,
        cwd: Option<&str>,
        limit: usize,
    ) -> Result<Vec<SessionRow>, StoreError> {
        self.top_level_sessions(cwd, limit, true)
    }

    /// Top-level sessions a person had, without the heartbeat and schedule runs, most
    /// recently updated first.
    pub fn people_sessions(
        &self,
        cwd: Option<&str>,
        limit: usize,
    ) -> Result<Vec<SessionRow>, StoreError> {
        self.top_level_sessions(cwd, limit, false)
    }

    fn top_level_sessions(
        &self,
        cwd: Option<&str>,
        limit: usize,
        runs: bool,
    ) -> Result<Vec<SessionRow>, StoreError> {
        let mut stmt = self.conn.prepare_cached(&format!(
            "{SELECT_SESSION} WHERE s.parent_id IS NULL AND (?1 IS NULL OR s.cwd = ?1)
             AND (?3 OR s.id NOT IN (SELECT session_id FROM job_run_sessions))
             ORDER BY s.updated_at DESC, s.created_at DESC, s.rowid DESC LIMIT ?2"
        ))?;
        let limit = i64::try_from(limit).unwrap_or(i64::MAX);
        let rows = stmt
            .query_map(params![cwd, limit, runs], session_row)?
            .collect::<Result<Vec<_>, _>>()?;
        Ok(rows)
    }

    /// The most recently updated top-level session started in `cwd` that holds a message (an
    /// empty one, left by an older mnemo, has nothing to continue) and is no job's run.
    pub fn latest_session(&self, cwd: &str) -> Result<Option<SessionRow>, StoreError> {
        let mut stmt = self.conn.prepare_cached(&format!(
            "{SELECT_SESSION} WHERE s.parent_id IS NULL AND s.cwd = ?1
               AND EXISTS (SELECT 1 FROM messages m WHERE m.session_id = s.id)
               AND s.id NOT IN (SELECT session_id FROM job_run_sessions)
             ORDER BY s.updated_at DESC, s.created_at DESC, s.rowid DESC LIMIT 1"
        ))?;
        let rows = stmt
            .query_map(params![cwd], session_row)?
            .collect::<Result<Vec<_>, _>>()?;
        Ok(rows.into_iter().next())
    }

    /// Every sub-agent session below `root_id`, depth first, each with its depth (1 for a
    /// child of the root).
    pub fn descendants(&self, root_id: &str) -> Result<Vec<(u32, SessionRow)>, StoreError> {
        let mut out = Vec::new();
        let mut stack: Vec<(u32, SessionRow)> = self
            .child_sessions(root_id)?
            .into_iter()
            .rev()
            .map(|row| (1, row))
            .collect();
        while let Some((depth, row)) = stack.pop() {
            let children = self.child_sessions(&row.id)?;
            stack.extend(children.into_iter().rev().map(|child| (depth + 1, child)));
            out.push((depth, row));
        }
        Ok(out)
    }

    /// Sub-agent sessions started from `parent_id`, oldest first.
    pub fn child_sessions(&self, parent_id: &str) -> Result<Vec<SessionRow>, StoreError> {
        let mut stmt = self.conn.prepare_cached(&format!(
            "{SELECT_SESSION} WHERE s.parent_id = ?1 ORDER BY s.created_at, s.rowid"
        ))?;
        let rows = stmt
            .query_map([parent_id], session_row)?
            .collect::<Result<Vec<_>, _>>()?;
        Ok(rows)
    }

    pub fn rename_session(&mut self, id: &str, title: &str) -> Result<(), StoreError> {
        self.update_session(
            "UPDATE sessions SET title = ?2 WHERE id = ?1",
            id,
            Some(title),
        )
    }

    /// The current topic of the session; `None` clears it.
    pub fn set_subtitle(&mut self, id: &str, subtitle: Option<&str>) -> Result<(), StoreError> {
        self.update_session(
            "UPDATE sessions SET subtitle = ?2 WHERE id = ?1",
            id,
            subtitle,
        )
    }

    #[cfg(test)]
    pub fn set_status(&mut self, id: &str, status: &str) -> Result<(), StoreError> {
        self.update_session(
            "UPDATE sessions SET status = ?2 WHERE id = ?1",
            id,
            Some(status),
        )
    }

    fn update_session(
        &mut self,
        sql: &str,
        id: &str,
        value: Option<&str>,
    ) -> Result<(), StoreError> {
        let tx = self.conn.transaction()?;
        let changed = tx.prepare_cached(sql)?.execute(params![id, value])?;
        if changed == 0 {
            return Err(not_found(id));
        }
        tx.commit()?;
        Ok(())
    }

    /// Deletes the session with its messages, turns and archive entries. Its sub-agent
    /// sessions stay, without a parent.
    pub fn delete_session(&mut self, id: &str) -> Result<(), StoreError> {
        // The session and the sub-agent sessions below it, which mean nothing without it.
        const TREE: &str = "WITH RECURSIVE tree(id) AS (
                SELECT ?1 UNION ALL SELECT s.id FROM sessions s JOIN tree t ON s.parent_id = t.id
            )";
        let tx = self.conn.transaction()?;
        let ids: Vec<String> = tx
            .prepare_cached(&format!("{TREE} SELECT id FROM tree"))?
            .query_map([id], |row| row.get(0))?
            .collect::<Result<_, _>>()?;
        let changed = tx
            .prepare_cached(&format!(
                "{TREE} DELETE FROM sessions WHERE id IN (SELECT id FROM tree)"
            ))?
            .execute([id])?;
        if changed == 0 {
            return Err(not_found(id));
        }
        let mut forget = tx.prepare_cached("DELETE FROM kv WHERE key = ?1")?;
        for id in &ids {
            for key in SESSION_STATE_KEYS.map(|key| key(id)) {
                forget.execute([key])?;
            }
        }
        drop(forget);
        tx.commit()?;
        // Its pieces went with its entries; the in-memory index is read again when needed.
        self.pieces = None;
        Ok(())
    }
}

fn not_found(key: &str) -> StoreError {
    StoreError::NotFound {
        what: "session",
        key: key.to_owned(),
    }
}

#[cfg(test)]
#[path = "sessions_tests.rs"]
mod tests;
