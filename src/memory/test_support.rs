//! Builders shared by the store's unit tests.

use super::types::{NewArchiveEntry, NewSession};
use crate::llm::Message;

pub fn new_session(id: &str, cwd: &str) -> NewSession {
    NewSession {
        id: id.to_owned(),
        parent_id: None,
        cwd: cwd.to_owned(),
        model: "test-model".to_owned(),
        title: format!("title of {id}"),
    }
}

/// An archive entry for `session_id` covering `first_seq..=last_seq`, with the given text as
/// its only message.
pub fn new_entry(session_id: &str, topic: &str, text: &str, seqs: (i64, i64)) -> NewArchiveEntry {
    NewArchiveEntry {
        session_id: session_id.to_owned(),
        topic: topic.to_owned(),
        summary: format!("summary of {topic}"),
        messages: vec![Message::user_text(text)],
        token_count: 10,
        importance: 0.5,
        first_seq: seqs.0,
        last_seq: seqs.1,
        started_at: 1,
        ended_at: 2,
    }
}
