//! The Telegram channel: `mnemo serve` long-polls the Bot API and gives each paired chat a
//! session of its host, as one more front end. A chat nobody paired gets a pairing code and
//! nothing else; its owner pairs it from a terminal (`mnemo telegram pair CODE`).

pub mod api;
pub mod chat;
pub mod deliver;
pub mod format;
pub mod pairing;
pub mod questions;
pub mod reply;
pub mod text;
pub mod types;

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use crate::config::CliOverrides;
use crate::config::telegram::TelegramConfig;
use crate::host::{Attachment, Delivery, HostApi, LocalHost, OpenOptions, SessionHost};
use crate::host::{Loaded, SessionChoice};
use crate::jobs::delivery::Log;
use crate::memory::Store;
use api::{ApiError, BotApi};
use chat::Input;
use types::{Message, Update};

/// The longest wait between two failed polls.
const MAX_BACKOFF: Duration = Duration::from_secs(60);

/// The commands Telegram lists in the chat's menu.
const COMMANDS: &[(&str, &str)] = &[
    ("stop", "Interrupt the running turn"),
    ("new", "Start a new session"),
    ("sessions", "List this chat's sessions"),
    ("resume", "Continue a session: /resume ID"),
    ("help", "What this bot does"),
];

/// What the channel and its chats share.
pub struct Ctx {
    pub api: BotApi,
    /// The channel's own state: pairings, the update offset, deliveries.
    pub store: Store,
    /// Where the chats' sessions run.
    pub host: LocalHost,
    /// The daemon's configuration (and its shared store and embedder).
    pub loaded: Arc<Loaded>,
    pub cli: CliOverrides,
    pub config: TelegramConfig,
    pub log: Arc<Log>,
    pub cancel: CancellationToken,
}

#[derive(Debug, thiserror::Error)]
pub enum TelegramError {
    #[error("the Telegram channel is enabled but ${0} (its bot token) is not set")]
    NoToken(String),
    #[error(transparent)]
    Launch(#[from] crate::host::LaunchError),
}

impl Ctx {
    /// The channel's context from the daemon's configuration, the token from its variable.
    pub fn new(
        loaded: Arc<Loaded>,
        host: SessionHost,
        cli: CliOverrides,
        log: Arc<Log>,
        cancel: CancellationToken,
    ) -> Result<Ctx, TelegramError> {
        let variable = &loaded.config.telegram.bot_token_env;
        let token = std::env::var(variable)
            .ok()
            .filter(|t| !t.trim().is_empty())
            .ok_or_else(|| TelegramError::NoToken(variable.clone()))?;
        Self::with_token(loaded, host, cli, log, cancel, token.trim())
    }

    pub fn with_token(
        loaded: Arc<Loaded>,
        host: SessionHost,
        cli: CliOverrides,
        log: Arc<Log>,
        cancel: CancellationToken,
        token: &str,
    ) -> Result<Ctx, TelegramError> {
        let config = loaded.config.telegram.clone();
        Ok(Ctx {
            api: BotApi::new(&config.base_url, token),
            store: loaded.store()?,
            host: LocalHost::new(host, loaded.clone()),
            loaded,
            cli,
            config,
            log,
            cancel,
        })
    }

    pub fn log(&self, line: &str) {
        self.log.line(&format!("telegram: {line}"));
    }

    async fn set_state(&self, state: String) {
        let _ = self
            .store
            .call(move |db| db.set_telegram_state(&state))
            .await;
    }

