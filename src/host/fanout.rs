//! One session's events, numbered and handed to every attached front end in order. Each
//! front end has its own bounded queue; one that stops reading is dropped (remote) or waited
//! for (in-process), and one that went away is forgotten. The latest events are kept, and
//! every event is also handed to the journal, so a front end that reconnects can go on from
//! the last one it saw with no gap and no repeat: older events from the journal, then the
//! kept ones, then live.

use std::collections::VecDeque;
use std::sync::{Mutex, MutexGuard};

use tokio::sync::mpsc::{self, error::TrySendError};

use super::Delivery;
use super::journal::Journal;
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
pub(super) const REPLAY_EVENTS: usize = 4096;

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
    #[error(
        "events up to {oldest} are no longer kept; attach from {oldest} or without a sequence \
         number"
    )]
    Gone { oldest: u64 },
    #[error("event {asked} has not happened yet (the last is {last})")]
    Future { asked: u64, last: u64 },
    #[error("the session moved on faster than events after {asked} could be read; attach again")]
    Busy { asked: u64 },
    #[error("the stored events cannot be read: {0}")]
    Store(String),
}

/// Why `subscribe` did not attach.
pub(super) enum Refused {
    Replay(ReplayError),
    /// More events than are kept arrived while `stored` was read: read again.
    Moved,
}

/// Events read from the journal for a replay: those after the asked sequence number through
/// `through` that it holds.
#[derive(Default)]
pub(super) struct Stored {
    pub(super) events: Vec<SessionEvent>,
    pub(super) through: u64,
}

pub(super) struct Fanout {
    session: String,
    shared: Mutex<Shared>,
    journal: Option<Journal>,
    /// How many of the latest events are kept in memory for replays.
    keep: usize,
}

impl Fanout {
    /// The fan-out of a session whose last event so far was `last_seq` (a resumed session
    /// continues its numbering), journaling to `journal` and keeping the latest `keep` events.
    pub(super) fn new(
        session: String,
        last_seq: u64,
        journal: Option<Journal>,
        keep: usize,
    ) -> Self {
        let shared = Shared {
            attached: Vec::new(),
            recent: VecDeque::new(),
            seq: last_seq,
            started: None,
        };
        Self {
            session,
            shared: Mutex::new(shared),
            journal,
            keep,
        }
    }

    /// The journal this fan-out writes to.
    pub(super) fn journal(&self) -> Option<&Journal> {
        self.journal.as_ref()
    }

    fn shared(&self) -> MutexGuard<'_, Shared> {
        self.shared
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// What a front end going on after event `after` needs from the journal first: the
    /// events through the returned sequence number (`None` when the kept ones suffice). That
    /// is the last event so far, not the one before the oldest kept: a streaming session
    /// pushes the kept window on with every event while the journal is read.
    pub(super) fn older_than_kept(&self, after: u64) -> Result<Option<u64>, ReplayError> {
        let shared = self.shared();
        if after > shared.seq {
            return Err(ReplayError::Future {
                asked: after,
                last: shared.seq,
            });
        }
        Ok((after + 1 < shared.oldest_kept()).then_some(shared.seq))
    }

