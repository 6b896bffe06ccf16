//! The event journal's table: every numbered event a session host handed out, as JSON, so a
//! front end can go on from a sequence number older than the host keeps in memory, and a
//! resumed session's numbering continues where it stopped. Written in batches by the host's
//! journal writer; each session keeps only its latest events. A row holds one event, or a run
//! of events numbered `seq..=last_seq` that the journal writer stored together (what the row's
//! JSON means is the writer's business).

use rusqlite::params;

use super::db::Db;
use super::error::StoreError;

/// One journal row: its session, the sequence numbers of the events it holds (`seq` through
/// `last_seq`, the same for one event) and their JSON.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JournalRow {
    pub session: String,
    pub seq: u64,
    pub last_seq: u64,
    pub event: String,
}

/// The most events one row may hold: a replay from the middle of a run finds its row among
/// the rows starting at most this far before.
pub const MAX_RUN: u64 = 1_000;

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
                "INSERT OR REPLACE INTO session_events(session_id, seq, last_seq, event)
                 VALUES (?1, ?2, ?3, ?4)",
            )?;
            for row in rows {
                let last = (row.last_seq > row.seq).then(|| to_sql(row.last_seq));
                insert.execute(params![row.session, to_sql(row.seq), last, row.event])?;
            }
            // A run that reaches past the cut is kept whole.
            let mut delete = tx.prepare_cached(
                "DELETE FROM session_events
                 WHERE session_id = ?1 AND coalesce(last_seq, seq) <= ?2",
            )?;
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

    /// The rows of session `session` holding events after `after` up to `through`, oldest
    /// first, as (first sequence number, last sequence number, JSON).
    pub fn session_events(
        &self,
        session: &str,
        after: u64,
        through: u64,
    ) -> Result<Vec<(u64, u64, String)>, StoreError> {
        let mut stmt = self.conn.prepare_cached(
            "SELECT seq, coalesce(last_seq, seq), event FROM session_events
             WHERE session_id = ?1 AND seq > ?2 - ?4 AND seq <= ?3
               AND coalesce(last_seq, seq) > ?2
             ORDER BY seq",
        )?;
        let range = params![session, to_sql(after), to_sql(through), to_sql(MAX_RUN)];
        let rows = stmt.query_map(range, |row| {
            Ok((
                row.get::<_, i64>(0)?,
                row.get::<_, i64>(1)?,
                row.get::<_, String>(2)?,
            ))
        })?;
        let mut events = Vec::new();
        for row in rows {
            let (seq, last, event) = row?;
            let number = |n: i64| u64::try_from(n).unwrap_or(0);
            events.push((number(seq), number(last), event));
        }
        Ok(events)
    }

    /// The sequence number of session `session`'s last journaled event (0 when none).
    pub fn last_session_event(&self, session: &str) -> Result<u64, StoreError> {
        let mut stmt = self.conn.prepare_cached(
            "SELECT max(coalesce(last_seq, seq)) FROM session_events WHERE session_id = ?1",
        )?;
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
            last_seq: seq,
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
            vec![(4, 4, "{\"n\":4}".to_string())]
        );
        assert_eq!(db.last_session_event("a")?, 5);
        assert_eq!(db.last_session_event("b")?, 1);
        assert_eq!(db.last_session_event("none")?, 0);
        Ok(())
    }

    #[test]
    fn a_run_is_found_from_any_event_in_it_and_pruned_only_when_all_of_it_is_old() -> TestResult {
        let mut db = Db::open_in_memory()?;
        let run = JournalRow {
            session: "a".into(),
            seq: 2,
            last_seq: 6,
            event: "run".into(),
        };
        db.append_session_events(&[row("a", 1), run, row("a", 7)], &[])?;
        assert_eq!(db.last_session_event("a")?, 7);
        let from_middle: Vec<(u64, u64)> = db
            .session_events("a", 4, 10)?
            .iter()
            .map(|e| (e.0, e.1))
            .collect();
        assert_eq!(from_middle, vec![(2, 6), (7, 7)]);
        assert!(db.session_events("a", 7, 10)?.is_empty());
        db.append_session_events(&[], &[("a".into(), 4)])?;
        let kept: Vec<u64> = db.session_events("a", 0, 10)?.iter().map(|e| e.0).collect();
        assert_eq!(kept, vec![2, 7], "the run reaching past the cut stays");
        Ok(())
    }
}
