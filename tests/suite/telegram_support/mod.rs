//! An in-test Telegram Bot API server: the real wire format (`POST /bot{token}/{method}`, JSON
//! in, `{"ok":...}` out) over HTTP/1.1 with keep-alive on 127.0.0.1, so the channel's real
//! HTTP client runs against it. Tests queue what users do (messages, button presses), look
//! at what the bot sent and edited, and script failures. Methods behave as Telegram's do:
//! long polling with offsets, per-chat message ids, HTML parse mode checked, the 4096
//! character limit, "message is not modified".

// Each test binary compiles this module and uses a different part of it.
#![allow(dead_code)]

mod api;
mod html;
mod http;

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use serde_json::{Value, json};
use tokio::net::TcpListener;
use tokio::sync::watch;
use tokio::task::JoinHandle;

pub use html::Entity;

/// The bot's own user id.
pub const BOT_ID: i64 = 7_000_000_001;

/// One request the server answered (or is still holding, as a long poll).
#[derive(Debug, Clone)]
pub struct Call {
    /// As written in the path.
    pub method: String,
    /// `Value::Null` for an empty body.
    pub body: Value,
    pub at: Instant,
    /// `None` while the request is held.
    pub status: Option<u16>,
}

/// A message the bot sent, as Telegram holds it now.
#[derive(Debug, Clone, PartialEq)]
pub struct BotMessage {
    pub message_id: i64,
    /// What the chat shows: entities decoded, tags gone, trimmed.
    pub text: String,
    /// The text as sent (or last edited to).
    pub raw: String,
    pub parse_mode: Option<String>,
    pub entities: Vec<Entity>,
    /// `Value::Null` without a keyboard.
    pub reply_markup: Value,
    pub edits: u32,
    pub edit_times: Vec<Instant>,
    pub deleted: bool,
}

/// A failure scripted for the next call of a method.
#[derive(Debug, Clone)]
struct Failure {
    method: String,
    status: u16,
    description: String,
    retry_after: Option<u64>,
}

#[derive(Debug, Default)]
struct State {
    revoked: bool,
    next_update_id: i64,
    /// Not yet confirmed by an offset, oldest first.
    updates: VecDeque<(i64, Value)>,
    /// Update kinds the bot asked for (`allowed_updates`); empty for all.
    allowed: Vec<String>,
    /// Bumped by each getUpdates: a held one that sees a newer one ends with 409, as on
    /// Telegram when two bot instances poll.
    poll_generation: u64,
    /// Message ids are per chat and shared by the user's and the bot's messages.
    last_message_id: HashMap<i64, i64>,
    messages: HashMap<i64, Vec<BotMessage>>,
    /// Callback query ids not answered yet.
    open_queries: Vec<String>,
    next_query: u64,
    failures: VecDeque<Failure>,
    calls: Vec<Call>,
    connections: usize,
}

impl State {
    fn next_message_id(&mut self, chat_id: i64) -> i64 {
        let id = self.last_message_id.entry(chat_id).or_insert(0);
        *id += 1;
        *id
    }

    fn push_update(&mut self, mut update: Value) -> i64 {
        let id = self.next_update_id;
        self.next_update_id += 1;
        if let Some(fields) = update.as_object_mut() {
            fields.insert("update_id".into(), json!(id));
        }
        self.updates.push_back((id, update));
        id
    }
}

/// What the HTTP side and the test side share.
struct Shared {
    token: String,
    state: Mutex<State>,
    /// Bumped whenever an update arrives or a poll starts, to wake held long polls.
    wake: watch::Sender<u64>,
}

impl Shared {
    fn state(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn wake(&self) {
        self.wake.send_modify(|n| *n += 1);
    }
}

/// The server; it stops, dropping held requests, when dropped.
pub struct BotServer {
    shared: Arc<Shared>,
    base_url: String,
    task: JoinHandle<()>,
}

impl BotServer {
    /// Serves the bot with `token` on a free port.
    pub async fn start(token: &str) -> std::io::Result<Self> {
        let listener = TcpListener::bind("127.0.0.1:0").await?;
        let base_url = format!("http://{}", listener.local_addr()?);
        let shared = Arc::new(Shared {
            token: token.to_string(),
            state: Mutex::new(State {
                next_update_id: 500_000_001,
                ..State::default()
            }),
            wake: watch::channel(0).0,
        });
        let task = tokio::spawn(http::accept(listener, Arc::clone(&shared)));
        Ok(Self {
            shared,
            base_url,
            task,
        })
    }

    /// `http://127.0.0.1:PORT`; requests go to `{base_url}/bot{token}/{method}`.
    pub fn base_url(&self) -> String {
        self.base_url.clone()
    }