    /// A new front end: it gets the events after `after` (from `stored`, then the kept ones),
    /// or from the next one on. Nothing is handed out meanwhile (one lock), so it then gets
    /// the live events with no gap and no repeat.
    pub(super) fn subscribe(
        &self,
        subscriber: Subscriber,
        after: Option<u64>,
        stored: Stored,
    ) -> Result<mpsc::Receiver<SessionEvent>, Refused> {
        let mut shared = self.shared();
        let replay: Vec<SessionEvent> = match after {
            None => Vec::new(),
            Some(asked) if asked > shared.seq => {
                return Err(Refused::Replay(ReplayError::Future {
                    asked,
                    last: shared.seq,
                }));
            }
            Some(asked) => {
                let oldest = shared.oldest_kept();
                let mut replay = Vec::new();
                if asked + 1 < oldest {
                    if stored.through + 1 < oldest {
                        return Err(Refused::Moved);
                    }
                    replay = whole_run(stored.events, asked, oldest).map_err(Refused::Replay)?;
                }
                let kept = shared.recent.iter().filter(|e| e.seq > asked).cloned();
                replay.extend(kept);
                replay
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

    /// Whether a front end is attached and still reading.
    pub(super) fn watched(&self) -> bool {
        self.shared()
            .attached
            .iter()
            .any(|attached| !attached.events.is_closed())
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
        if let Some(journal) = &self.journal {
            journal.ended(&self.session);
        }
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
        // A front end attaching later starts from the model the session uses now.
        if let (Event::ModelChanged { model, .. }, Some(Event::SessionStarted { model: now, .. })) =
            (&event, &mut shared.started)
        {
            now.clone_from(model);
        }
        let event = SessionEvent {
            session: self.session.clone(),
            seq: shared.seq,
            event,
        };
        if self.keep > 0 {
            if shared.recent.len() >= self.keep {
                shared.recent.pop_front();
            }
            shared.recent.push_back(event.clone());
        }
        if let Some(journal) = &self.journal {
            journal.record(&event);
        }
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

    pub(super) async fn deliver(&self, event: Event) {
        let (event, waiting) = self.hand_out(event);
        for events in waiting {
            // A front end that goes away while waited for is forgotten at the next event.
            let _ = events.send(event.clone()).await;
        }
    }
}

impl Shared {
    /// The sequence number of the oldest event kept in memory (the next one when none is).
    fn oldest_kept(&self) -> u64 {
        self.recent.front().map_or(self.seq + 1, |e| e.seq)
    }
}

/// The journaled events after `asked` and before `oldest_kept`, when the journal holds every
/// one of them; otherwise the last sequence number from which a replay would be whole.
fn whole_run(
    stored: Vec<SessionEvent>,
    asked: u64,
    oldest_kept: u64,
) -> Result<Vec<SessionEvent>, ReplayError> {
    let mut run = Vec::new();
    let mut whole_after = asked;
    let mut expected = asked + 1;
    for event in stored
        .into_iter()
        .filter(|e| e.seq > asked && e.seq < oldest_kept)
    {
        if event.seq != expected {
            whole_after = event.seq - 1;
        }
        expected = event.seq + 1;
        run.push(event);
    }
    if expected != oldest_kept {
        whole_after = oldest_kept - 1;
    }
    match whole_after == asked {
        true => Ok(run),
        false => Err(ReplayError::Gone {
            oldest: whole_after,
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn events(seqs: impl IntoIterator<Item = u64>) -> Vec<SessionEvent> {
        seqs.into_iter()
            .map(|seq| SessionEvent {
                session: "s".into(),
                seq,
                event: Event::TextDelta {
                    text: seq.to_string(),
                },
            })
            .collect()
    }

    fn seqs(run: &[SessionEvent]) -> Vec<u64> {
        run.iter().map(|e| e.seq).collect()
    }

    #[test]
    fn a_replay_from_the_journal_is_whole_or_says_from_where_it_would_be() {
        let whole = whole_run(events(3..=9), 2, 10).map(|run| seqs(&run));
        assert_eq!(whole, Ok((3..=9).collect()));
        // Pruned below 5: going on from 4 would work.
        assert_eq!(
            whole_run(events(5..=9), 2, 10).map(|run| seqs(&run)),
            Err(ReplayError::Gone { oldest: 4 })
        );
        // Event 6 was never journaled (the writer's queue was full).
        let holed = events([3, 4, 5, 7, 8, 9]);
        assert_eq!(
            whole_run(holed, 2, 10).map(|run| seqs(&run)),
            Err(ReplayError::Gone { oldest: 6 })
        );
        // The journal ends before the kept window begins.
        assert_eq!(
            whole_run(events(3..=7), 2, 10).map(|run| seqs(&run)),
            Err(ReplayError::Gone { oldest: 9 })
        );
    }
}
