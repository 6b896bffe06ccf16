//! The Bot API over reqwest: a handful of JSON methods, so no Bot API crate is needed (and the
//! base URL stays configurable for self-hosted servers and tests). The token is part of every
//! URL, so no URL ever reaches an error message or a log.

use std::time::Duration;

use serde::Deserialize;
use serde_json::{Value, json};

use super::format::Chunk;

/// Every call but the long poll gets this long.
const CALL_TIMEOUT: Duration = Duration::from_secs(30);
/// The long poll gets its own wait plus this much.
const POLL_SLACK: Duration = Duration::from_secs(10);

#[derive(Debug, Clone, thiserror::Error)]
pub enum ApiError {
    #[error("Telegram refused the bot token (401 Unauthorized)")]
    Unauthorized,
    #[error("Telegram asks to wait {0:?} (429 Too Many Requests)")]
    RetryAfter(Duration),
    #[error("Telegram refused {method}: {description} ({status})")]
    Refused {
        method: &'static str,
        status: u16,
        description: String,
    },
    #[error("cannot reach the Bot API: {0}")]
    Transport(String),
}

impl ApiError {
    /// Whether the HTML of a message was refused (then it goes again as plain text).
    fn bad_markup(&self) -> bool {
        matches!(self, ApiError::Refused { status: 400, description, .. }
            if description.contains("can't parse entities"))
    }

    /// Whether an edit changed nothing (not a failure for a message being streamed).
    pub fn not_modified(&self) -> bool {
        matches!(self, ApiError::Refused { status: 400, description, .. }
            if description.contains("message is not modified"))
    }
}

#[derive(Deserialize)]
struct Answer {
    ok: bool,
    #[serde(default)]
    result: Value,
    #[serde(default)]
    error_code: Option<u16>,
    #[serde(default)]
    description: Option<String>,
    #[serde(default)]
    parameters: Option<Parameters>,
}

#[derive(Deserialize)]
struct Parameters {
    #[serde(default)]
    retry_after: Option<u64>,
}

/// A Bot API client for one bot.
#[derive(Clone)]
pub struct BotApi {
    http: reqwest::Client,
    /// `{base_url}/bot{token}/`: a secret.
    prefix: String,
}

impl std::fmt::Debug for BotApi {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("BotApi { .. }")
    }
}

impl BotApi {
    pub fn new(base_url: &str, token: &str) -> Self {
        let http = reqwest::Client::builder()
            .connect_timeout(Duration::from_secs(10))
            .build()
            .unwrap_or_else(|_| reqwest::Client::new());
        Self {
            http,
            prefix: format!("{}/bot{token}/", base_url.trim_end_matches('/')),
        }
    }

    async fn call(
        &self,
        method: &'static str,
        body: Value,
        timeout: Duration,
    ) -> Result<Value, ApiError> {
        let sent = self
            .http
            .post(format!("{}{method}", self.prefix))
            .timeout(timeout)
            .json(&body)
            .send()
            .await
            .map_err(|e| ApiError::Transport(e.without_url().to_string()))?;
        let status = sent.status().as_u16();
        let bytes = sent
            .bytes()
            .await
            .map_err(|e| ApiError::Transport(e.without_url().to_string()))?;
        let answer: Answer = serde_json::from_slice(&bytes).map_err(|_| ApiError::Refused {
            method,
            status,
            description: format!("an answer that is not Bot API JSON (HTTP {status})"),
        })?;
        if answer.ok {
            return Ok(answer.result);
        }
        let code = answer.error_code.unwrap_or(status);
        let retry_after = answer.parameters.and_then(|p| p.retry_after);
        Err(match (code, retry_after) {
            (401, _) => ApiError::Unauthorized,
            (429, after) => ApiError::RetryAfter(Duration::from_secs(after.unwrap_or(1))),
            (code, _) => ApiError::Refused {
                method,
                status: code,
                description: answer.description.unwrap_or_default(),
            },
        })
    }

    /// The updates from `offset` on (which confirms every earlier one), waiting up to `wait`
    /// for the first. Each comes raw: one the channel cannot read is skipped, not fatal.
    pub async fn get_updates(&self, offset: i64, wait: Duration) -> Result<Vec<Value>, ApiError> {
        let body = json!({
            "offset": offset,
            "timeout": wait.as_secs(),
            "allowed_updates": ["message", "callback_query"],
        });
        let result = self.call("getUpdates", body, wait + POLL_SLACK).await?;
        Ok(match result {
            Value::Array(updates) => updates,
            _ => Vec::new(),
        })
    }

    /// Sends `chunk` as a new message; its id.
    pub async fn send(
        &self,
        chat: i64,
        chunk: &Chunk,
        markup: Option<&Value>,
    ) -> Result<i64, ApiError> {
        let sent = self
            .with_fallback("sendMessage", json!({"chat_id": chat}), chunk, markup)
            .await?;
        Ok(sent["message_id"].as_i64().unwrap_or_default())
    }

    /// Replaces the text of message `id`.
    pub async fn edit(
        &self,
        chat: i64,
        id: i64,
        chunk: &Chunk,
        markup: Option<&Value>,
    ) -> Result<(), ApiError> {
        let target = json!({"chat_id": chat, "message_id": id});
        self.with_fallback("editMessageText", target, chunk, markup)
            .await
            .map(drop)
    }

    /// Sends the HTML, and the plain text when Telegram cannot parse the HTML: a reply must
    /// never be lost to formatting.
    async fn with_fallback(
        &self,
        method: &'static str,
        mut body: Value,
        chunk: &Chunk,
        markup: Option<&Value>,
    ) -> Result<Value, ApiError> {
        if let Some(markup) = markup {
            body["reply_markup"] = markup.clone();
        }
        body["link_preview_options"] = json!({"is_disabled": true});
        let mut html = body.clone();
        html["text"] = json!(chunk.html);
        html["parse_mode"] = json!("HTML");
        match self.call(method, html, CALL_TIMEOUT).await {
            Err(err) if err.bad_markup() => {
                body["text"] = json!(chunk.plain);
                self.call(method, body, CALL_TIMEOUT).await
            }
            other => other,
        }
    }

    /// Takes the buttons off message `id`.
    pub async fn remove_buttons(&self, chat: i64, id: i64) -> Result<(), ApiError> {
        let body =
            json!({"chat_id": chat, "message_id": id, "reply_markup": {"inline_keyboard": []}});
        self.call("editMessageReplyMarkup", body, CALL_TIMEOUT)
            .await
            .map(drop)
    }

    /// Ends the spinner of a pressed button, with a short notice.
    pub async fn answer_callback(&self, id: &str, text: &str) -> Result<(), ApiError> {
        let body = json!({"callback_query_id": id, "text": text});
        self.call("answerCallbackQuery", body, CALL_TIMEOUT)
            .await
            .map(drop)
    }

    /// The commands Telegram offers in the chat's menu.
    pub async fn set_commands(&self, commands: &[(&str, &str)]) -> Result<(), ApiError> {
        let list: Vec<Value> = commands
            .iter()
            .map(|(command, description)| json!({"command": command, "description": description}))
            .collect();
        self.call("setMyCommands", json!({"commands": list}), CALL_TIMEOUT)
            .await
            .map(drop)
    }
}
