//! Schedules the agent made and the run records of `mnemo serve`'s jobs. A job is named by a
//! key (`schedule:12`, `heartbeat:/path/to/file.md`); its record says when it last started
//! and, while a run goes on, since when and in which process.

use rusqlite::{Row, params};

use super::db::{Db, now_ms};
use super::error::StoreError;
use super::types::Millis;
use crate::protocol::ApprovalMode;
use crate::sandbox::SandboxPolicy;

/// When a stored schedule runs. The jobs module turns it into a rule.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StoredWhen {
    /// A cron line, read on the machine's clock.
    Cron(String),
    /// Every so many seconds, the first time at `first`.
    Every { secs: u64, first: Millis },
    /// Once, at this time.
    Once(Millis),
}

/// What the session that made a schedule was allowed; its runs never get more. The default
/// is the least (what schedules stored before this was kept get).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MakerRights {
    pub approval: ApprovalMode,
    pub sandbox: SandboxPolicy,
    /// Whether its sandboxed commands reached the network.
    pub network: bool,
    /// Whether the workspace's config file was trusted (or there was none to trust).
    pub trusted: bool,
}

impl Default for MakerRights {
    fn default() -> Self {
        Self {
            approval: ApprovalMode::ReadOnly,
            sandbox: SandboxPolicy::ReadOnly,
            network: false,
            trusted: false,
        }
    }
}

