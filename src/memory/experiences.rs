//! Experiences: short durable facts and lessons rendered into the system prompt. Scoped
//! globally or to one project, de-duplicated on normalized text, and versioned by a counter
//! (bumped by triggers) so the agent re-renders its prompt only after a change.

use rusqlite::{OptionalExtension, Row, params};

use super::db::{Db, from_sql_int, now_ms};
use super::error::StoreError;
use super::schema::EXPERIENCES_VERSION_KEY;
use super::types::{Experience, Scope};

/// How the `scope` column spells the global scope; projects are stored as their path.
const GLOBAL: &str = "global";

fn scope_key(scope: &Scope) -> &str {
    match scope {
        Scope::Global => GLOBAL,
        Scope::Project(path) => path,
    }
}

fn parse_scope(key: String) -> Scope {
    if key == GLOBAL {
        Scope::Global
    } else {
        Scope::Project(key)
    }
}

/// The text two experiences are compared on: trimmed, case-folded, whitespace collapsed.
pub fn normalized_text(text: &str) -> String {
    text.split_whitespace()
        .map(str::to_lowercase)
        .collect::<Vec<_>>()
        .join(" ")
}

fn experience_row(row: &Row<'_>) -> rusqlite::Result<Experience> {
    Ok(Experience {
        id: row.get(0)?,
        text: row.get(1)?,
        scope: parse_scope(row.get(2)?),
        created_at: row.get(3)?,
        source: row.get(4)?,
    })
}

impl Db {
    /// Stores an experience unless the same text is already known in this scope (or
    /// globally); returns its id and whether it was new. A new global experience replaces
    /// project copies of the same text.
    pub fn remember(
        &mut self,
        text: &str,
        scope: &Scope,
        source: &str,
    ) -> Result<(i64, bool), StoreError> {
        let text = text.trim();
        let normalized = normalized_text(text);
        if normalized.is_empty() {
            return Err(StoreError::EmptyExperience);
        }
        let scope = scope_key(scope);
        let tx = self.conn.transaction()?;
        let existing: Option<i64> = tx
            .prepare_cached(
                "SELECT id FROM experiences WHERE normalized = ?1 AND scope IN (?2, ?3)
                 ORDER BY scope = ?3 DESC, id LIMIT 1",
            )?
            .query_row(params![normalized, scope, GLOBAL], |row| row.get(0))
            .optional()?;
        if let Some(id) = existing {
            return Ok((id, false));
        }
        if scope == GLOBAL {
            tx.prepare_cached("DELETE FROM experiences WHERE normalized = ?1")?
                .execute([&normalized])?;
        }
        let id = tx
            .prepare_cached(
                "INSERT INTO experiences(text, normalized, scope, created_at, source)
                 VALUES (?1, ?2, ?3, ?4, ?5)",
            )?
            .insert(params![text, normalized, scope, now_ms(), source])?;
        tx.commit()?;
        Ok((id, true))
    }

    /// Deletes an experience; `false` when no experience has this id.
    pub fn forget(&mut self, id: i64) -> Result<bool, StoreError> {
        let tx = self.conn.transaction()?;
        let deleted = tx
            .prepare_cached("DELETE FROM experiences WHERE id = ?1")?
            .execute([id])?;
        tx.commit()?;
        Ok(deleted > 0)
    }

    /// The text of one experience, `None` when no experience has this id.
    pub fn experience_text(&self, id: i64) -> Result<Option<String>, StoreError> {
        let mut stmt = self
            .conn
            .prepare_cached("SELECT text FROM experiences WHERE id = ?1")?;
        let mut rows = stmt.query([id])?;
        Ok(match rows.next()? {
            Some(row) => Some(row.get(0)?),
            None => None,
        })
    }

    /// The global experiences plus those of `project`, oldest first.
    pub fn experiences(&self, project: Option<&str>) -> Result<Vec<Experience>, StoreError> {
        let mut stmt = self.conn.prepare_cached(
            "SELECT id, text, scope, created_at, source FROM experiences
             WHERE scope = ?1 OR scope = ?2 ORDER BY created_at, id",
        )?;
        let rows = stmt
            .query_map(params![GLOBAL, project], experience_row)?
            .collect::<Result<Vec<_>, _>>()?;
        Ok(rows)
    }

