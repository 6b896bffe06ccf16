//! The terminal's events as a stream that asks crossterm only when there may be one. While
//! no input waits, crossterm's `EventStream` keeps a thread blocked in its reader, holding the
//! reader's lock; each poll of the stream meanwhile spins on that lock (a dozen
//! `sched_yield` calls) before it gives up. The app loop wakes for every frame and every agent
//! event, so a streamed reply paid that spin thousands of times. Here the stream is polled
//! again only after it returned an event or its thread said input arrived.

use std::io;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::task::{Context, Poll, Wake, Waker};

use crossterm::event::{Event, EventStream};
use futures_util::Stream;
use futures_util::task::AtomicWaker;

pub struct TermEvents {
    stream: EventStream,
    signal: Arc<Signal>,
    /// What crossterm's thread is handed: it wakes the task that polled last.
    waker: Waker,
}

/// Whether crossterm must be asked, and the task to wake when it must.
struct Signal {
    ask: AtomicBool,
    task: AtomicWaker,
}

impl Wake for Signal {
    fn wake(self: Arc<Self>) {
        self.wake_by_ref();
    }

    fn wake_by_ref(self: &Arc<Self>) {
        self.ask.store(true, Ordering::Release);
        self.task.wake();
    }
}

impl TermEvents {
    pub fn new() -> Self {
        let signal = Arc::new(Signal {
            ask: AtomicBool::new(true),
            task: AtomicWaker::new(),
        });
        Self {
            stream: EventStream::new(),
            waker: Waker::from(signal.clone()),
            signal,
        }
    }
}

impl Stream for TermEvents {
    type Item = io::Result<Event>;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let this = self.get_mut();
        this.signal.task.register(cx.waker());
        if !this.signal.ask.swap(false, Ordering::AcqRel) {
            return Poll::Pending;
        }
        // crossterm keeps the waker of the poll that found nothing; it is always this one,
        // which wakes whichever task polled last.
        let mut own = Context::from_waker(&this.waker);
        let polled = Pin::new(&mut this.stream).poll_next(&mut own);
        if polled.is_ready() {
            // More events may be read already: the next poll asks again.
            this.signal.ask.store(true, Ordering::Release);
        }
        polled
    }
}