    /// Queues a text message from the private chat `chat_id` (its user has the same id and is
    /// called Ada); returns the update's id.
    pub fn send_text(&self, chat_id: i64, text: &str) -> i64 {
        let mut state = self.shared.state();
        let message_id = state.next_message_id(chat_id);
        let mut message = json!({
            "message_id": message_id,
            "date": unix_now(),
            "chat": chat(chat_id),
            "from": user(chat_id),
            "text": text,
        });
        if text.starts_with('/') {
            let command = text.split_whitespace().next().unwrap_or(text);
            let length = command.encode_utf16().count();
            message["entities"] = json!([{"type": "bot_command", "offset": 0, "length": length}]);
        }
        let id = state.push_update(json!({ "message": message }));
        drop(state);
        self.shared.wake();
        id
    }

    /// Queues a press on an inline button of the bot's message `message_id`; returns the
    /// update's id and the callback query's id (to answer with answerCallbackQuery).
    pub fn press_button(&self, chat_id: i64, message_id: i64, data: &str) -> (i64, String) {
        let mut state = self.shared.state();
        state.next_query += 1;
        let query_id = format!("{}", 4_200_000_000_000u64 + state.next_query);
        let message = state
            .messages
            .get(&chat_id)
            .and_then(|all| all.iter().find(|m| m.message_id == message_id))
            .map_or_else(
                || json!({"message_id": message_id, "date": unix_now(), "chat": chat(chat_id)}),
                |m| api::message_json(chat_id, m),
            );
        state.open_queries.push(query_id.clone());
        let id = state.push_update(json!({
            "callback_query": {
                "id": query_id,
                "from": user(chat_id),
                "message": message,
                "chat_instance": format!("{}", -chat_id),
                "data": data,
            }
        }));
        drop(state);
        self.shared.wake();
        (id, query_id)
    }

    /// Queues any update; the server sets its `update_id`, which it returns.
    pub fn push_update(&self, update: Value) -> i64 {
        let id = self.shared.state().push_update(update);
        self.shared.wake();
        id
    }

    /// The next call of `method` (not yet served) fails with this error and has no effect.
    /// Several may be queued.
    pub fn fail_next(
        &self,
        method: &str,
        status: u16,
        description: &str,
        retry_after: Option<u64>,
    ) {
        self.shared.state().failures.push_back(Failure {
            method: method.to_string(),
            status,
            description: description.to_string(),
            retry_after,
        });
    }

    /// From now on every call fails with 401 Unauthorized, as after the token is revoked.
    pub fn revoke_token(&self) {
        self.shared.state().revoked = true;
        self.shared.wake();
    }

    /// Every call so far, in the order they arrived.
    pub fn calls(&self) -> Vec<Call> {
        self.shared.state().calls.clone()
    }

    /// The calls of one method.
    pub fn calls_of(&self, method: &str) -> Vec<Call> {
        let calls = self.calls();
        calls.into_iter().filter(|c| c.method == method).collect()
    }

    /// The bot's messages in `chat_id`, oldest first, deleted ones included (marked).
    pub fn messages(&self, chat_id: i64) -> Vec<BotMessage> {
        let state = self.shared.state();
        state.messages.get(&chat_id).cloned().unwrap_or_default()
    }

    /// How many connections clients opened: fewer than calls when they keep them alive.
    pub fn connections(&self) -> usize {
        self.shared.state().connections
    }

    /// Updates not yet confirmed by a getUpdates offset.
    pub fn pending_updates(&self) -> usize {
        self.shared.state().updates.len()
    }

    /// Checks `f` every 10 ms until it gives a value or `timeout` passes.
    pub async fn wait_until<T>(
        &self,
        timeout: Duration,
        mut f: impl FnMut(&BotServer) -> Option<T>,
    ) -> Option<T> {
        let deadline = tokio::time::Instant::now() + timeout;
        loop {
            if let Some(value) = f(self) {
                return Some(value);
            }
            if tokio::time::Instant::now() >= deadline {
                return None;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }
}

impl Drop for BotServer {
    fn drop(&mut self) {
        self.task.abort();
    }
}

fn chat(chat_id: i64) -> Value {
    json!({"id": chat_id, "type": "private", "first_name": "Ada"})
}

fn user(user_id: i64) -> Value {
    json!({"id": user_id, "is_bot": false, "first_name": "Ada", "language_code": "en"})
}

fn bot_user() -> Value {
    json!({"id": BOT_ID, "is_bot": true, "first_name": "mnemo", "username": "mnemo_test_bot"})
}

fn unix_now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}
