//! The event journal: every numbered event a host hands out is also written to the store, so
//! a front end can go on from a sequence number older than the fan-out keeps in memory, and a
//! resumed session continues its numbering. One writer thread per store batches the events
//! (a transaction per `BATCH_WAIT` or `BATCH_EVENTS`) and serializes them there, off the
//! agents' path. Its queue is bounded and the fan-out never waits for it: an event that finds
//! it full is not journaled, and a replay that would need it is refused rather than gapped
//! (`fanout::Fanout::subscribe` checks that what it replays is contiguous). Text deltas that
//! follow each other in a session are written as one row holding each delta's text, so a
//! streamed reply costs a row per batch instead of a row per delta, and a replay from the
//! middle of it still gets exactly the deltas after that point.

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use tokio::sync::oneshot;

use serde::{Deserialize, Serialize};

use crate::memory::session_events::{JournalRow, MAX_RUN};
use crate::memory::{Store, StoreError};
use crate::protocol::{Event, SessionEvent};

/// Events waiting for the writer. Several thousand events per second at full load (100
/// sessions streaming) fill this in a few seconds of a stalled disk, not in one slow batch.
const QUEUE: usize = 16_384;
/// The longest an event waits before its batch is written. Long enough that a streamed reply
/// costs a few transactions a second (the store thread's wake-ups were a sixth of a stream's
/// CPU at 50 ms); a replay flushes first, so nothing waits for it.
const BATCH_WAIT: Duration = Duration::from_millis(250);
/// The most events one transaction writes.
const BATCH_EVENTS: usize = 500;
/// How many events of each session are kept; older ones are pruned.
pub(super) const KEEP_PER_SESSION: u64 = 20_000;
/// A session is pruned each time its numbering passes a multiple of this, so the table holds
/// at most `KEEP_PER_SESSION + PRUNE_EVERY` events of it.
const PRUNE_EVERY: u64 = 1_000;
/// How long a replay waits for the writer to catch up before reading what is there.
const FLUSH_WAIT: Duration = Duration::from_secs(5);

enum Entry {
    /// Boxed: the queue holds its entries in blocks, at the size of the largest entry.
    Event(Box<SessionEvent>),
    /// The session ended: its events go unless it was stored (it never got a message).
    Ended(String),
    /// Answered once everything queued before it is written.
    Flush(oneshot::Sender<()>),
}

/// A handle on one store's journal writer; cheap to clone. The writer ends when the last
/// handle is dropped, after writing what was queued.
#[derive(Clone)]
pub(super) struct Journal {
    store: Store,
    queue: mpsc::Sender<Entry>,
    /// Events and endings queued and not yet taken by the writer: the queue's bound. The
    /// channel itself grows with what waits; a bounded one allocated all `QUEUE` slots up
    /// front, half a megabyte that a one-shot run never fills.
    waiting: Arc<AtomicUsize>,
    /// The writer, woken by a flush from its wait for the batch to fill.
    writer: std::thread::Thread,
}

impl Journal {
    /// Starts the writer for `store`, keeping `keep` events per session.
    pub(super) fn spawn(store: Store, keep: u64) -> std::io::Result<Journal> {
        let (queue, entries) = mpsc::channel();
        let waiting = Arc::new(AtomicUsize::new(0));
        let writer = Writer {
            store: store.clone(),
            keep,
            waiting: waiting.clone(),
        };
        let thread = std::thread::Builder::new()
            .name("mnemo-journal".to_owned())
            .spawn(move || writer.run(&entries))?;
        Ok(Journal {
            store,
            queue,
            waiting,
            writer: thread.thread().clone(),
        })
    }

