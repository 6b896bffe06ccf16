//! `[telegram]`: the channel `mnemo serve` runs so a person can talk to mnemo from a phone
//! (`src/channels/telegram/`). An untrusted workspace file cannot set it: `base_url` decides where the
//! bot token goes.

use std::path::PathBuf;
use std::time::Duration;

use serde::{Deserialize, Serialize};

/// Telegram's own Bot API server.
pub const TELEGRAM_API: &str = "https://api.telegram.org";

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct TelegramConfig {
    /// Whether `mnemo serve` runs the channel.
    pub enabled: bool,
    /// The environment variable holding the bot token (the token itself is never in a file).
    pub bot_token_env: String,
    /// The Bot API server: Telegram's, or a self-hosted one.
    pub base_url: String,
    /// Where new chats' sessions work; the daemon's workspace when unset.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub workspace: Option<PathBuf>,
    /// The model of new chats' sessions (a `[models]` entry); the default model when unset.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// A question about a tool call left unanswered this long is a denial.
    pub approval_timeout_secs: u64,
    /// How long one `getUpdates` call waits for news.
    pub poll_timeout_secs: u64,
}

impl Default for TelegramConfig {
    fn default() -> Self {
        Self {
            enabled: false,
            bot_token_env: "TELEGRAM_BOT_TOKEN".into(),
            base_url: TELEGRAM_API.into(),
            workspace: None,
            model: None,
            approval_timeout_secs: 600,
            poll_timeout_secs: 30,
        }
    }
}

impl TelegramConfig {
    pub fn approval_timeout(&self) -> Duration {
        Duration::from_secs(self.approval_timeout_secs.max(1))
    }

    pub fn poll_timeout(&self) -> Duration {
        Duration::from_secs(self.poll_timeout_secs.clamp(1, 50))
    }
}
