//! The session host: the one owner of a process's live sessions, keyed by session id. It
//! starts and resumes them, lets front ends attach and detach, and stops them. Each session's
//! events leave it numbered (`SessionEvent`), fanned out to whoever is attached and written
//! to the store's event journal; a session lives on while nobody is attached.

pub mod api;
mod compose;
pub mod daemon;
mod fanout;
mod hooks;
mod journal;
mod local;
mod providers;
pub mod replay;

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use tokio::sync::mpsc;

use crate::agent::{self, Session};
use crate::config::CliOverrides;
use crate::memory::Store;
use crate::protocol::{Op, SessionEvent};
pub use api::HostApi;
pub use compose::{
    LaunchError, Loaded, SessionChoice, load_config, load_config_from, prepare_session_with,
};
pub use fanout::ReplayError;
use fanout::{Fanout, REPLAY_EVENTS, Refused, Stored, Subscriber};
use journal::{Journal, KEEP_PER_SESSION};
pub use local::LocalHost;

/// Events an attached front end may have waiting before delivery stops or waits.
const ATTACH_QUEUE: usize = 1024;
/// How often a replay reads the journal again when the session outran the first read.
const REPLAY_TRIES: usize = 4;

/// How an attached front end takes events.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Delivery {
    /// In-process front ends: the session waits for them (they read as fast as they draw).
    Wait,
    /// Remote clients: one that falls `ATTACH_QUEUE` events behind is detached, so the
    /// session never waits for it.
    DropWhenBehind,
}

/// A front end's connection to a live session; dropping it detaches.
pub struct Attachment {
    pub session: String,
    pub ops: mpsc::Sender<Op>,
    pub events: mpsc::Receiver<SessionEvent>,
}

struct Live {
    ops: mpsc::Sender<Op>,
    fanout: Arc<Fanout>,
    /// The session's store, where its waiting notices are.
    store: Store,
    task: tokio::task::JoinHandle<Option<Session>>,
}

/// Cheap to clone; clones share the sessions.
#[derive(Clone)]
pub struct SessionHost {
    live: Arc<Mutex<HashMap<String, Live>>>,
    /// One journal writer per store the sessions use (in practice one).
    journals: Arc<Mutex<Vec<Journal>>>,
    /// How many of each session's latest events are kept in memory for replays.
    keep_for_replay: usize,
}

impl Default for SessionHost {
    fn default() -> Self {
        Self::new()
    }
}

/// Options for a session the host opens.
#[derive(Debug, Clone, Copy)]
pub struct OpenOptions {
    pub approval_mode: Option<crate::sandbox::ApprovalMode>,
    /// Whether the agent may ask a person (front ends that answer); otherwise a question is
    /// a denial the model is told about.
    pub questions: bool,
    pub delivery: Delivery,
}

impl SessionHost {
    pub fn new() -> Self {
        Self {
            live: Arc::default(),
            journals: Arc::default(),
            keep_for_replay: REPLAY_EVENTS,
        }
    }

    /// A host whose sessions only a front end of this process watches (`mnemo run`, the TUI): no
    /// gateway can ask it to go on from a sequence number, so it keeps no events in memory
    /// for that (4,096 of them held 2.8 MB through a long reply). Replays it is asked for
    /// anyway come from the journal.
    pub fn in_process_only() -> Self {
        Self {
            keep_for_replay: 0,
            ..Self::new()
        }
    }

    fn sessions(&self) -> MutexGuard<'_, HashMap<String, Live>> {
        self.live
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Opens a session as `choice` says and attaches to it: a new one, or a stored one
    /// (attached to at once when this host already runs it).
    pub async fn open(
        &self,
        loaded: &Loaded,
        cli: &CliOverrides,
        choice: SessionChoice,
        options: OpenOptions,
    ) -> Result<Attachment, LaunchError> {
        if let SessionChoice::Resume(id) = &choice
            && let Some(attached) = self.attach(id, options.delivery)
        {
            return Ok(attached);
        }
        let session = prepare_session_with(loaded, cli, choice).await?;
        if let Some(mode) = options.approval_mode {
            session.settings.approvals.set_mode(mode);
        }
        if options.questions {
            session.settings.approvals.enable_questions();
        }
        Ok(self.start(session, options.delivery).await)
    }

