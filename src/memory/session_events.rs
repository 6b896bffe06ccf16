//! The event journal's table: every numbered event a session host handed out, as JSON, so a
//! front end can go on from a sequence number older than the host keeps in memory, and a
//! resumed session's numbering continues where it stopped. Written in batches by the host's
//! journal writer; each session keeps only its latest events.

use rusqlite::params;

use super::db::Db;
use super::error::StoreError;

/// One journaled event: its session, its sequence number and the event as JSON.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JournalRow {
    pub session: String,
    pub seq: u64,
    pub event: String,
}

fn to_sql(seq: u64) -> i64 {
    i64::try_from(seq).unwrap_or(i64::MAX)
}

impl Db {
    /// Writes `rows` in one transaction, then drops each listed session's events at or below
    /// the paired sequence number. A row already there is replaced (a session's numbering
    /// only repeats when its journal could not be read at resume; the newer event wins).
    pub fn append_session_events(
        &mut self,
        rows: &[JournalRow],
        prune: &[(String, u64)],
    ) -> Result<(), StoreError> {
        let tx = self.conn.transaction()?;
        {
            let mut insert = tx.prepare_cached(
                "INSERT OR REPLACE INTO session_events(session_id, seq, event) VALUES (?1, ?2, ?3)",
            )?;
            for row in rows {
                insert.execute(params![row.session, to_sql(row.seq), row.event])?;
            }
            let mut delete = tx
                .prepare_cached("DELETE FROM session_events WHERE session_id = ?1 AND seq <= ?2")?;
            for (session, through) in prune {
                delete.execute(params![session, to_sql(*through)])?;
            }
        }
        tx.commit()?;
        Ok(())
    }

    /// Drops the events of those of `sessions` that were never stored (ended without a
    /// message): nothing can resume them, and no session row's deletion would remove them.
    pub fn forget_unstored_session_events(
        &mut self,
        sessions: &[String],
    ) -> Result<(), StoreError> {
        let mut delete = self.conn.prepare_cached(
            "DELETE FROM session_events WHERE session_id = ?1
             AND NOT EXISTS (SELECT 1 FROM sessions WHERE id = ?1)",
        )?;
        for session in sessions {
            delete.execute([session])?;
        }
        Ok(())
    }

    /// Session `session`'s journaled events after `after` up to `through`, oldest first.
    pub fn session_events(
        &self,
        session: &str,
        after: u64,
        through: u64,
    ) -> Result<Vec<(u64, String)>, StoreError> {
        let mut stmt = self.conn.prepare_cached(
            "SELECT seq, event FROM session_events
             WHERE session_id = ?1 AND seq > ?2 AND seq <= ?3 ORDER BY seq",
        )?;
        let rows = stmt.query_map(params![session, to_sql(after), to_sql(through)], |row| {
            Ok((row.get::<_, i64>(0)?, row.get::<_, String>(1)?))
        })?;
        let mut events = Vec::new();
        for row in rows {
            let (seq, event) = row?;
            events.push((u64::try_from(seq).unwrap_or(0), event));
        }
        Ok(events)
    }

    /// The sequence number of session `session`'s last journaled event (0 when none).
    pub fn last_session_event(&self, session: &str) -> Result<u64, StoreError> {
        let mut stmt = self
            .conn
            .prepare_cached("SELECT max(seq) FROM session_events WHERE session_id = ?1")?;
        let last: Option<i64> = stmt.query_row([session], |row| row.get(0))?;
        Ok(last.map_or(0, |seq| u64::try_from(seq).unwrap_or(0)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    type TestResult = Result<(), Box<dyn std::error::Error>>;

    fn row(session: &str, seq: u64) -> JournalRow {
        JournalRow {
            session: session.into(),
            seq,
            event: format!("{{\"n\":{seq}}}"),
        }
    }

    #[test]
    fn events_come_back_in_order_per_session_and_pruning_drops_the_oldest() -> TestResult {
        let mut db = Db::open_in_memory()?;
        let rows: Vec<JournalRow> = (1..=5).map(|seq| row("a", seq)).collect();
        db.append_session_events(&rows, &[])?;
        db.append_session_events(&[row("b", 1)], &[("a".into(), 2)])?;
        let kept: Vec<u64> = db.session_events("a", 0, 10)?.iter().map(|e| e.0).collect();
        assert_eq!(kept, vec![3, 4, 5]);
        assert_eq!(
            db.session_events("a", 3, 4)?,
            vec![(4, "{\"n\":4}".to_string())]
        );
        assert_eq!(db.last_session_event("a")?, 5);
        assert_eq!(db.last_session_event("b")?, 1);
        assert_eq!(db.last_session_event("none")?, 0);
        Ok(())
    }
}