    /// Opens a session for a chat: in the configured workspace with the configured model
    /// when new, in its own workspace when resumed.
    pub async fn open(&self, choice: SessionChoice) -> Result<Attachment, String> {
        let mut cli = self.cli.clone();
        let workspace = match &choice {
            SessionChoice::Resume(id) => {
                let row = self.host.stored_session(id.clone()).await;
                match row {
                    Ok(row) => PathBuf::from(row.cwd),
                    // Not stored yet (it never got a message): a new one.
                    Err(_) => return Box::pin(self.open(SessionChoice::New)).await,
                }
            }
            _ => {
                if let Some(model) = &self.config.model {
                    cli.model = Some(model.clone());
                }
                self.config
                    .workspace
                    .clone()
                    .unwrap_or_else(|| self.loaded.workspace.clone())
            }
        };
        let loaded = self
            .loaded
            .for_workspace(&workspace, &cli)
            .map_err(|e| e.to_string())?;
        let options = OpenOptions {
            approval_mode: None,
            questions: true,
            delivery: Delivery::Wait,
        };
        self.host
            .open(&loaded, &cli, choice, options)
            .await
            .map_err(|e| e.to_string())
    }
}

/// Polls for updates until `ctx.cancel`, or until Telegram refuses the token.
pub async fn run(ctx: Arc<Ctx>) {
    let mut offset = match ctx.store.call(|db| db.telegram_offset()).await {
        Ok(offset) => offset,
        Err(err) => {
            ctx.log(&format!(
                "cannot read the update offset, not polling: {err}"
            ));
            return;
        }
    };
    ctx.set_state("polling for messages".into()).await;
    ctx.log("polling for messages");
    let mut chats: HashMap<i64, mpsc::Sender<Input>> = HashMap::new();
    let mut backoff = Duration::ZERO;
    // The menu is a nicety: one try per start (a refused token shows in the poll below).
    if let Err(err) = ctx.api.set_commands(COMMANDS).await {
        ctx.log(&format!("cannot set the command menu: {err}"));
    }
    loop {
        let wait = ctx.config.poll_timeout();
        let polled = tokio::select! {
            polled = ctx.api.get_updates(offset, wait) => polled,
            () = ctx.cancel.cancelled() => break,
        };
        let pause = match polled {
            Ok(updates) => {
                backoff = Duration::ZERO;
                for raw in updates {
                    let id = raw["update_id"].as_i64().unwrap_or(offset);
                    if id < offset {
                        continue;
                    }
                    // One the channel cannot read is skipped, not retried for ever.
                    if let Ok(update) = serde_json::from_value::<Update>(raw) {
                        handle(&ctx, &mut chats, update).await;
                    }
                    offset = id + 1;
                    let stored = ctx.store.call(move |db| db.set_telegram_offset(offset));
                    if let Err(err) = stored.await {
                        ctx.log(&format!("cannot store the update offset: {err}"));
                    }
                }
                Duration::ZERO
            }
            Err(ApiError::Unauthorized) => {
                let why = format!(
                    "stopped: Telegram refused the bot token (401 Unauthorized); set a valid \
                     token in ${} and restart mnemo serve",
                    ctx.config.bot_token_env
                );
                ctx.log(&why);
                ctx.set_state(why).await;
                return;
            }
            Err(ApiError::RetryAfter(wait)) => wait,
            Err(err) => {
                backoff = (backoff * 2).clamp(Duration::from_secs(1), MAX_BACKOFF);
                ctx.log(&format!("{err}; polling again in {}s", backoff.as_secs()));
                backoff
            }
        };
        if !pause.is_zero() {
            tokio::select! {
                () = tokio::time::sleep(pause) => {}
                () = ctx.cancel.cancelled() => break,
            }
        }
    }
    ctx.set_state("stopped with mnemo serve".into()).await;
}

/// Routes one update: a paired chat's message or button to its task, a stranger's message to
/// pairing.
async fn handle(ctx: &Arc<Ctx>, chats: &mut HashMap<i64, mpsc::Sender<Input>>, update: Update) {
    let (message, input) = match (update.message, update.callback_query) {
        (Some(message), _) => {
            let text = message.text.clone();
            (message, text.map(Input::Text))
        }
        (None, Some(query)) => match query.message {
            Some(message) => {
                let input = Input::Button {
                    query: query.id,
                    data: query.data.unwrap_or_default(),
                };
                (message, Some(input))
            }
            None => return,
        },
        (None, None) => return,
    };
    // In a group, anyone in it could talk to the agent: only private chats are served.
    if message.chat.kind != "private" {
        return;
    }
    let chat_id = message.chat.id;
    let paired = ctx.store.call(move |db| db.paired_chat(chat_id)).await;
    let paired = match paired {
        Ok(paired) => paired,
        Err(err) => return ctx.log(&format!("cannot read the paired chats: {err}")),
    };
    let Some(paired) = paired else {
        chats.remove(&chat_id);
        if let Some(Input::Button { query, .. }) = &input {
            let _ = ctx
                .api
                .answer_callback(query, "This chat is not paired.")
                .await;
            return;
        }
        return pair(ctx, &message).await;
    };
    let Some(input) = input else {
        let note = format::Chunk {
            html: "Only text messages reach mnemo.".into(),
            plain: "Only text messages reach mnemo.".into(),
        };
        let _ = ctx.api.send(chat_id, &note, None).await;
        return;
    };
    let inbox = chats
        .entry(chat_id)
        .or_insert_with(|| chat::spawn(ctx.clone(), chat_id, paired.session_id.clone()));
    if let Err(mpsc::error::SendError(input)) = inbox.send(input).await {
        // The chat's task ended (idle): a new one takes the message.
        let inbox = chat::spawn(ctx.clone(), chat_id, paired.session_id);
        let _ = inbox.send(input).await;
        chats.insert(chat_id, inbox);
    }
}

/// Answers a chat nobody paired: a code, or nothing when it got one lately.
async fn pair(ctx: &Ctx, message: &Message) {
    let (chat_id, name) = (message.chat.id, message.chat.name());
    let now = chrono::Utc::now().timestamp_millis();
    let decided = ctx
        .store
        .call(move |db| {
            let existing = db.telegram_pairing(chat_id)?;
            let Some(code) =
                pairing::answer(existing.as_ref(), chat_id, &name, now, pairing::new_code)
            else {
                return Ok(None);
            };
            let expired = now - pairing::CODE_LIFETIME_MS;
            db.put_telegram_pairing(&code, expired, pairing::MAX_WAITING)?;
            Ok(Some(code))
        })
        .await;
    match decided {
        Ok(Some(code)) => {
            let html = pairing::code_message(&code.code);
            let chunk = format::Chunk {
                plain: text::plain_of(&html),
                html,
            };
            if let Err(err) = ctx.api.send(chat_id, &chunk, None).await {
                ctx.log(&format!("cannot send a pairing code: {err}"));
            } else {
                ctx.log(&format!(
                    "sent a pairing code to chat {chat_id} ({})",
                    code.name
                ));
            }
        }
        Ok(None) => {}
        Err(err) => ctx.log(&format!("cannot store a pairing code: {err}")),
    }
}
