//! Seeing the lines a stdio server sends that rmcp drops: a message longer than its line limit
//! (16 MiB) is discarded and only logged, so the call it answered would wait for its timeout
//! and be reported as one. The server's stdout is read through [`LineWatch`], which counts the
//! bytes of each line and says when one passes the limit, so the call can say what happened.

use std::pin::Pin;
use std::task::{Context, Poll};

use tokio::io::{AsyncRead, ReadBuf};
use tokio::sync::watch;

/// The longest message rmcp reads from a stdio server.
pub(crate) const MAX_LINE_BYTES: usize = rmcp::transport::async_rw::DEFAULT_MAX_LINE_LENGTH;

/// A reader that counts the lines longer than [`MAX_LINE_BYTES`] passing through it.
pub(crate) struct LineWatch<R> {
    inner: R,
    /// Bytes of the current line so far.
    line: usize,
    /// The current line was counted as too long.
    counted: bool,
    oversized: watch::Sender<u64>,
}

impl<R> LineWatch<R> {
    /// Watches `inner`; the receiver's value is how many lines were too long.
    pub(crate) fn new(inner: R) -> (Self, watch::Receiver<u64>) {
        let (oversized, seen) = watch::channel(0);
        let reader = Self {
            inner,
            line: 0,
            counted: false,
            oversized,
        };
        (reader, seen)
    }

    fn scan(&mut self, mut bytes: &[u8]) {
        loop {
            let end = bytes.iter().position(|&b| b == b'\n');
            self.line = self.line.saturating_add(end.unwrap_or(bytes.len()));
            // rmcp counts the newline too: a line of the limit's length is already dropped.
            if self.line >= MAX_LINE_BYTES && !self.counted {
                self.counted = true;
                self.oversized.send_modify(|n| *n += 1);
            }
            let Some(end) = end else { return };
            self.line = 0;
            self.counted = false;
            bytes = &bytes[end + 1..];
        }
    }
}

impl<R: AsyncRead + Unpin> AsyncRead for LineWatch<R> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        let before = buf.filled().len();
        let polled = Pin::new(&mut self.inner).poll_read(cx, buf);
        if let Poll::Ready(Ok(())) = polled {
            let this = &mut *self;
            this.scan(&buf.filled()[before..]);
        }
        polled
    }
}

/// Resolves when a message of the server was too long to read; never without a count to
/// watch. A call in flight is the one waiting for it: what it answered was dropped.
pub(crate) async fn dropped(oversized: &mut Option<watch::Receiver<u64>>) {
    if let Some(seen) = oversized
        && seen.changed().await.is_ok()
    {
        return;
    }
    std::future::pending().await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_line_past_the_limit_is_counted_once_however_it_arrives() {
        let (mut watch, seen) = LineWatch::new(tokio::io::empty());
        watch.scan(b"{\"short\":1}\n{\"also\":2}\n");
        assert_eq!(*seen.borrow(), 0);
        let chunk = vec![b'x'; MAX_LINE_BYTES / 4];
        for _ in 0..3 {
            watch.scan(&chunk);
        }
        watch.scan(&chunk[1..]);
        assert_eq!(
            *seen.borrow(),
            0,
            "one byte and the newline short of the limit"
        );
        watch.scan(b"x");
        watch.scan(&chunk);
        assert_eq!(*seen.borrow(), 1);
        watch.scan(b"tail\n{\"next\":3}\n");
        assert_eq!(*seen.borrow(), 1, "the next line starts afresh");
    }
}
