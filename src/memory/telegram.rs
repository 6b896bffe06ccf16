//! What the Telegram channel keeps: its update offset and state (kv), the paired chats with
//! their sessions, and the pairing codes sent to chats nobody paired yet.

use rusqlite::{OptionalExtension, Row, params};

use super::db::{Db, now_ms};
use super::error::StoreError;
use super::types::Millis;

const OFFSET_KEY: &str = "telegram.offset";
const STATE_KEY: &str = "telegram.state";

/// A chat its owner paired from a terminal.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PairedChat {
    pub chat_id: i64,
    pub name: String,
    pub paired_at: Millis,
    /// The session the chat's messages go to; a new one when `None`.
    pub session_id: Option<String>,
}

/// A code sent to a chat that is not paired.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pairing {
    pub chat_id: i64,
    pub code: String,
    pub name: String,
    pub created_at: Millis,
    /// When the code was last sent to the chat.
    pub sent_at: Millis,
}

fn paired(row: &Row<'_>) -> rusqlite::Result<PairedChat> {
    Ok(PairedChat {
        chat_id: row.get(0)?,
        name: row.get(1)?,
        paired_at: row.get(2)?,
        session_id: row.get(3)?,
    })
}

fn pairing(row: &Row<'_>) -> rusqlite::Result<Pairing> {
    Ok(Pairing {
        chat_id: row.get(0)?,
        code: row.get(1)?,
        name: row.get(2)?,
        created_at: row.get(3)?,
        sent_at: row.get(4)?,
    })
}

impl Db {
    /// The first update not handled yet (0 before the first).
    pub fn telegram_offset(&self) -> Result<i64, StoreError> {
        Ok(self
            .kv_get(OFFSET_KEY)?
            .and_then(|v| v.parse().ok())
            .unwrap_or(0))
    }

    pub fn set_telegram_offset(&mut self, offset: i64) -> Result<(), StoreError> {
        self.kv_set(OFFSET_KEY, &offset.to_string())
    }

    /// What the channel last said about itself ("polling", "stopped: …"), for `mnemo status`.
    pub fn telegram_state(&self) -> Result<Option<String>, StoreError> {
        self.kv_get(STATE_KEY)
    }

    pub fn set_telegram_state(&mut self, state: &str) -> Result<(), StoreError> {
        self.kv_set(STATE_KEY, state)
    }

    pub fn paired_chats(&self) -> Result<Vec<PairedChat>, StoreError> {
        let mut stmt = self.conn.prepare_cached(
            "SELECT chat_id, name, paired_at, session_id FROM telegram_chats ORDER BY paired_at",
        )?;
        let rows = stmt.query_map([], paired)?;
        Ok(rows.collect::<Result<_, _>>()?)
    }

    pub fn paired_chat(&self, chat_id: i64) -> Result<Option<PairedChat>, StoreError> {
        let mut stmt = self.conn.prepare_cached(
            "SELECT chat_id, name, paired_at, session_id FROM telegram_chats WHERE chat_id = ?1",
        )?;
        Ok(stmt.query_row([chat_id], paired).optional()?)
    }

    /// Pairs the chat whose code is `code` (any case), when the code is not older than
    /// `max_age_ms`; the code is used up either way.
    pub fn pair_telegram_chat(
        &mut self,
        code: &str,
        max_age_ms: Millis,
    ) -> Result<Option<PairedChat>, StoreError> {
        let now = now_ms();
        let tx = self.conn.transaction()?;
        let found = tx
            .query_row(
                "SELECT chat_id, code, name, created_at, sent_at FROM telegram_pairings
                 WHERE code = upper(?1)",
                [code.trim()],
                pairing,
            )
            .optional()?;
        let Some(found) = found else {
            return Ok(None);
        };
        tx.execute(
            "DELETE FROM telegram_pairings WHERE chat_id = ?1",
            [found.chat_id],
        )?;
        if now - found.created_at > max_age_ms {
            tx.commit()?;
            return Ok(None);
        }
        tx.execute(
            "INSERT INTO telegram_chats(chat_id, name, paired_at) VALUES (?1, ?2, ?3)
             ON CONFLICT(chat_id) DO UPDATE SET name = excluded.name",
            params![found.chat_id, found.name, now],
        )?;
        tx.commit()?;
        self.paired_chat(found.chat_id)
    }

    /// Unpairs a chat; whether it was paired.
    pub fn unpair_telegram_chat(&mut self, chat_id: i64) -> Result<bool, StoreError> {
        let gone = self
            .conn
            .execute("DELETE FROM telegram_chats WHERE chat_id = ?1", [chat_id])?;
        Ok(gone > 0)
    }

    /// Makes `session_id` the chat's current session (and one of its sessions).
    pub fn set_chat_session(&mut self, chat_id: i64, session_id: &str) -> Result<(), StoreError> {
        let tx = self.conn.transaction()?;
        tx.execute(
            "UPDATE telegram_chats SET session_id = ?2 WHERE chat_id = ?1",
            params![chat_id, session_id],
        )?;
        tx.execute(
            "INSERT OR IGNORE INTO telegram_chat_sessions(chat_id, session_id, started_at)
             SELECT chat_id, ?2, ?3 FROM telegram_chats WHERE chat_id = ?1",
            params![chat_id, session_id, now_ms()],
        )?;
        tx.commit()?;
        Ok(())
    }

    /// The sessions chat `chat_id` started or resumed, newest first.
    pub fn chat_sessions(&self, chat_id: i64) -> Result<Vec<(String, Millis)>, StoreError> {
        let mut stmt = self.conn.prepare_cached(
            "SELECT session_id, started_at FROM telegram_chat_sessions WHERE chat_id = ?1
             ORDER BY started_at DESC, session_id",
        )?;
        let rows = stmt.query_map([chat_id], |row| Ok((row.get(0)?, row.get(1)?)))?;
        Ok(rows.collect::<Result<_, _>>()?)
    }

    pub fn telegram_pairing(&self, chat_id: i64) -> Result<Option<Pairing>, StoreError> {
        let mut stmt = self.conn.prepare_cached(
            "SELECT chat_id, code, name, created_at, sent_at FROM telegram_pairings
             WHERE chat_id = ?1",
        )?;
        Ok(stmt.query_row([chat_id], pairing).optional()?)
    }

    /// Stores a chat's code (replacing an older one), first dropping codes created before
    /// `expired_before`; when `limit` codes still wait, the oldest gives way, so chats that
    /// never pair cannot keep a new one from getting its code.
    pub fn put_telegram_pairing(
        &mut self,
        pairing: &Pairing,
        expired_before: Millis,
        limit: usize,
    ) -> Result<(), StoreError> {
        let tx = self.conn.transaction()?;
        tx.execute(
            "DELETE FROM telegram_pairings WHERE created_at < ?1 OR chat_id = ?2",
            params![expired_before, pairing.chat_id],
        )?;
        let room = i64::try_from(limit.saturating_sub(1)).unwrap_or(i64::MAX);
        tx.execute(
            "DELETE FROM telegram_pairings WHERE chat_id NOT IN
                 (SELECT chat_id FROM telegram_pairings ORDER BY created_at DESC LIMIT ?1)",
            [room],
        )?;
        tx.execute(
            "INSERT INTO telegram_pairings(chat_id, code, name, created_at, sent_at)
             VALUES (?1, ?2, ?3, ?4, ?5)",
            params![
                pairing.chat_id,
                pairing.code,
                pairing.name,
                pairing.created_at,
                pairing.sent_at
            ],
        )?;
        tx.commit()?;
        Ok(())
    }
}
