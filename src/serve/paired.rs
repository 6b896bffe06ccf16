//! The daemon tells a Telegram chat that a terminal paired it: the terminal that ran
//! `mnemo telegram pair` often lacks the bot's token (under systemd only the unit has it).

use std::sync::Arc;
use std::time::Duration;

use futures_util::future::BoxFuture;

use crate::channels::telegram::api::BotApi;
use crate::channels::telegram::format::{self, MESSAGE_LIMIT};
use crate::channels::telegram::pairing::paired_message;
use crate::gateway::PairedChats;
use crate::jobs::delivery::Log;

/// The longest wait for the Bot API to take one message.
const SEND_LIMIT: Duration = Duration::from_secs(10);

pub struct TellPaired {
    pub api: BotApi,
    pub log: Arc<Log>,
}

impl TellPaired {
    async fn tell(&self, chat: i64) -> bool {
        let message = paired_message(&crate::memory::leases::host_name(), true);
        for chunk in format::render(&message, MESSAGE_LIMIT) {
            let sent = tokio::time::timeout(SEND_LIMIT, self.api.send(chat, &chunk, None)).await;
            let failure = match sent {
                Ok(Ok(_)) => continue,
                Ok(Err(err)) => err.to_string(),
                Err(_) => format!("no answer in {} s", SEND_LIMIT.as_secs()),
            };
            self.log.line(&format!(
                "telegram: cannot tell chat {chat} it is paired: {failure}"
            ));
            return false;
        }
        self.log
            .line(&format!("telegram: told chat {chat} it is paired"));
        true
    }
}

impl PairedChats for TellPaired {
    fn paired(&self, chat: i64) -> BoxFuture<'_, bool> {
        Box::pin(self.tell(chat))
    }
}
