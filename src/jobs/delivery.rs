//! Where the reports of heartbeats and schedules go. Every run is noted in the daemon's log,
//! and a reply worth reading (not `HEARTBEAT_OK`) is written there in full and sent to the
//! other channels its job names in `deliver`: the log, and Telegram (every paired chat, or one
//! named `telegram:CHAT_ID`) when `mnemo serve` runs the Telegram channel.

use std::io::Write;
use std::sync::{Arc, Mutex, PoisonError};

use futures_util::future::BoxFuture;

/// A channel a job's `deliver` can name.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Channel {
    /// The daemon's log.
    Log,
    /// The paired Telegram chats, or the one named.
    Telegram { chat: Option<i64> },
}

impl Channel {
    pub fn parse(name: &str) -> Result<Channel, String> {
        let name = name.trim();
        match name.split_once(':') {
            None if name == "log" => Ok(Channel::Log),
            None if name == "telegram" => Ok(Channel::Telegram { chat: None }),
            Some(("telegram", chat)) => match chat.trim().parse() {
                Ok(chat) => Ok(Channel::Telegram { chat: Some(chat) }),
                Err(_) => Err(format!(
                    "`{name}`: a Telegram chat is a number (telegram:CHAT_ID)"
                )),
            },
            _ => Err(format!(
                "unknown delivery channel `{name}` (known: log, telegram, telegram:CHAT_ID)"
            )),
        }
    }

    /// The channel as `deliver` names it.
    pub fn name(self) -> String {
        match self {
            Channel::Log => "log".into(),
            Channel::Telegram { chat: None } => "telegram".into(),
            Channel::Telegram { chat: Some(chat) } => format!("telegram:{chat}"),
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

/// Sends a report somewhere: to one recipient of the channel (`to`), or to all of them.
pub trait Deliver: Send + Sync {
    fn deliver<'a>(
        &'a self,
        to: Option<i64>,
        report: &'a Report,
    ) -> BoxFuture<'a, Result<(), DeliveryError>>;
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
    fn deliver<'a>(
        &'a self,
        _to: Option<i64>,
        report: &'a Report,
    ) -> BoxFuture<'a, Result<(), DeliveryError>> {
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
    telegram: Option<Arc<dyn Deliver>>,
}

impl Channels {
    pub fn new(log: Arc<Log>) -> Self {
        Self {
            log,
            telegram: None,
        }
    }

    /// Reports named `telegram` go through `telegram`.
    pub fn with_telegram(mut self, telegram: Arc<dyn Deliver>) -> Self {
        self.telegram = Some(telegram);
        self
    }

    pub async fn deliver(&self, channel: Channel, report: &Report) -> Result<(), DeliveryError> {
        match channel {
            Channel::Log => self.log.deliver(None, report).await,
            Channel::Telegram { chat } => match &self.telegram {
                Some(telegram) => telegram.deliver(chat, report).await,
                None => Err(DeliveryError {
                    channel: "telegram",
                    message: "the Telegram channel is not running (`[telegram] enabled` and \
                              its token, then restart mnemo serve)"
                        .into(),
                }),
            },
        }
    }
}
