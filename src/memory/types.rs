//! The typed rows the rest of mnemo reads from and writes to the store. No SQL leaks past
//! `src/memory/`: callers only see these.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::llm::{Message, Usage};
use crate::protocol::TurnStatus;

/// Milliseconds since the Unix epoch.
pub type Millis = i64;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SessionRow {
    pub id: String,
    pub parent_id: Option<String>,
    pub created_at: Millis,
    pub updated_at: Millis,
    pub cwd: String,
    pub title: String,
    /// The current topic, from the turn report.
    pub subtitle: Option<String>,
    pub model: String,
    pub status: String,
    /// Every message of the session, active or archived.
    pub message_count: u64,
    /// The start of its last message with text (the person's or the model's), for pickers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub preview: Option<String>,
}

#[derive(Debug, Clone)]
pub struct NewSession {
    pub id: String,
    pub parent_id: Option<String>,
    pub cwd: String,
    pub model: String,
    pub title: String,
}

/// A message as stored: its place in the session and whether it is in the working set.
#[derive(Debug, Clone, PartialEq)]
pub struct StoredMessage {
    pub seq: i64,
    pub message: Message,
    pub tokens: u32,
    pub active: bool,
    pub created_at: Millis,
    /// For a user message sent while a turn ran: injected or queued.
    pub kind: Option<crate::protocol::UserMessageKind>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TurnRecord {
    pub session_id: String,
    pub turn: u64,
    pub status: TurnStatus,
    pub started_at: Millis,
    pub finished_at: Millis,
    pub usage: Usage,
    pub cost_usd: f64,
    pub report: Option<Value>,
}

/// Totals over a session's finished turns.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct SessionTotals {
    pub turns: u64,
    pub usage: Usage,
    pub cost_usd: f64,
}

#[derive(Debug, Clone)]
pub struct NewArchiveEntry {
    pub session_id: String,
    pub topic: String,
    pub summary: String,
    pub messages: Vec<Message>,
    pub token_count: u64,
    pub importance: f64,
    pub first_seq: i64,
    pub last_seq: i64,
    pub started_at: Millis,
    pub ended_at: Millis,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ArchiveEntry {
    pub id: i64,
    pub session_id: Option<String>,
    pub topic: String,
    pub summary: String,
    pub messages: Vec<Message>,
    pub token_count: u64,
    pub importance: f64,
    pub first_seq: i64,
    pub last_seq: i64,
    pub started_at: Millis,
    pub ended_at: Millis,
    pub created_at: Millis,
}

/// One search result with the parts of its score.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SearchHit {
    pub id: i64,
    /// An archive entry or an experience (`id` is its id in that kind).
    pub source: super::piece_index::Source,
    pub session_id: Option<String>,
    pub created_at: Millis,
    pub topic: String,
    pub summary: String,
    pub importance: f64,
    /// 1 for the best keyword match, 1/2 for the second and so on; 0 without a match.
    pub keyword: f64,
    /// The best piece's cosine with the query, when it was searched by meaning.
    pub semantic: Option<f64>,
    pub score: f64,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Scope {
    Global,
    /// A canonical workspace path.
    Project(String),
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Experience {
    pub id: i64,
    pub text: String,
    pub scope: Scope,
    pub created_at: Millis,
    /// Who wrote it: "user", "model", "turn_report", "compaction".
    pub source: String,
}