    /// Queues `entry` unless `QUEUE` entries wait already (then it is dropped). A full
    /// batch wakes the writer: a reply that streams faster than it waits would otherwise pile
    /// up whole in the queue.
    fn try_queue(&self, entry: Entry) {
        let before = self.waiting.fetch_add(1, Ordering::AcqRel);
        if before >= QUEUE || self.queue.send(entry).is_err() {
            self.waiting.fetch_sub(1, Ordering::AcqRel);
        } else if (before + 1).is_multiple_of(BATCH_EVENTS) {
            self.writer.unpark();
        }
    }

    /// Whether this journal writes to `store`.
    pub(super) fn writes_to(&self, store: &Store) -> bool {
        self.store.same_store(store)
    }

    /// Queues `event` without waiting. When the queue is full (or the writer is gone) the
    /// event is not journaled; replays check for such gaps.
    pub(super) fn record(&self, event: &SessionEvent) {
        self.try_queue(Entry::Event(Box::new(event.clone())));
    }

    /// Session `session` ended: when it was never stored, its events are dropped after those
    /// queued. Skipped when the queue is full; its few events then stay.
    pub(super) fn ended(&self, session: &str) {
        self.try_queue(Entry::Ended(session.to_string()));
    }

    /// Waits (up to `FLUSH_WAIT`) until every event queued so far is in the store.
    pub(super) async fn flush(&self) {
        let (done, written) = oneshot::channel();
        // Not counted against the bound: each caller has at most one queued, and waits for it.
        if self.queue.send(Entry::Flush(done)).is_ok() {
            self.writer.unpark();
            let _ = tokio::time::timeout(FLUSH_WAIT, written).await;
        }
    }

    /// The sequence number of `session`'s last journaled event (0 when none), everything
    /// queued before counted.
    pub(super) async fn last_seq(&self, session: &str) -> Result<u64, StoreError> {
        self.flush().await;
        let session = session.to_string();
        self.store
            .call(move |db| db.last_session_event(&session))
            .await
    }

    /// `session`'s journaled events after `after` through `through`, everything queued before
    /// counted; an event whose JSON no longer reads as an event is left out (the caller sees
    /// the gap).
    pub(super) async fn events(
        &self,
        session: &str,
        after: u64,
        through: u64,
    ) -> Result<Vec<SessionEvent>, StoreError> {
        self.flush().await;
        let id = session.to_string();
        let rows = self
            .store
            .call(move |db| db.session_events(&id, after, through))
            .await?;
        Ok(rows
            .into_iter()
            .flat_map(|(first, last, json)| expand(session, first, last, &json))
            .filter(|event| event.seq > after && event.seq <= through)
            .collect())
    }
}

/// How a run of text deltas is stored: each delta's text, numbered on from the row's first.
#[derive(Serialize, Deserialize)]
struct DeltaRun {
    text_deltas: Vec<String>,
}

/// The events of one row; one whose JSON no longer reads is left out.
fn expand(session: &str, first: u64, last: u64, json: &str) -> Vec<SessionEvent> {
    let event = |seq, event| SessionEvent {
        session: session.to_string(),
        seq,
        event,
    };
    if last == first {
        return serde_json::from_str::<Event>(json)
            .map(|e| vec![event(first, e)])
            .unwrap_or_default();
    }
    let Ok(run) = serde_json::from_str::<DeltaRun>(json) else {
        return Vec::new();
    };
    (first..)
        .zip(run.text_deltas)
        .map(|(seq, text)| event(seq, Event::TextDelta { text }))
        .collect()
}

/// The rows of one batch, text deltas that follow each other in a session gathered into one.
#[derive(Default)]
struct Batch {
    rows: Vec<Pending>,
    /// Each session's row that a next delta may join.
    open_run: HashMap<String, usize>,
    events: usize,
}

enum Pending {
    One(SessionEvent),
    Run {
        session: String,
        first: u64,
        texts: Vec<String>,
    },
}

