//! Where the reports of heartbeats and schedules go. Every run is noted in the daemon's log,
//! and a reply worth reading (not `HEARTBEAT_OK`) is written there in full and sent to the
//! other channels its job names in `deliver`. Only the log exists as a channel today: a new
//! one (Telegram) is a `Channel` variant and a `Deliver` implementation.

use std::io::Write;
use std::sync::{Arc, Mutex, PoisonError};

use futures_util::future::BoxFuture;

/// A channel a job's `deliver` can name.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Channel {
    /// The daemon's log.
    Log,
}

impl Channel {
    pub fn parse(name: &str) -> Result<Channel, String> {
        match name.trim() {
            "log" => Ok(Channel::Log),
            other => Err(format!("unknown delivery channel `{other}` (known: log)")),
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Channel::Log => "log",
        }
    }
}

/// A reply to deliver.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Report {
    /// The job, as people know it (`heartbeat inbox`, `schedule #3`).
    pub job: String,
    pub session_id: String,
    pub text: String,
}

#[derive(Debug, thiserror::Error)]
#[error("cannot deliver to {channel}: {message}")]
pub struct DeliveryError {
    pub channel: &'static str,
    pub message: String,
}

/// Sends a report somewhere.
pub trait Deliver: Send + Sync {
    fn deliver<'a>(&'a self, report: &'a Report) -> BoxFuture<'a, Result<(), DeliveryError>>;
}

/// The daemon's log: lines written whole to one writer (a file, stderr, a test's buffer).
pub struct Log {
    out: Mutex<Box<dyn Write + Send>>,
}

impl Log {
    pub fn new(out: impl Write + Send + 'static) -> Self {
        Self {
            out: Mutex::new(Box::new(out)),
        }
    }

    /// Writes `text` and a newline; a log that cannot be written must not stop the jobs.
    pub fn line(&self, text: &str) {
        let mut out = self.out.lock().unwrap_or_else(PoisonError::into_inner);
        let _ = writeln!(out, "{text}");
        let _ = out.flush();
    }
}

impl Deliver for Log {
    fn deliver<'a>(&'a self, report: &'a Report) -> BoxFuture<'a, Result<(), DeliveryError>> {
        let short: String = report.session_id.chars().take(8).collect();
        self.line(&format!(
            "── {} (session {short}) ──\n{}",
            report.job,
            report.text.trim_end()
        ));
        Box::pin(async { Ok(()) })
    }
}

/// The channels reports can go to.
#[derive(Clone)]
pub struct Channels {
    log: Arc<Log>,
}

impl Channels {
    pub fn new(log: Arc<Log>) -> Self {
        Self { log }
    }

    pub fn get(&self, channel: Channel) -> &dyn Deliver {
        match channel {
            Channel::Log => self.log.as_ref(),
        }
    }
}
