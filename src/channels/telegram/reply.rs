//! One streamed reply as Telegram messages: the markdown grows with the model's text and tool
//! lines, and `flush` says which messages to send or edit so the chat shows it. A message is
//! edited at most once per `EDIT_EVERY` (Telegram limits edits, and a phone need not redraw
//! faster); text past the message limit goes on in a new message. Pure: the chat task does
//! the calls.

use std::time::Duration;

use tokio::time::Instant;

use super::format::{self, Chunk, MESSAGE_LIMIT};

/// The shortest time between two changes of the reply's messages.
pub const EDIT_EVERY: Duration = Duration::from_secs(1);

/// What the chat must do for the reply to show.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Change {
    /// Send chunk `index` as a new message, then report its id with `sent`.
    Send { index: usize, chunk: Chunk },
    /// Edit message `id` to show `chunk`.
    Edit { id: i64, chunk: Chunk },
}

#[derive(Debug, Default)]
pub struct Reply {
    markdown: String,
    /// The messages sent so far: id and the HTML they show.
    shown: Vec<(i64, String)>,
    last_change: Option<Instant>,
    /// Text came since the last flush.
    dirty: bool,
    /// Where the text of the model's current step starts, so a retried step can be taken back.
    step_from: usize,
}

impl Reply {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn push_text(&mut self, text: &str) {
        if !text.is_empty() {
            self.markdown.push_str(text);
            self.dirty = true;
        }
    }

    /// A line of its own (a tool call, a notice), as a separate paragraph.
    pub fn push_line(&mut self, line: &str) {
        self.paragraph_break();
        self.markdown.push_str(line);
        self.markdown.push_str("\n\n");
        self.step_from = self.markdown.len();
        self.dirty = true;
    }

    /// The model's step is streamed again from the start: the text it streamed so far goes.
    pub fn discard_step(&mut self) {
        if self.step_from < self.markdown.len() {
            self.markdown.truncate(self.step_from);
            self.dirty = true;
        }
    }

    /// The model's step ended: its next text starts a new paragraph.
    pub fn paragraph_break(&mut self) {
        let trimmed = self.markdown.trim_end_matches([' ', '\t']);
        if trimmed.is_empty() || trimmed.ends_with("\n\n") {
            self.step_from = self.markdown.len();
            return;
        }
        let missing = if trimmed.ends_with('\n') {
            "\n"
        } else {
            "\n\n"
        };
        self.markdown.truncate(trimmed.len());
        self.markdown.push_str(missing);
        self.step_from = self.markdown.len();
    }

    /// When the reply may change next: `None` when it shows everything it holds.
    pub fn due(&self) -> Option<Instant> {
        if !self.dirty || self.markdown.trim().is_empty() {
            return None;
        }
        Some(match self.last_change {
            Some(at) => at + EDIT_EVERY,
            None => Instant::now(),
        })
    }

    /// The sends and edits that make the chat show the reply now; nothing before `due`.
    pub fn flush(&mut self, now: Instant) -> Vec<Change> {
        let ready = self.last_change.is_none_or(|at| now >= at + EDIT_EVERY);
        if self.due().is_none() || !ready {
            return Vec::new();
        }
        self.dirty = false;
        let chunks = format::render(&self.markdown, MESSAGE_LIMIT);
        let mut changes = Vec::new();
        for (index, chunk) in chunks.into_iter().enumerate() {
            match self.shown.get_mut(index) {
                Some((id, shown)) if *shown != chunk.html => {
                    shown.clone_from(&chunk.html);
                    changes.push(Change::Edit { id: *id, chunk });
                }
                Some(_) => {}
                None => changes.push(Change::Send { index, chunk }),
            }
        }
        if !changes.is_empty() {
            self.last_change = Some(now);
        }
        changes
    }

    /// Chunk `index` went out as message `id`, showing `html`.
    pub fn sent(&mut self, index: usize, id: i64, html: String) {
        if index == self.shown.len() {
            self.shown.push((id, html));
        }
    }

    /// Nothing was shown yet.
    pub fn is_empty(&self) -> bool {
        self.markdown.trim().is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_discarded_step_takes_back_only_its_own_text() {
        let mut reply = Reply::new();
        reply.push_text("First step.");
        reply.paragraph_break();
        reply.push_line("🔧 _shell_");
        reply.push_text("Hello from ");
        reply.discard_step();
        reply.push_text("Hello from the mock.");
        assert_eq!(
            reply.markdown,
            "First step.\n\n🔧 _shell_\n\nHello from the mock."
        );
        reply.discard_step();
        reply.discard_step();
        assert_eq!(reply.markdown, "First step.\n\n🔧 _shell_\n\n");
    }

    fn apply(reply: &mut Reply, changes: Vec<Change>, next_id: &mut i64) -> (usize, usize) {
        let (mut sends, mut edits) = (0, 0);
        for change in changes {
            match change {
                Change::Send { index, chunk } => {
                    *next_id += 1;
                    reply.sent(index, *next_id, chunk.html);
                    sends += 1;
                }
                Change::Edit { .. } => edits += 1,
            }
        }
        (sends, edits)
    }

    #[test]
    fn the_first_text_goes_out_at_once_and_edits_wait_a_second() {
        let mut reply = Reply::new();
        let start = Instant::now();
        let mut id = 0;
        reply.push_text("Hello");
        let first = reply.flush(start);
        assert_eq!(apply(&mut reply, first, &mut id), (1, 0));
        reply.push_text(", world");
        assert!(reply.flush(start + Duration::from_millis(300)).is_empty());
        assert_eq!(reply.due(), Some(start + EDIT_EVERY));
        let later = reply.flush(start + EDIT_EVERY);
        assert_eq!(apply(&mut reply, later, &mut id), (0, 1));
        assert_eq!(reply.due(), None, "everything is shown");
    }

    #[test]
    fn text_past_the_limit_goes_on_in_a_new_message() {
        let mut reply = Reply::new();
        let start = Instant::now();
        let mut id = 0;
        reply.push_text(&"word ".repeat(500));
        let first = reply.flush(start);
        assert_eq!(apply(&mut reply, first, &mut id), (1, 0));
        reply.push_text(&"more ".repeat(1000));
        let later = reply.flush(start + EDIT_EVERY);
        assert_eq!(apply(&mut reply, later, &mut id), (1, 1));
    }

    #[test]
    fn tool_lines_are_paragraphs_of_their_own() {
        let mut reply = Reply::new();
        reply.push_text("Let me look.");
        reply.push_line("🔧 read_file · src/main.rs");
        reply.push_text("Found it.");
        assert_eq!(
            reply.markdown,
            "Let me look.\n\n🔧 read_file · src/main.rs\n\nFound it."
        );
    }
}
