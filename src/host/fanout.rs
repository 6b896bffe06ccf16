//! One session's events, numbered and handed to every attached front end in order. Each
//! front end has its own bounded queue; one that stops reading is dropped (remote) or waited
//! for (in-process), and one that went away is forgotten.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, MutexGuard};

use tokio::sync::mpsc::{self, error::TrySendError};

use super::Delivery;
use crate::agent::{AgentHandle, Session};
use crate::protocol::SessionEvent;

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

pub(super) struct Fanout {
    session: String,
    attached: Mutex<Vec<Attached>>,
    /// The sequence number of the last event handed out.
    seq: AtomicU64,
}

impl Fanout {
    pub(super) fn new(session: String) -> Self {
        Self {
            session,
            attached: Mutex::new(Vec::new()),
            seq: AtomicU64::new(0),
        }
    }

    fn attached(&self) -> MutexGuard<'_, Vec<Attached>> {
        self.attached
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// A new front end: it gets the events from the next one on.
    pub(super) fn subscribe(&self, subscriber: Subscriber) -> mpsc::Receiver<SessionEvent> {
        let (events, receiver) = mpsc::channel(subscriber.capacity.max(1));
        self.attached().push(Attached {
            delivery: subscriber.delivery,
            events,
        });
        receiver
    }

    /// Detaches every front end (they see their stream end).
    pub(super) fn detach_all(&self) {
        self.attached().clear();
    }

    /// Hands the agent's events out until it ends; then the session, when its task did not
    /// fail.
    pub(super) async fn run(&self, handle: AgentHandle) -> Option<Session> {
        let AgentHandle {
            mut events, task, ..
        } = handle;
        while let Some(event) = events.recv().await {
            let seq = self.seq.fetch_add(1, Ordering::Relaxed) + 1;
            let numbered = SessionEvent {
                session: self.session.clone(),
                seq,
                event,
            };
            self.deliver(numbered).await;
        }
        self.detach_all();
        task.await.ok()
    }

    async fn deliver(&self, event: SessionEvent) {
        let mut waiting = Vec::new();
        self.attached()
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
        for events in waiting {
            // A front end that goes away while waited for is forgotten at the next event.
            let _ = events.send(event.clone()).await;
        }
    }
}
