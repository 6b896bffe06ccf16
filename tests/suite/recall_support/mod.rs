//! Planting remembered conversations for recall tests and the recall benches: a session whose
//! messages are archived as compaction archives them (with a mechanical summary).

#![allow(dead_code)]

use mnemo::llm::{ContentBlock, Message};
use mnemo::memory::{NewArchiveEntry, NewSession, Store};

/// A user request and the assistant's answer.
pub fn turn(user: &str, assistant: &str) -> [Message; 2] {
    [
        Message::user_text(user.to_string()),
        Message::assistant(vec![ContentBlock::Text {
            text: assistant.to_string(),
        }]),
    ]
}

/// Creates session `n` (in `/ws`) and archives `messages` as its one entry; the entry's id.
pub async fn archive_session(
    store: &Store,
    n: usize,
    messages: Vec<Message>,
) -> Result<i64, Box<dyn std::error::Error>> {
    let (topic, summary) = mnemo::memory::mechanical_summary(&messages);
    let session = format!("session-{n}");
    let entry = NewArchiveEntry {
        session_id: session.clone(),
        topic: topic.unwrap_or_default(),
        summary,
        token_count: 200,
        importance: 0.5,
        first_seq: 1,
        last_seq: messages.len() as i64,
        started_at: n as i64 * 1000,
        ended_at: n as i64 * 1000 + 500,
        messages,
    };
    let id = store
        .call(move |db| {
            db.create_session(NewSession {
                id: session,
                parent_id: None,
                cwd: "/ws".into(),
                model: "m".into(),
                title: String::new(),
            })?;
            db.archive_messages(entry)
        })
        .await?;
    Ok(id)
}
