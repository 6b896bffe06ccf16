//! One session's events, numbered and handed to every attached front end in order. Each
//! front end has its own bounded queue; one that stops reading is dropped (remote) or waited
//! for (in-process), and one that went away is forgotten. The latest events are kept, so a
//! front end that reconnects can go on from the last one it saw with no gap and no repeat.

use std::collections::VecDeque;
use std::sync::{Mutex, MutexGuard};

use tokio::sync::mpsc::{self, error::TrySendError};

use super::Delivery;
use crate::agent::{AgentHandle, Session};
use crate::protocol::{Event, SessionEvent};

pub(super) struct Subscriber {
    delivery: Delivery,
    capacity: usize,
}

impl Subscriber {
    pub(super) fn new(delivery: Delivery, capacity: usize) -> Self {
        Self { delivery, capacity }
    }
}

struct Attached {
    delivery: Delivery,
    events: mpsc::Sender<SessionEvent>,
}

/// Events kept for front ends that reconnect.
const REPLAY_EVENTS: usize = 4096;

#[derive(Default)]
struct Shared {
    attached: Vec<Attached>,
    recent: VecDeque<SessionEvent>,
    /// The sequence number of the last event handed out.
    seq: u64,
    /// The session's announcement, for front ends that attach later.
    started: Option<Event>,
}

/// Why a front end could not go on from where it was.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ReplayError {
    #[error("events up to {oldest} are no longer kept; attach without a sequence number")]
    Gone { oldest: u64 },
    #[error("event {asked} has not happened yet (the last is {last})")]
    Future { asked: u64, last: u64 },
}

pub(super) struct Fanout {
    session: String,
    shared: Mutex<Shared>,
}

impl Fanout {
    pub(super) fn new(session: String) -> Self {
        Self {
            session,
            shared: Mutex::new(Shared::default()),
        }
    }

    fn shared(&self) -> MutexGuard<'_, Shared> {
        self.shared
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// A new front end: it gets the events after `after` (kept ones first), or from the next
    /// one on.
    pub(super) fn subscribe(
        &self,
        subscriber: Subscriber,
        after: Option<u64>,
    ) -> Result<mpsc::Receiver<SessionEvent>, ReplayError> {
        let mut shared = self.shared();
        let replay: Vec<SessionEvent> = match after {
            None => Vec::new(),
            Some(asked) if asked > shared.seq => {
                return Err(ReplayError::Future {
                    asked,
                    last: shared.seq,
                });
            }
            Some(asked) => {
                let oldest = shared.recent.front().map_or(shared.seq + 1, |e| e.seq);
                if asked + 1 < oldest {
                    return Err(ReplayError::Gone { oldest: oldest - 1 });
                }
                shared
                    .recent
                    .iter()
                    .filter(|e| e.seq > asked)
                    .cloned()
                    .collect()
            }
        };
        let (events, receiver) = mpsc::channel(subscriber.capacity.max(1) + replay.len());
        for event in replay {
            let _ = events.try_send(event);
        }
        shared.attached.push(Attached {
            delivery: subscriber.delivery,
            events,
        });
        Ok(receiver)
    }

    /// Detaches every front end (they see their stream end).
    pub(super) fn detach_all(&self) {
        self.shared().attached.clear();
    }

    /// The sequence number of the last event.
    pub(super) fn last_seq(&self) -> u64 {
        self.shared().seq
    }

    /// How the session announced itself (model, workspace), once it did.
    pub(super) fn started(&self) -> Option<Event> {
        self.shared().started.clone()
    }

    /// Hands the agent's events out until it ends; then the session, when its task did not
    /// fail.
    pub(super) async fn run(&self, handle: AgentHandle) -> Option<Session> {
        let AgentHandle {
            mut events, task, ..
        } = handle;
        while let Some(event) = events.recv().await {
            self.deliver(event).await;
        }
        self.detach_all();
        task.await.ok()
    }

    /// Numbers, keeps and hands out one event under one lock, in the order of the stream, so
    /// a front end attaching meanwhile misses nothing and sees nothing twice. Returns the
    /// in-process front ends whose queue is full, to wait for.
    fn hand_out(&self, event: Event) -> (SessionEvent, Vec<mpsc::Sender<SessionEvent>>) {
        let mut waiting = Vec::new();
        let mut shared = self.shared();
        shared.seq += 1;
        if matches!(event, Event::SessionStarted { .. }) {
            shared.started = Some(event.clone());
        }
        let event = SessionEvent {
            session: self.session.clone(),
            seq: shared.seq,
            event,
        };
        if shared.recent.len() == REPLAY_EVENTS {
            shared.recent.pop_front();
        }
        shared.recent.push_back(event.clone());
        shared
            .attached
            .retain(|attached| match attached.events.try_send(event.clone()) {
                Ok(()) => true,
                Err(TrySendError::Closed(_)) => false,
                Err(TrySendError::Full(_)) => match attached.delivery {
                    Delivery::DropWhenBehind => false,
                    Delivery::Wait => {
                        waiting.push(attached.events.clone());
                        true
                    }
                },
            });
        (event, waiting)
    }

    async fn deliver(&self, event: Event) {
        let (event, waiting) = self.hand_out(event);
        for events in waiting {
            // A front end that goes away while waited for is forgotten at the next event.
            let _ = events.send(event.clone()).await;
        }
    }
}
