//! Skills' stats: who wrote each skill and where, how often it was loaded, how the turns that
//! loaded it ended, and the pin and stale marks. The skills themselves are folders on disk
//! (found by the skills layer above); a row exists once a skill was written by the agent or loaded. A full-text
//! index of names and descriptions, refreshed from disk, finds the skills closest to a new
//! one before it is written.

use std::collections::HashMap;

use rusqlite::types::{FromSqlError, FromSqlResult, ValueRef};
use rusqlite::{Row, TransactionBehavior, params};
use serde::Serialize;

use super::db::{Db, from_sql_int, now_ms, to_sql_int};
use super::error::StoreError;
use super::fts_query::{query_terms, quote_terms};
use super::types::Millis;

/// Failed turns in a row after which a learned skill is suspect.
const SUSPECT_STREAK: i64 = 2;

/// Who wrote a skill.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum SkillOrigin {
    /// A person (also any skill found on disk that mnemo did not write).
    Person,
    /// The agent, after work that went well.
    Learned,
    /// Brought in from elsewhere.
    Imported,
}

impl SkillOrigin {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Person => "person",
            Self::Learned => "learned",
            Self::Imported => "imported",
        }
    }

    fn from_stored(text: &str) -> Option<Self> {
        match text {
            "person" => Some(Self::Person),
            "learned" => Some(Self::Learned),
            "imported" => Some(Self::Imported),
            _ => None,
        }
    }
}

/// The stats of one skill.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SkillStats {
    pub name: String,
    pub origin: SkillOrigin,
    /// The session and turn that wrote or last patched it (learned skills).
    pub session_id: Option<String>,
    pub turn: Option<u64>,
    pub loads: u64,
    /// Turns that loaded it and ended well, or not.
    pub successes: u64,
    pub failures: u64,
    pub last_used: Option<Millis>,
    pub created_at: Millis,
    pub pinned: bool,
    /// The last two turns that loaded it failed (learned skills only).
    pub suspect: bool,
    /// Unused for long: left out of the catalogue until loaded again.
    pub stale: bool,
}

impl SkillStats {
    /// The stats of a skill never loaded.
    pub fn new(name: impl Into<String>, origin: SkillOrigin, created_at: Millis) -> Self {
        Self {
            name: name.into(),
            origin,
            session_id: None,
            turn: None,
            loads: 0,
            successes: 0,
            failures: 0,
            last_used: None,
            created_at,
            pinned: false,
            suspect: false,
            stale: false,
        }
    }
}

impl rusqlite::types::FromSql for SkillOrigin {
    fn column_result(value: ValueRef<'_>) -> FromSqlResult<Self> {
        let text = value.as_str()?;
        Self::from_stored(text)
            .ok_or_else(|| FromSqlError::Other(format!("unknown skill origin `{text}`").into()))
    }
}

fn stats_row(row: &Row<'_>) -> rusqlite::Result<SkillStats> {
    let origin: SkillOrigin = row.get(1)?;
    let streak: i64 = row.get(10)?;
    Ok(SkillStats {
        name: row.get(0)?,
        origin,
        session_id: row.get(2)?,
        turn: row.get::<_, Option<i64>>(3)?.map(from_sql_int),
        loads: from_sql_int(row.get(4)?),
        successes: from_sql_int(row.get(5)?),
        failures: from_sql_int(row.get(6)?),
        last_used: row.get(7)?,
        created_at: row.get(8)?,
        pinned: row.get(9)?,
        suspect: origin == SkillOrigin::Learned && streak >= SUSPECT_STREAK,
        stale: row.get(11)?,
    })
}

impl Db {
    /// Records that `name` was written (new) or patched: a new row gets `origin`; a patched
    /// skill keeps its origin, takes the new session and turn, and starts a new failure
    /// streak and freshness (the change answers both).
    pub fn skill_written(
        &mut self,
        name: &str,
        origin: SkillOrigin,
        session_id: Option<&str>,
        turn: Option<u64>,
    ) -> Result<(), StoreError> {
        self.conn
            .prepare_cached(
                "INSERT INTO skill_stats(name, origin, session_id, turn, created_at)
                 VALUES (?1, ?2, ?3, ?4, ?5)
                 ON CONFLICT(name) DO UPDATE SET session_id = excluded.session_id,
                     turn = excluded.turn, failure_streak = 0, stale = 0",
            )?
            .execute(params![
                name,
                origin.as_str(),
                session_id,
                turn.map(to_sql_int),
                now_ms()
            ])?;
        Ok(())
    }

    /// loads += 1, last_used = now, no longer stale; an unknown skill gets a row as a
    /// person's.
    pub fn skill_loaded(&mut self, name: &str) -> Result<(), StoreError> {
        let now = now_ms();
        self.conn
            .prepare_cached(
                "INSERT INTO skill_stats(name, origin, created_at, loads, last_used)
                 VALUES (?1, ?2, ?3, 1, ?3)
                 ON CONFLICT(name) DO UPDATE SET loads = loads + 1, last_used = ?3, stale = 0",
            )?
            .execute(params![name, SkillOrigin::Person.as_str(), now])?;
        Ok(())
    }

