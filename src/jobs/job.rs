//! A job of `mnemo serve`, whichever its source (a heartbeat file, a stored schedule): when it
//! runs, what it runs, and where its report goes.

use std::path::PathBuf;

use chrono::{DateTime, Utc};

use super::delivery::Channel;
use super::plan::Timing;
use crate::memory::schedules::MakerRights;

/// Where a job comes from, which decides what happens after a run.
#[derive(Debug, Clone, PartialEq)]
pub enum Source {
    /// A heartbeat file at this path.
    Heartbeat(PathBuf),
    /// A stored schedule; a one-shot one is removed once it ran.
    Schedule { id: i64, one_shot: bool },
}

#[derive(Debug, Clone, PartialEq)]
pub struct Job {
    /// The key of its run record: unique among jobs, stable across restarts.
    pub key: String,
    /// How people know it: `heartbeat inbox`, `schedule #3`.
    pub label: String,
    pub source: Source,
    pub timing: Timing,
    /// When it came to be: cron lines of jobs that never ran count from here.
    pub since: DateTime<Utc>,
    pub workspace: PathBuf,
    /// A configured model name; the workspace's default model when `None`.
    pub model: Option<String>,
    /// What the agent is told.
    pub prompt: String,
    pub deliver: Vec<Channel>,
    /// What the session that made it was allowed (a schedule): the run gets no more. `None`
    /// for the person's own heartbeats, which run with the daemon's settings.
    pub rights: Option<MakerRights>,
}

/// What is known of a job's runs.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Record {
    pub last_run: Option<DateTime<Utc>>,
    /// A run in progress: since when, in which process.
    pub running: Option<(DateTime<Utc>, u32)>,
}

/// How a run ended, as the runner saw it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RunOutcome {
    /// The agent finished its turn with this reply.
    Replied { session_id: String, text: String },
    Failed {
        session_id: Option<String>,
        error: String,
    },
    /// Stopped because the daemon shuts down.
    Interrupted { session_id: Option<String> },
}

impl RunOutcome {
    pub fn session_id(&self) -> Option<&str> {
        match self {
            RunOutcome::Replied { session_id, .. } => Some(session_id),
            RunOutcome::Failed { session_id, .. } | RunOutcome::Interrupted { session_id } => {
                session_id.as_deref()
            }
        }
    }
}

/// The reply that means "nothing to report": not delivered.
pub const HEARTBEAT_OK: &str = "HEARTBEAT_OK";

/// Whether `reply` says there is nothing to report.
pub fn is_quiet(reply: &str) -> bool {
    reply.trim() == HEARTBEAT_OK
}