fn policy_named(label: &str) -> SandboxPolicy {
    [SandboxPolicy::WorkspaceWrite, SandboxPolicy::FullAccess]
        .into_iter()
        .find(|p| p.label() == label)
        .unwrap_or(SandboxPolicy::ReadOnly)
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewSchedule {
    /// The session that made it.
    pub session_id: Option<String>,
    pub workspace: String,
    pub when: StoredWhen,
    pub prompt: String,
    /// Channels the reply goes to besides the log (`telegram`, `telegram:CHAT_ID`).
    pub deliver: Vec<String>,
    pub rights: MakerRights,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScheduleRow {
    pub id: i64,
    pub created_at: Millis,
    pub session_id: Option<String>,
    pub workspace: String,
    pub when: StoredWhen,
    pub prompt: String,
    /// Channels the reply goes to besides the log (`telegram`, `telegram:CHAT_ID`).
    pub deliver: Vec<String>,
    pub rights: MakerRights,
}

/// A job's run record.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct JobRun {
    pub job: String,
    pub last_run: Option<Millis>,
    /// How the last finished run ended (`completed`, `failed`, …).
    pub last_status: Option<String>,
    pub last_session: Option<String>,
    /// Set while a run goes on: since when, and the process running it.
    pub running: Option<(Millis, u32)>,
}

/// How many notices a session keeps waiting for a front end.
pub const NOTICES_KEPT: i64 = 20;

/// The key of a stored schedule's run record.
pub fn schedule_job_key(id: i64) -> String {
    format!("schedule:{id}")
}

fn schedule_row(row: &Row<'_>) -> rusqlite::Result<ScheduleRow> {
    let cron: Option<String> = row.get(4)?;
    let every: Option<i64> = row.get(5)?;
    let at: Option<Millis> = row.get(6)?;
    let when = match (cron, every, at) {
        (Some(line), _, _) => StoredWhen::Cron(line),
        (None, Some(secs), first) => StoredWhen::Every {
            secs: u64::try_from(secs).unwrap_or(0),
            first: first.unwrap_or(0),
        },
        (None, None, at) => StoredWhen::Once(at.unwrap_or(0)),
    };
    Ok(ScheduleRow {
        id: row.get(0)?,
        created_at: row.get(1)?,
        session_id: row.get(2)?,
        workspace: row.get(3)?,
        when,
        prompt: row.get(7)?,
        deliver: row
            .get::<_, String>(8)?
            .split(',')
            .filter(|name| !name.is_empty())
            .map(str::to_string)
            .collect(),
        rights: MakerRights {
            approval: ApprovalMode::parse(&row.get::<_, String>(9)?)
                .unwrap_or(ApprovalMode::ReadOnly),
            sandbox: policy_named(&row.get::<_, String>(10)?),
            network: row.get(11)?,
            trusted: row.get(12)?,
        },
    })
}

fn job_run_row(row: &Row<'_>) -> rusqlite::Result<JobRun> {
    let since: Option<Millis> = row.get(4)?;
    let pid: Option<i64> = row.get(5)?;
    Ok(JobRun {
        job: row.get(0)?,
        last_run: row.get(1)?,
        last_status: row.get(2)?,
        last_session: row.get(3)?,
        running: since.zip(pid.and_then(|p| u32::try_from(p).ok())),
    })
}

impl Db {
    pub fn create_schedule(&mut self, new: &NewSchedule) -> Result<ScheduleRow, StoreError> {
        let (cron, every, at) = match &new.when {
            StoredWhen::Cron(line) => (Some(line.as_str()), None, None),
            StoredWhen::Every { secs, first } => (
                None,
                Some(i64::try_from(*secs).unwrap_or(i64::MAX)),
                Some(*first),
            ),
            StoredWhen::Once(at) => (None, None, Some(*at)),
        };
        let id = self
            .conn
            .prepare_cached(
                "INSERT INTO schedules(created_at, session_id, workspace, cron, every_secs, at,
                 prompt, deliver, approval, sandbox, network, trusted)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12) RETURNING id",
            )?
            .query_row(
                params![
                    now_ms(),
                    new.session_id,
                    new.workspace,
                    cron,
                    every,
                    at,
                    new.prompt,
                    new.deliver.join(","),
                    new.rights.approval.label(),
                    new.rights.sandbox.label(),
                    new.rights.network,
                    new.rights.trusted
                ],
                |row| row.get(0),
            )?;
        self.schedule(id)
    }

    pub fn schedule(&self, id: i64) -> Result<ScheduleRow, StoreError> {
        let mut stmt = self.conn.prepare_cached(
            "SELECT id, created_at, session_id, workspace, cron, every_secs, at, prompt, deliver,
             approval, sandbox, network, trusted FROM schedules WHERE id = ?1",
        )?;
        stmt.query_row([id], schedule_row).map_err(|e| match e {
            rusqlite::Error::QueryReturnedNoRows => StoreError::NotFound {
                what: "schedule",
                key: id.to_string(),
            },
            other => other.into(),
        })
    }

    /// Every schedule, oldest first.
    pub fn list_schedules(&self) -> Result<Vec<ScheduleRow>, StoreError> {
        let mut stmt = self.conn.prepare_cached(
            "SELECT id, created_at, session_id, workspace, cron, every_secs, at, prompt, deliver,
             approval, sandbox, network, trusted FROM schedules ORDER BY id",
        )?;
        let rows = stmt.query_map([], schedule_row)?;
        Ok(rows.collect::<Result<_, _>>()?)
    }

    /// The schedules of `workspace`, oldest first.
    pub fn schedules_in(&self, workspace: &str) -> Result<Vec<ScheduleRow>, StoreError> {
        let mut stmt = self.conn.prepare_cached(
            "SELECT id, created_at, session_id, workspace, cron, every_secs, at, prompt, deliver,
             approval, sandbox, network, trusted FROM schedules WHERE workspace = ?1 ORDER BY id",
        )?;
        let rows = stmt.query_map([workspace], schedule_row)?;
        Ok(rows.collect::<Result<_, _>>()?)
    }

    /// Stores `new` unless its workspace has `max` schedules already; `None` then.
    pub fn create_schedule_within(
        &mut self,
        new: &NewSchedule,
        max: u32,
    ) -> Result<Option<ScheduleRow>, StoreError> {
        let count: i64 = self
            .conn
            .prepare_cached("SELECT count(*) FROM schedules WHERE workspace = ?1")?
            .query_row([&new.workspace], |row| row.get(0))?;
        if count >= i64::from(max) {
            return Ok(None);
        }
        self.create_schedule(new).map(Some)
    }

    /// Removes a schedule with its run record; `false` when there was none.
    pub fn delete_schedule(&mut self, id: i64) -> Result<bool, StoreError> {
        let tx = self.conn.transaction()?;
        let removed = tx
            .prepare_cached("DELETE FROM schedules WHERE id = ?1")?
            .execute([id])?;
        tx.prepare_cached("DELETE FROM job_runs WHERE job = ?1")?
            .execute([schedule_job_key(id)])?;
        tx.commit()?;
        Ok(removed > 0)
    }

    /// Whether session `session` made a schedule that still exists (its results may still
    /// come back to it).
    pub fn session_has_schedules(&self, session: &str) -> Result<bool, StoreError> {
        Ok(self
            .conn
            .prepare_cached("SELECT EXISTS (SELECT 1 FROM schedules WHERE session_id = ?1)")?
            .query_row([session], |row| row.get(0))?)
    }

    /// Every job's run record.
    pub fn job_runs(&self) -> Result<Vec<JobRun>, StoreError> {
        let mut stmt = self.conn.prepare_cached(
            "SELECT job, last_run, last_status, last_session, running_since, running_pid
             FROM job_runs ORDER BY job",
        )?;
        let rows = stmt.query_map([], job_run_row)?;
        Ok(rows.collect::<Result<_, _>>()?)
    }

    /// Claims `job`'s run at `at` for process `pid`, if its record is still as the caller saw
    /// it (`seen`: last run and running pid) and, for a schedule (`schedule`), the schedule
    /// still exists. `false` when another daemon on the same database took it first (or the
    /// one-shot schedule already ran and is gone): then it must not run here.
    pub fn claim_job_run(
        &mut self,
        job: &str,
        schedule: Option<i64>,
        seen: (Option<Millis>, Option<u32>),
        at: Millis,
        pid: u32,
    ) -> Result<bool, StoreError> {
        let tx = self
            .conn
            .transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)?;
        tx.prepare_cached(
            "INSERT OR IGNORE INTO job_runs(job) SELECT ?1
             WHERE ?2 IS NULL OR EXISTS (SELECT 1 FROM schedules WHERE id = ?2)",
        )?
        .execute(params![job, schedule])?;
        let claimed = tx
            .prepare_cached(
                "UPDATE job_runs SET last_run = ?2, running_since = ?2, running_pid = ?3
                 WHERE job = ?1 AND last_run IS ?4 AND running_pid IS ?5
                 AND (?6 IS NULL OR EXISTS (SELECT 1 FROM schedules WHERE id = ?6))",
            )?
            .execute(params![
                job,
                at,
                i64::from(pid),
                seen.0,
                seen.1.map(i64::from),
                schedule
            ])?;
        tx.commit()?;
        Ok(claimed == 1)
    }

    /// Records how `job`'s run ended and that it no longer runs; the run's session (if it was
    /// stored) is marked as one of the job's runs.
    pub fn job_finished(
        &mut self,
        job: &str,
        status: &str,
        session: Option<&str>,
    ) -> Result<(), StoreError> {
        let tx = self.conn.transaction()?;
        tx.prepare_cached(
            "UPDATE job_runs SET last_status = ?2, last_session = ?3, running_since = NULL,
             running_pid = NULL WHERE job = ?1",
        )?
        .execute(params![job, status, session])?;
        tx.prepare_cached(
            "INSERT OR IGNORE INTO job_run_sessions(session_id, job, ended_at)
             SELECT id, ?2, ?3 FROM sessions WHERE id = ?1",
        )?
        .execute(params![session, job, super::db::now_ms()])?;
        tx.commit()?;
        Ok(())
    }

    /// Keeps `title` and `body` for session `session` until a front end of it shows them; a
    /// session keeps its newest `NOTICES_KEPT`. Nothing is kept for a session not stored.
    pub fn add_session_notice(
        &mut self,
        session: &str,
        title: &str,
        body: &str,
    ) -> Result<(), StoreError> {
        let tx = self.conn.transaction()?;
        tx.prepare_cached(
            "INSERT INTO session_notices(session_id, created_at, title, body)
             SELECT id, ?2, ?3, ?4 FROM sessions WHERE id = ?1",
        )?
        .execute(params![session, super::db::now_ms(), title, body])?;
        tx.prepare_cached(
            "DELETE FROM session_notices WHERE session_id = ?1 AND id NOT IN
             (SELECT id FROM session_notices WHERE session_id = ?1 ORDER BY id DESC LIMIT ?2)",
        )?
        .execute(params![session, NOTICES_KEPT])?;
        tx.commit()?;
        Ok(())
    }

    /// The notices waiting for session `session`, oldest first, as (title, body); they are
    /// gone from the store once taken.
    pub fn take_session_notices(
        &mut self,
        session: &str,
    ) -> Result<Vec<(String, String)>, StoreError> {
        let tx = self.conn.transaction()?;
        let taken = tx
            .prepare_cached(
                "SELECT title, body FROM session_notices WHERE session_id = ?1 ORDER BY id",
            )?
            .query_map([session], |row| Ok((row.get(0)?, row.get(1)?)))?
            .collect::<Result<Vec<_>, _>>()?;
        tx.prepare_cached("DELETE FROM session_notices WHERE session_id = ?1")?
            .execute([session])?;
        tx.commit()?;
        Ok(taken)
    }

    /// Deletes the stored runs of `job` but the newest `keep`, with their messages and
    /// everything indexed from them; how many went. A run a person went on with after it
    /// ended (a message since) is theirs now: kept, and listed with their sessions.
    pub fn prune_job_runs(&mut self, job: &str, keep: usize) -> Result<usize, StoreError> {
        self.conn
            .prepare_cached(
                "DELETE FROM job_run_sessions WHERE job = ?1 AND ended_at <
                 (SELECT s.updated_at FROM sessions s WHERE s.id = session_id)",
            )?
            .execute([job])?;
        let old: Vec<String> = self
            .conn
            .prepare_cached(
                "SELECT session_id FROM job_run_sessions WHERE job = ?1
                 ORDER BY id DESC LIMIT -1 OFFSET ?2",
            )?
            .query_map(
                params![job, i64::try_from(keep).unwrap_or(i64::MAX)],
                |row| row.get(0),
            )?
            .collect::<Result<_, _>>()?;
        for id in &old {
            self.delete_session(id)?;
        }
        Ok(old.len())
    }
}

#[cfg(test)]
#[path = "schedules_tests.rs"]
mod tests;