impl Batch {
    fn push(&mut self, event: SessionEvent) {
        self.events += 1;
        let Event::TextDelta { text } = event.event else {
            self.open_run.remove(&event.session);
            self.rows.push(Pending::One(event));
            return;
        };
        if let Some(&at) = self.open_run.get(&event.session)
            && let Some(Pending::Run { first, texts, .. }) = self.rows.get_mut(at)
            && *first + texts.len() as u64 == event.seq
            && (texts.len() as u64) < MAX_RUN
        {
            texts.push(text);
            return;
        }
        self.open_run.insert(event.session.clone(), self.rows.len());
        self.rows.push(Pending::Run {
            session: event.session,
            first: event.seq,
            texts: vec![text],
        });
    }

    fn into_rows(self) -> Vec<JournalRow> {
        self.rows.into_iter().filter_map(row).collect()
    }
}

fn row(pending: Pending) -> Option<JournalRow> {
    match pending {
        Pending::One(event) => Some(JournalRow {
            event: serde_json::to_string(&event.event).ok()?,
            session: event.session,
            seq: event.seq,
            last_seq: event.seq,
        }),
        // A lone delta is stored as the event itself.
        Pending::Run {
            session,
            first,
            mut texts,
        } if texts.len() == 1 => {
            let text = texts.pop().unwrap_or_default();
            row(Pending::One(SessionEvent {
                session,
                seq: first,
                event: Event::TextDelta { text },
            }))
        }
        Pending::Run {
            session,
            first,
            texts,
        } => Some(JournalRow {
            last_seq: first + texts.len() as u64 - 1,
            event: serde_json::to_string(&DeltaRun { text_deltas: texts }).ok()?,
            session,
            seq: first,
        }),
    }
}

struct Writer {
    store: Store,
    keep: u64,
    waiting: Arc<AtomicUsize>,
}

impl Writer {
    /// Takes what waits, then sleeps until the batch is due instead of waking for every
    /// event of a stream (a flush wakes it early): two context switches per text delta were
    /// a tenth of a streaming TUI's CPU.
    fn run(self, entries: &mpsc::Receiver<Entry>) {
        while let Ok(first) = entries.recv() {
            let deadline = Instant::now() + BATCH_WAIT;
            let mut batch = Batch::default();
            let mut ended = Vec::new();
            let mut flushes = Vec::new();
            let mut next = Some(first);
            loop {
                while let Some(entry) = next.take() {
                    match entry {
                        Entry::Event(event) => {
                            self.waiting.fetch_sub(1, Ordering::AcqRel);
                            batch.push(*event);
                        }
                        Entry::Ended(session) => {
                            self.waiting.fetch_sub(1, Ordering::AcqRel);
                            ended.push(session);
                        }
                        Entry::Flush(done) => flushes.push(done),
                    }
                    if batch.events >= BATCH_EVENTS || !flushes.is_empty() {
                        break;
                    }
                    next = entries.try_recv().ok();
                }
                let wait = deadline.saturating_duration_since(Instant::now());
                if batch.events >= BATCH_EVENTS || !flushes.is_empty() || wait.is_zero() {
                    break;
                }
                std::thread::park_timeout(wait);
                match entries.try_recv() {
                    Ok(entry) => next = Some(entry),
                    // Every handle is gone: write what there is.
                    Err(mpsc::TryRecvError::Disconnected) => break,
                    Err(mpsc::TryRecvError::Empty) => {}
                }
            }
            self.write(batch.into_rows(), ended);
            for done in flushes {
                let _ = done.send(());
            }
        }
    }

    /// Writes one batch. A failed batch is lost to the journal only (the sessions' histories
    /// are written separately); a replay that needs it is refused as a gap.
    fn write(&self, rows: Vec<JournalRow>, ended: Vec<String>) {
        if rows.is_empty() && ended.is_empty() {
            return;
        }
        let prune = self.to_prune(&rows);
        let _ = self.store.call_blocking(move |db| {
            db.append_session_events(&rows, &prune)?;
            db.forget_unstored_session_events(&ended)
        });
    }

