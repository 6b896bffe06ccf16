//! What the scheduler knows of its jobs and where it writes down their runs. `StoreBook` is the
//! daemon's: heartbeat files and stored schedules, with run records in SQLite; the scheduler
//! asks it again on every wake, so an edited file or a new schedule is seen then.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, PoisonError};

use chrono::{DateTime, Utc};
use futures_util::future::BoxFuture;

use super::delivery::Log;
use super::heartbeat::{self, HeartbeatError, Heartbeats};
use super::job::{Job, Record, Source};
use crate::config::Dirs;
use crate::memory::Store;
use crate::memory::schedules::JobRun;

/// The scheduler's view of its jobs.
pub trait JobBook: Send + Sync + 'static {
    /// Every job as it stands now, with its run record; `now` is when the scheduler asks.
    fn load(&self, now: DateTime<Utc>) -> BoxFuture<'_, Vec<(Job, Record)>>;
    /// `job` starts at `at` in this process, if its record is still `seen` (no other daemon on
    /// the same database took the run meanwhile); `false` when it must not run here.
    fn started<'a>(&'a self, job: &'a Job, seen: Record, at: DateTime<Utc>) -> BoxFuture<'a, bool>;
    /// `job`'s run ended with `status` (a word such as `reported`), in `session`.
    fn finished<'a>(
        &'a self,
        job: &'a Job,
        status: &'a str,
        session: Option<&'a str>,
    ) -> BoxFuture<'a, ()>;
}

/// Heartbeat files and stored schedules, with run records in the store.
pub struct StoreBook {
    store: Store,
    dirs: Dirs,
    /// Workspaces whose heartbeats run besides the trusted ones (if trusted themselves).
    workspaces: Vec<PathBuf>,
    log: Arc<Log>,
    /// When each heartbeat was first seen by this daemon: cron lines of heartbeats that never
    /// ran count from there, not from each reload.
    first_seen: Mutex<HashMap<String, DateTime<Utc>>>,
    /// The problems last logged, so a broken file is reported once, not on every reload.
    last_problems: Mutex<Vec<String>>,
    /// How many stored runs each job keeps.
    keep_runs: usize,
}

impl StoreBook {
    pub fn new(store: Store, dirs: Dirs, workspaces: Vec<PathBuf>, log: Arc<Log>) -> Self {
        Self {
            store,
            dirs,
            workspaces,
            log,
            first_seen: Mutex::default(),
            last_problems: Mutex::default(),
            keep_runs: usize::MAX,
        }
    }

    /// Each job keeps its newest `keep` runs; older ones are deleted when a run ends.
    pub fn keeping_runs(mut self, keep: usize) -> Self {
        self.keep_runs = keep.max(1);
        self
    }

    async fn jobs(&self, now: DateTime<Utc>) -> Vec<(Job, Record)> {
        let mut problems = Vec::new();
        let (dirs, workspaces) = (self.dirs.clone(), self.workspaces.clone());
        // Reading the files and the trust list is blocking IO, kept off the runtime's threads.
        let found = tokio::task::spawn_blocking(move || heartbeat::load(&dirs, &workspaces))
            .await
            .unwrap_or_else(|e| Heartbeats {
                errors: vec![HeartbeatError {
                    path: PathBuf::new(),
                    message: format!("reading the heartbeat files failed: {e}"),
                }],
                ..Heartbeats::default()
            });
        problems.extend(found.errors.iter().map(|e| format!("heartbeat {e}")));
        problems.extend(found.untrusted.iter().map(|w| {
            format!(
                "heartbeats of {} do not run: the workspace is not trusted (`mnemo trust` there)",
                w.display()
            )
        }));
        let mut jobs = Vec::new();
        {
            let mut seen = self
                .first_seen
                .lock()
                .unwrap_or_else(PoisonError::into_inner);
            for beat in found.found.iter().filter(|b| b.enabled) {
                jobs.push(beat.job(*seen.entry(beat.key()).or_insert(now)));
            }
        }
        let stored = self
            .store
            .call(|db| Ok((db.list_schedules()?, db.job_runs()?)))
            .await;
        let runs = match stored {
            Ok((schedules, runs)) => {
                for row in &schedules {
                    match super::schedule::job(row) {
                        Ok(job) => jobs.push(job),
                        Err(e) => problems.push(format!("schedule #{}: {e}", row.id)),
                    }
                }
                runs
            }
            Err(e) => {
                problems.push(format!("cannot read the schedules: {e}"));
                Vec::new()
            }
        };
        self.report(problems);
        let runs: HashMap<&str, &JobRun> = runs.iter().map(|r| (r.job.as_str(), r)).collect();
        jobs.into_iter()
            .map(|job| {
                let record = runs
                    .get(job.key.as_str())
                    .map_or_else(Record::default, |r| record(r));
                (job, record)
            })
            .collect()
    }

    fn report(&self, problems: Vec<String>) {
        let mut last = self
            .last_problems
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        for problem in problems.iter().filter(|p| !last.contains(p)) {
            self.log.line(problem);
        }
        *last = problems;
    }
}

fn record(run: &JobRun) -> Record {
    let time = |millis| DateTime::from_timestamp_millis(millis);
    Record {
        last_run: run.last_run.and_then(time),
        running: run
            .running
            .and_then(|(since, pid)| time(since).map(|since| (since, pid))),
    }
}

impl JobBook for StoreBook {
    fn load(&self, now: DateTime<Utc>) -> BoxFuture<'_, Vec<(Job, Record)>> {
        Box::pin(self.jobs(now))
    }

    fn started<'a>(&'a self, job: &'a Job, seen: Record, at: DateTime<Utc>) -> BoxFuture<'a, bool> {
        let key = job.key.clone();
        let pid = std::process::id();
        let schedule = match job.source {
            Source::Schedule { id, .. } => Some(id),
            Source::Heartbeat(_) => None,
        };
        let seen = (
            seen.last_run.map(|t| t.timestamp_millis()),
            seen.running.map(|(_, pid)| pid),
        );
        Box::pin(async move {
            let at = at.timestamp_millis();
            match self
                .store
                .call(move |db| db.claim_job_run(&key, schedule, seen, at, pid))
                .await
            {
                Ok(claimed) => claimed,
                Err(e) => {
                    self.log
                        .line(&format!("cannot claim the run of {}: {e}", job.label));
                    false
                }
            }
        })
    }

    fn finished<'a>(
        &'a self,
        job: &'a Job,
        status: &'a str,
        session: Option<&'a str>,
    ) -> BoxFuture<'a, ()> {
        let (key, status) = (job.key.clone(), status.to_string());
        let session = session.map(str::to_string);
        let one_shot = match job.source {
            Source::Schedule { id, one_shot: true } => Some(id),
            _ => None,
        };
        let keep = self.keep_runs;
        Box::pin(async move {
            let done = self
                .store
                .call(move |db| {
                    db.job_finished(&key, &status, session.as_deref())?;
                    db.prune_job_runs(&key, keep)?;
                    // A one-shot schedule is done once it ran.
                    if let Some(id) = one_shot {
                        db.delete_schedule(id)?;
                    }
                    Ok(())
                })
                .await;
            if let Err(e) = done {
                self.log
                    .line(&format!("cannot record the end of {}: {e}", job.label));
            }
        })
    }
}