    /// A counter that changes whenever any experience is added, changed or deleted, by this
    /// process or another one.
    pub fn experiences_version(&self) -> Result<u64, StoreError> {
        let value = self.kv_get(EXPERIENCES_VERSION_KEY)?;
        let version = value.and_then(|v| v.parse::<i64>().ok()).unwrap_or(0);
        Ok(from_sql_int(version))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    type TestResult = Result<(), Box<dyn std::error::Error>>;

    fn project(path: &str) -> Scope {
        Scope::Project(path.to_owned())
    }

    #[test]
    fn the_same_text_in_the_same_scope_is_stored_once() -> TestResult {
        let mut db = Db::open_in_memory()?;
        let (id, created) = db.remember("Use  pnpm, not npm", &project("/p"), "user")?;
        assert!(created);
        let again = db.remember("  use pnpm,\tNOT npm ", &project("/p"), "model")?;
        assert_eq!(again, (id, false));
        let elsewhere = db.remember("use pnpm, not npm", &project("/q"), "user")?;
        assert!(elsewhere.1);
        Ok(())
    }

    #[test]
    fn a_project_copy_of_a_global_experience_is_not_added() -> TestResult {
        let mut db = Db::open_in_memory()?;
        let (global, _) = db.remember("Prefer small commits", &Scope::Global, "user")?;
        let result = db.remember("prefer small commits", &project("/p"), "model")?;
        assert_eq!(result, (global, false));
        assert_eq!(db.experiences(Some("/p"))?.len(), 1);
        Ok(())
    }

    #[test]
    fn a_new_global_experience_replaces_project_copies() -> TestResult {
        let mut db = Db::open_in_memory()?;
        db.remember("Run tests with --release", &project("/p"), "user")?;
        let (global, created) = db.remember("run tests with --release", &Scope::Global, "user")?;
        assert!(created);
        let listed = db.experiences(Some("/p"))?;
        assert_eq!(listed.len(), 1);
        assert_eq!((listed[0].id, &listed[0].scope), (global, &Scope::Global));
        Ok(())
    }

    #[test]
    fn listing_shows_global_and_own_project_oldest_first() -> TestResult {
        let mut db = Db::open_in_memory()?;
        db.remember("first global", &Scope::Global, "user")?;
        db.remember("for p", &project("/p"), "turn_report")?;
        db.remember("for q", &project("/q"), "user")?;
        db.remember("second global", &Scope::Global, "compaction")?;
        let texts = |list: Vec<Experience>| list.into_iter().map(|e| e.text).collect::<Vec<_>>();
        assert_eq!(
            texts(db.experiences(Some("/p"))?),
            vec!["first global", "for p", "second global"]
        );
        assert_eq!(
            texts(db.experiences(None)?),
            vec!["first global", "second global"]
        );
        let listed = db.experiences(Some("/p"))?;
        assert_eq!(listed[1].scope, project("/p"));
        assert_eq!(listed[1].source, "turn_report");
        Ok(())
    }

    #[test]
    fn forget_removes_once_and_empty_text_is_refused() -> TestResult {
        let mut db = Db::open_in_memory()?;
        let (id, _) = db.remember("temporary", &Scope::Global, "user")?;
        assert!(db.forget(id)?);
        assert!(!db.forget(id)?);
        assert!(db.experiences(None)?.is_empty());
        let err = db.remember(" \n\t", &Scope::Global, "user");
        assert!(matches!(err, Err(StoreError::EmptyExperience)));
        Ok(())
    }

    #[test]
    fn the_version_changes_only_when_experiences_change() -> TestResult {
        let mut db = Db::open_in_memory()?;
        let start = db.experiences_version()?;
        let (id, _) = db.remember("a fact", &Scope::Global, "user")?;
        let added = db.experiences_version()?;
        assert!(added > start);
        db.remember("A  fact", &Scope::Global, "user")?;
        db.experiences(None)?;
        assert_eq!(db.experiences_version()?, added);
        db.forget(id)?;
        assert!(db.experiences_version()? > added);
        Ok(())
    }
}