    /// A turn that loaded `name` ended, well (`success`) or not.
    pub fn skill_outcome(&mut self, name: &str, success: bool) -> Result<(), StoreError> {
        let changed = self
            .conn
            .prepare_cached(
                "UPDATE skill_stats SET
                     successes = successes + ?2,
                     failures = failures + (1 - ?2),
                     failure_streak = CASE WHEN ?2 THEN 0 ELSE failure_streak + 1 END
                 WHERE name = ?1",
            )?
            .execute(params![name, success])?;
        match changed {
            0 => Err(StoreError::NotFound {
                what: "skill",
                key: name.to_owned(),
            }),
            _ => Ok(()),
        }
    }

    /// Every skill's stats, by name.
    pub fn skill_stats(&self) -> Result<Vec<SkillStats>, StoreError> {
        let mut stmt = self.conn.prepare_cached(
            "SELECT name, origin, session_id, turn, loads, successes, failures, last_used,
                 created_at, pinned, failure_streak, stale
             FROM skill_stats ORDER BY name",
        )?;
        let stats = stmt
            .query_map([], stats_row)?
            .collect::<Result<Vec<_>, _>>()?;
        Ok(stats)
    }

    /// Pins (never ages) or unpins `name`; false when it has no stats yet.
    pub fn pin_skill(&mut self, name: &str, pinned: bool) -> Result<bool, StoreError> {
        let changed = self
            .conn
            .prepare_cached(
                "UPDATE skill_stats SET pinned = ?2, stale = stale AND NOT ?2 WHERE name = ?1",
            )?
            .execute(params![name, pinned])?;
        Ok(changed > 0)
    }

    /// Drops the stats and the index entry of `name` (its folder was archived or removed).
    pub fn forget_skill(&mut self, name: &str) -> Result<(), StoreError> {
        let tx = self.conn.transaction()?;
        tx.prepare_cached("DELETE FROM skill_stats WHERE name = ?1")?
            .execute([name])?;
        tx.prepare_cached("DELETE FROM skills_fts WHERE name = ?1")?
            .execute([name])?;
        tx.commit()?;
        Ok(())
    }

    /// Marks `name` stale (left out of the catalogue) or fresh; nothing for a skill without
    /// stats.
    pub fn set_skill_stale(&mut self, name: &str, stale: bool) -> Result<(), StoreError> {
        self.conn
            .prepare_cached("UPDATE skill_stats SET stale = ?2 WHERE name = ?1")?
            .execute(params![name, stale])?;
        Ok(())
    }

    /// Makes the full-text index hold exactly `skills` (name, description): entries of skills
    /// gone or changed are replaced, the others left alone.
    pub fn index_skills(&mut self, skills: &[(String, String)]) -> Result<(), StoreError> {
        let tx = self
            .conn
            .transaction_with_behavior(TransactionBehavior::Immediate)?;
        let indexed: HashMap<String, (i64, String)> = tx
            .prepare_cached("SELECT rowid, name, description FROM skills_fts")?
            .query_map([], |row| Ok((row.get(1)?, (row.get(0)?, row.get(2)?))))?
            .collect::<Result<_, _>>()?;
        let wanted: HashMap<&str, &str> = skills
            .iter()
            .map(|(name, description)| (name.as_str(), description.as_str()))
            .collect();
        for (name, (rowid, description)) in &indexed {
            if wanted.get(name.as_str()) != Some(&description.as_str()) {
                tx.prepare_cached("DELETE FROM skills_fts WHERE rowid = ?1")?
                    .execute([rowid])?;
            }
        }
        for (name, description) in wanted {
            let current = indexed.get(name).map(|(_, text)| text.as_str());
            if current != Some(description) {
                tx.prepare_cached("INSERT INTO skills_fts(name, description) VALUES (?1, ?2)")?
                    .execute([name, description])?;
            }
        }
        tx.commit()?;
        Ok(())
    }

    /// The names of the indexed skills closest to `text` (bm25, the name weighing most),
    /// best first. Any text is a valid query; one without words finds nothing.
    pub fn similar_skills(&self, text: &str, limit: usize) -> Result<Vec<String>, StoreError> {
        let terms = query_terms(text);
        if terms.is_empty() || limit == 0 {
            return Ok(Vec::new());
        }
        let mut stmt = self.conn.prepare_cached(
            "SELECT name FROM skills_fts WHERE skills_fts MATCH ?1 ORDER BY rank, name LIMIT ?2",
        )?;
        let names = stmt
            .query_map(
                params![quote_terms(&terms), to_sql_int(limit as u64)],
                |row| row.get(0),
            )?
            .collect::<Result<Vec<String>, _>>()?;
        Ok(names)
    }
}

#[cfg(test)]
#[path = "skills_tests.rs"]
mod tests;
