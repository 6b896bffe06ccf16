//! Heartbeat and schedule reports sent to the paired chats (`deliver: telegram`) or to one
//! of them (`deliver: telegram:CHAT_ID`).

use futures_util::future::BoxFuture;

use super::api::BotApi;
use super::format::{self, MESSAGE_LIMIT};
use super::text::escape_markdown;
use crate::jobs::delivery::{Deliver, DeliveryError, Report};
use crate::memory::Store;

pub struct TelegramDelivery {
    api: BotApi,
    store: Store,
}

impl TelegramDelivery {
    pub fn new(api: BotApi, store: Store) -> Self {
        Self { api, store }
    }

    async fn send(&self, to: Option<i64>, report: &Report) -> Result<(), DeliveryError> {
        let failed = |message: String| DeliveryError {
            channel: "telegram",
            message,
        };
        let chats = self
            .store
            .call(|db| db.paired_chats())
            .await
            .map_err(|e| failed(e.to_string()))?;
        let chats: Vec<i64> = chats
            .into_iter()
            .map(|chat| chat.chat_id)
            .filter(|chat| to.is_none_or(|to| to == *chat))
            .collect();
        if chats.is_empty() {
            return Err(failed(match to {
                Some(chat) => format!("chat {chat} is not paired"),
                None => "no chat is paired (`mnemo telegram pair`)".into(),
            }));
        }
        let markdown = format!("**{}**\n\n{}", escape_markdown(&report.job), report.text);
        let chunks = format::render(&markdown, MESSAGE_LIMIT);
        let mut errors = Vec::new();
        for chat in chats {
            for chunk in &chunks {
                if let Err(err) = self.api.send(chat, chunk, None).await {
                    errors.push(format!("chat {chat}: {err}"));
                    break;
                }
            }
        }
        match errors.is_empty() {
            true => Ok(()),
            false => Err(failed(errors.join("; "))),
        }
    }
}

impl Deliver for TelegramDelivery {
    fn deliver<'a>(
        &'a self,
        to: Option<i64>,
        report: &'a Report,
    ) -> BoxFuture<'a, Result<(), DeliveryError>> {
        Box::pin(self.send(to, report))
    }
}