    /// Opens a new session that runs while nobody watches (a job of `mnemo serve`): what
    /// would ask a person is refused, the model told `reason`.
    pub async fn open_unattended(
        &self,
        loaded: &Loaded,
        cli: &CliOverrides,
        reason: String,
    ) -> Result<Attachment, LaunchError> {
        let session = prepare_session_with(loaded, cli, SessionChoice::New).await?;
        session.settings.approvals.run_unattended(reason);
        Ok(self.start(session, Delivery::Wait).await)
    }

    /// The journal writer of `store`, started the first time it is needed; `None` when its
    /// thread could not be started (events are then kept in memory only).
    fn journal_for(&self, store: &Store) -> Option<Journal> {
        let mut journals = self
            .journals
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        if let Some(journal) = journals.iter().find(|j| j.writes_to(store)) {
            return Some(journal.clone());
        }
        let journal = Journal::spawn(store.clone(), KEEP_PER_SESSION).ok()?;
        journals.push(journal.clone());
        Some(journal)
    }

    /// Runs `session` in this host and attaches to it. Its events are numbered on from the
    /// last one journaled (a resumed session continues where it stopped).
    pub async fn start(&self, session: Session, delivery: Delivery) -> Attachment {
        let id = session.id.clone();
        let store = session.store().clone();
        let resumed = session.is_stored();
        let journal = self.journal_for(session.store());
        let last_seq = match &journal {
            // Unreadable: numbering restarts, and the journal's rows are overwritten.
            Some(journal) if session.is_stored() => journal.last_seq(&id).await.unwrap_or(0),
            // A new session has no events yet: no need to wait for the journal.
            Some(_) | None => 0,
        };
        let handle = agent::spawn(session);
        let fanout = Arc::new(Fanout::new(
            id.clone(),
            last_seq,
            journal,
            self.keep_for_replay,
        ));
        let subscriber = Subscriber::new(delivery, ATTACH_QUEUE);
        let events = fanout.subscribe(subscriber, None, Stored::default());
        let events = events.unwrap_or_else(|_| mpsc::channel(1).1);
        let ops = handle.ops.clone();
        let host = self.clone();
        let pump = fanout.clone();
        let ended = id.clone();
        let task = tokio::spawn(async move {
            let session = pump.run(handle).await;
            host.sessions().remove(&ended);
            session
        });
        self.sessions().insert(
            id.clone(),
            Live {
                ops: ops.clone(),
                fanout,
                store,
                task,
            },
        );
        // A resumed session shows what waited for it before anything else happens.
        if resumed {
            self.hand_notices(&id).await;
        }
        Attachment {
            session: id,
            ops,
            events,
        }
    }

    /// Attaches to a live session; its events from now on.
    pub fn attach(&self, id: &str, delivery: Delivery) -> Option<Attachment> {
        let sessions = self.sessions();
        let live = sessions.get(id)?;
        let subscriber = Subscriber::new(delivery, ATTACH_QUEUE);
        let events = live.fanout.subscribe(subscriber, None, Stored::default());
        let attached = Attachment {
            session: id.to_string(),
            ops: live.ops.clone(),
            events: events.ok()?,
        };
        drop(sessions);
        self.notices_soon(id);
        Some(attached)
    }

    /// Shows session `id`'s waiting notices (results of the schedules it made) to the front
    /// ends attached to it, once; when it is not live or nobody watches, they stay stored for
    /// the next front end. Whether they were shown.
    pub async fn hand_notices(&self, id: &str) -> bool {
        let Some((fanout, store)) = self
            .sessions()
            .get(id)
            .filter(|live| live.fanout.watched())
            .map(|live| (live.fanout.clone(), live.store.clone()))
        else {
            return false;
        };
        let wanted = id.to_string();
        let Ok(notices) = store.call(move |db| db.take_session_notices(&wanted)).await else {
            return false;
        };
        for (title, body) in notices {
            fanout
                .deliver(crate::protocol::Event::Reminder { title, body })
                .await;
        }
        true
    }

