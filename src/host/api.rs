//! The one host API every front end speaks: open, attach to and stop sessions, and read what
//! the store keeps for them (the picker's sessions, archive searches, skill and capability
//! listings). `LocalHost` answers it in this process; the gateway client answers it for a
//! running `mnemo serve`, whose gateway answers through a `LocalHost` of its own, so both
//! reply alike. Replies are serde types: the remote host sends them as JSON.

use std::time::Duration;

use futures_util::future::BoxFuture;
use serde::{Deserialize, Serialize};

use super::replay::Replay;
use super::{Attachment, LaunchError, Loaded, OpenOptions, SessionChoice};
use crate::config::CliOverrides;
use crate::memory::embed::ArchiveSearch;
use crate::memory::types::SessionRow;

/// What a host call gives back; a remote host's failures are `LaunchError::Served`.
pub type HostResult<'a, T> = BoxFuture<'a, Result<T, LaunchError>>;

/// A search of what is remembered, as a front end or `mnemo memory search` asks it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SearchAsk {
    pub query: String,
    #[serde(default = "default_limit")]
    pub limit: usize,
    /// Only this workspace's conversations and notes (and the notes kept for every one).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub workspace: Option<String>,
    /// The database the client would search: a daemon keeping another one refuses, so the
    /// hits never come from elsewhere.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub database: Option<String>,
    /// The embedding model the client would search with: a daemon with another refuses.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// Leaves this session out (the one the asker is in: it knows what was said there).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub except_session: Option<String>,
}

fn default_limit() -> usize {
    10
}

/// A stored session's history replayed as events, with its row (title, message count).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct History {
    pub session: SessionRow,
    #[serde(flatten)]
    pub replay: Replay,
}

/// A session running in the host, with the sequence number of its last event.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LiveSession {
    pub session: String,
    pub last_seq: Option<u64>,
}

/// How a skill has been used, as `/skills` shows it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SkillUse {
    pub name: String,
    /// `person`, `learned` or `imported`.
    pub origin: String,
    pub loads: u64,
    pub pinned: bool,
    pub stale: bool,
    pub suspect: bool,
}

/// A stored capability, as `/capabilities` shows it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CapabilityUse {
    pub name: String,
    pub version: u32,
    pub description: String,
    pub access_count: u64,
    pub pinned: bool,
}

/// Sessions, searches and listings, wherever the sessions run. Held as `Arc<dyn HostApi>`.
pub trait HostApi: Send + Sync {
    /// Opens a session as `choice` says (new, resumed by id, or the workspace's latest) and
    /// attaches to it; dropping the attachment detaches. `loaded` is the front end's
    /// configuration: the workspace and model of a new session.
    fn open<'a>(
        &'a self,
        loaded: &'a Loaded,
        cli: &'a CliOverrides,
        choice: SessionChoice,
        options: OpenOptions,
    ) -> HostResult<'a, Attachment>;

    /// Attaches to a running session, going on after event `after` when given.
    fn attach<'a>(&'a self, id: &'a str, after: Option<u64>) -> HostResult<'a, Attachment>;

    /// Ends a session of this host, waiting up to `wait`; a remote host's session goes on
    /// (the attachment's drop detached from it).
    fn stop<'a>(&'a self, id: &'a str, wait: Duration) -> BoxFuture<'a, ()>;

    /// Shows live session `id` the results of its schedules that `mnemo serve` (another
    /// process) left for it since: they arrive as `Event::Reminder`. Whether more may come
    /// (the session made schedules), so the front end looks again later only then. A served
    /// host shows them itself as they come, so it looks for none and says none will come.
    fn show_notices<'a>(&'a self, id: &'a str) -> BoxFuture<'a, bool>;

    /// The sessions that run now.
    fn live_sessions(&self) -> HostResult<'_, Vec<LiveSession>>;

    /// Stored sessions of `workspace` (all when `None`), newest first, at most `limit`.
    fn stored_sessions(
        &self,
        workspace: Option<String>,
        limit: usize,
    ) -> HostResult<'_, Vec<SessionRow>>;

    /// The stored session `id` (an id or a unique prefix of one) names.
    fn stored_session(&self, id: String) -> HostResult<'_, SessionRow>;

    /// Gives stored session `id` (an id or a unique prefix) the title `title`; its row as it
    /// is now.
    fn rename(&self, id: String, title: String) -> HostResult<'_, SessionRow>;

    /// The most recent stored session of `workspace`.
    fn latest_session(&self, workspace: String) -> HostResult<'_, Option<SessionRow>>;

    /// Session `id`'s (an id or a unique prefix) stored history as events: its last
    /// `recent` messages of the working set when given (the earlier ones counted), else all
    /// of them, archived ones included.
    fn history(&self, id: String, recent: Option<usize>) -> HostResult<'_, History>;

    /// Searches what is remembered.
    fn search(&self, ask: SearchAsk) -> HostResult<'_, ArchiveSearch>;

    /// How each skill has been used.
    fn skill_stats(&self) -> HostResult<'_, Vec<SkillUse>>;

    /// The stored capabilities.
    fn capabilities(&self) -> HostResult<'_, Vec<CapabilityUse>>;

    /// Tells the scheduler that schedules or heartbeat files changed; whether one heard it.
    fn jobs_changed(&self) -> BoxFuture<'_, bool>;

    /// What runs on schedule for `workspace` (schedules, heartbeats and their last runs), as
    /// `mnemo schedule list` prints it.
    fn schedules(&self, workspace: String) -> HostResult<'_, String>;

    /// The pid of the `mnemo serve` that keeps the host's data directory, if one runs.
    fn daemon(&self) -> HostResult<'_, Option<u32>>;

    /// Whether the sessions run in another process (`mnemo serve`), so that leaving one only
    /// detaches from it.
    fn served(&self) -> bool;
}