    /// The sessions whose numbering passed a multiple of `PRUNE_EVERY` in `rows`, with the
    /// last sequence number of theirs to drop.
    fn to_prune(&self, rows: &[JournalRow]) -> Vec<(String, u64)> {
        let mut spans: HashMap<&str, (u64, u64)> = HashMap::new();
        for row in rows {
            let span = spans.entry(&row.session).or_insert((row.seq, row.last_seq));
            span.0 = span.0.min(row.seq);
            span.1 = span.1.max(row.last_seq);
        }
        spans
            .into_iter()
            .filter(|(_, (low, high))| high / PRUNE_EVERY > low.saturating_sub(1) / PRUNE_EVERY)
            .filter(|(_, (_, high))| *high > self.keep)
            .map(|(session, (_, high))| (session.to_string(), high - self.keep))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    type TestResult = Result<(), Box<dyn std::error::Error>>;

    fn event(session: &str, seq: u64) -> SessionEvent {
        SessionEvent {
            session: session.into(),
            seq,
            event: Event::TextDelta {
                text: format!("t{seq}"),
            },
        }
    }

    #[tokio::test]
    async fn a_flush_makes_every_queued_event_readable_and_retention_keeps_the_latest() -> TestResult
    {
        let store = Store::open_in_memory()?;
        let journal = Journal::spawn(store, 1_500)?;
        for seq in 1..=3_200 {
            journal.record(&event("a", seq));
        }
        journal.record(&event("b", 1));
        assert_eq!(journal.last_seq("a").await?, 3_200);
        assert_eq!(journal.last_seq("b").await?, 1);
        // Pruned in the batch that passed 3,000 (batches hold up to 500 events): the latest
        // 1,500 events or a few more are kept, whole and in order.
        let kept = journal.events("a", 0, u64::MAX).await?;
        let first = kept.first().map_or(0, |e| e.seq);
        assert!((1_501..=1_701).contains(&first), "first kept {first}");
        let seqs: Vec<u64> = kept.iter().map(|e| e.seq).collect();
        assert_eq!(seqs, (first..=3_200).collect::<Vec<_>>());
        assert_eq!(kept.last(), Some(&event("a", 3_200)));
        assert_eq!(journal.events("b", 0, u64::MAX).await?, vec![event("b", 1)]);
        // Neither session was stored (no message): once ended, their events go.
        journal.ended("b");
        assert_eq!(journal.last_seq("b").await?, 0);
        assert_eq!(journal.last_seq("a").await?, 3_200);
        assert_eq!(journal.events("a", 3_100, 3_102).await?.len(), 2);
        Ok(())
    }

    #[tokio::test]
    async fn a_streamed_reply_takes_a_row_per_batch_and_replays_exactly_from_its_middle()
    -> TestResult {
        let store = Store::open_in_memory()?;
        let journal = Journal::spawn(store.clone(), 20_000)?;
        let other = |seq| SessionEvent {
            session: "a".into(),
            seq,
            event: Event::TurnStarted { turn: 1 },
        };
        journal.record(&other(1));
        for seq in 2..=101 {
            journal.record(&event("a", seq));
            journal.record(&event("b", seq));
        }
        journal.record(&other(102));
        assert_eq!(journal.last_seq("a").await?, 102);
        let rows = store.call(|db| db.session_events("a", 0, u64::MAX)).await?;
        assert!(rows.len() <= 4, "{} rows for 102 events", rows.len());
        let replayed = journal.events("a", 50, u64::MAX).await?;
        let mut expected: Vec<SessionEvent> = (51..=101).map(|seq| event("a", seq)).collect();
        expected.push(other(102));
        assert_eq!(replayed, expected);
        assert_eq!(journal.events("a", 60, 61).await?, vec![event("a", 61)]);
        assert_eq!(
            journal.events("b", 0, 3).await?,
            vec![event("b", 2), event("b", 3)]
        );
        Ok(())
    }
}