    /// A front end came: it gets the waiting notices after the events it attached for.
    fn notices_soon(&self, id: &str) {
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return;
        };
        let (host, id) = (self.clone(), id.to_string());
        runtime.spawn(async move { host.hand_notices(&id).await });
    }

    /// Attaches to a live session (`None` when it is not live), going on after event `after`
    /// when given: the journaled events the host no longer keeps in memory come first, then
    /// the kept ones, then the live ones.
    pub async fn attach_after(
        &self,
        id: &str,
        delivery: Delivery,
        after: Option<u64>,
    ) -> Result<Option<Attachment>, ReplayError> {
        let Some(after) = after else {
            return Ok(self.attach(id, delivery));
        };
        for _ in 0..REPLAY_TRIES {
            let Some((fanout, ops)) = self
                .sessions()
                .get(id)
                .map(|live| (live.fanout.clone(), live.ops.clone()))
            else {
                return Ok(None);
            };
            let stored = match (fanout.older_than_kept(after)?, fanout.journal()) {
                (None, _) => Stored::default(),
                (Some(through), Some(journal)) => Stored {
                    events: journal
                        .events(id, after, through)
                        .await
                        .map_err(|e| ReplayError::Store(e.to_string()))?,
                    through,
                },
                // No journal (its thread could not start): nothing older than the kept
                // window, which `subscribe` then says.
                (Some(_), None) => Stored {
                    events: Vec::new(),
                    through: u64::MAX,
                },
            };
            let subscriber = Subscriber::new(delivery, ATTACH_QUEUE);
            match fanout.subscribe(subscriber, Some(after), stored) {
                Ok(events) => {
                    self.notices_soon(id);
                    return Ok(Some(Attachment {
                        session: id.to_string(),
                        ops,
                        events,
                    }));
                }
                Err(Refused::Replay(refused)) => return Err(refused),
                Err(Refused::Moved) => {}
            }
        }
        Err(ReplayError::Busy { asked: after })
    }

    /// Where to send session `id`'s ops, when it is live.
    pub fn ops(&self, id: &str) -> Option<mpsc::Sender<Op>> {
        self.sessions().get(id).map(|live| live.ops.clone())
    }

    /// How live session `id` announced itself (`Event::SessionStarted`), for a front end
    /// that attaches after it did.
    pub fn started(&self, id: &str) -> Option<crate::protocol::Event> {
        self.sessions()
            .get(id)
            .and_then(|live| live.fanout.started())
    }

    /// The sequence number of session `id`'s last event, when it is live.
    pub fn last_seq(&self, id: &str) -> Option<u64> {
        self.sessions().get(id).map(|live| live.fanout.last_seq())
    }

    /// The ids of the live sessions.
    pub fn live(&self) -> Vec<String> {
        let mut ids: Vec<String> = self.sessions().keys().cloned().collect();
        ids.sort();
        ids
    }

    /// Ends session `id` (interrupting its turn) and waits up to `wait` for it; the session
    /// back when it ended within that time.
    pub async fn stop(&self, id: &str, wait: Duration) -> Option<Session> {
        let live = self.sessions().remove(id)?;
        // Nobody waits on a front end that stopped reading to let the session end.
        live.fanout.detach_all();
        let _ = tokio::time::timeout(wait, live.ops.send(Op::Shutdown)).await;
        drop(live.ops);
        let Live {
            mut task, fanout, ..
        } = live;
        let session = match tokio::time::timeout(wait, &mut task).await {
            Ok(Ok(session)) => session,
            _ => {
                task.abort();
                None
            }
        };
        // A front end may reattach from its last event after this process is gone.
        if let Some(journal) = fanout.journal() {
            journal.flush().await;
        }
        session
    }

    /// Ends every live session, each given up to `wait`, and waits until their events are
    /// journaled.
    pub async fn stop_all(&self, wait: Duration) {
        let ids = self.live();
        let stops = ids.iter().map(|id| self.stop(id, wait));
        futures_util::future::join_all(stops).await;
        let journals = self
            .journals
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .clone();
        for journal in journals {
            journal.flush().await;
        }
    }
}
