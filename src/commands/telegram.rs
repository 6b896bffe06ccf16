//! `mnemo telegram pair|list|unpair`: which Telegram chats reach the agent. Only a person at a
//! terminal of this machine pairs a chat, with the code the bot sent it.

use std::io::Write;

use super::{CommandError, local_time};
use crate::channels::telegram::api::BotApi;
use crate::channels::telegram::format::{self, MESSAGE_LIMIT};
use crate::channels::telegram::pairing::{CODE_LIFETIME_MS, paired_message};
use crate::host::Loaded;

/// How to turn the channel on: the config keys and the token's variable, by their real names.
fn how_to_enable(loaded: &Loaded) -> String {
    let file = loaded.dirs.user_config_file().map_or_else(
        || "your config.toml".to_string(),
        |path| path.display().to_string(),
    );
    format!(
        "The Telegram channel is off. To turn it on: add `[telegram]` with `enabled = true` to \
         {file}, put the bot's token (from @BotFather) in ${}, and run `mnemo serve`. Then \
         message the bot and run `mnemo telegram pair CODE` with the code it answers.",
        loaded.config.telegram.bot_token_env
    )
}

pub async fn pair(loaded: &Loaded, code: &str, out: &mut impl Write) -> Result<(), CommandError> {
    let code = code.trim().to_string();
    let paired = loaded
        .store()?
        .call(move |db| db.pair_telegram_chat(&code, CODE_LIFETIME_MS))
        .await?;
    let Some(chat) = paired else {
        let mut message = "no chat waits with that code (codes work once, for 15 minutes)".into();
        match loaded.config.telegram.enabled {
            true => message += "; send the bot a message to get a new one",
            false => message = format!("{message}.\n{}", how_to_enable(loaded)),
        }
        return Err(CommandError::Usage(message));
    };
    writeln!(
        out,
        "Paired {} (chat {}). Its messages now reach mnemo while `mnemo serve` runs with \
         [telegram] enabled.",
        chat.name, chat.chat_id
    )?;
    if !loaded.config.telegram.enabled {
        writeln!(
            out,
            "Note: [telegram] enabled is false in your config; the channel does not run yet. {}",
            how_to_enable(loaded)
        )?;
    }
    tell_the_chat(loaded, chat.chat_id, out).await
}

/// Sends the chat word that it is paired: through a running daemon's channel (which has the
/// bot's token), else with this terminal's token.
async fn tell_the_chat(
    loaded: &Loaded,
    chat: i64,
    out: &mut impl Write,
) -> Result<(), CommandError> {
    let config = &loaded.config.telegram;
    if let Some(data) = loaded.dirs.data.as_deref()
        && crate::gateway::client::tell_telegram_paired(data, chat).await
    {
        return Ok(writeln!(out, "The bot told the chat it is paired.")?);
    }
    let Some(token) = std::env::var(&config.bot_token_env)
        .ok()
        .filter(|t| !t.trim().is_empty())
    else {
        return Ok(writeln!(
            out,
            "The chat was not told: mnemo serve does not run its Telegram channel and ${} is \
             not set in this terminal.",
            config.bot_token_env
        )?);
    };
    let api = BotApi::new(&config.base_url, token.trim());
    let message = paired_message(&crate::memory::leases::host_name(), config.enabled);
    for chunk in format::render(&message, MESSAGE_LIMIT) {
        let sent = tokio::time::timeout(SEND_LIMIT, api.send(chat, &chunk, None)).await;
        let failure = match sent {
            Ok(Ok(_)) => continue,
            Ok(Err(err)) => err.to_string(),
            Err(_) => format!("no answer in {} s", SEND_LIMIT.as_secs()),
        };
        return Ok(writeln!(out, "The chat was not told: {failure}.")?);
    }
    Ok(writeln!(out, "The bot told the chat it is paired.")?)
}

/// The longest wait for the Bot API to take the "paired" message.
const SEND_LIMIT: std::time::Duration = std::time::Duration::from_secs(15);

pub fn list(loaded: &Loaded, out: &mut impl Write) -> Result<(), CommandError> {
    let (chats, state) = loaded
        .store()?
        .call_blocking(|db| Ok((db.paired_chats()?, db.telegram_state()?)))?;
    if chats.is_empty() {
        match loaded.config.telegram.enabled {
            true => writeln!(
                out,
                "No paired chats. Message the bot from Telegram, then run `mnemo telegram \
                 pair CODE` with the code it answers."
            )?,
            false => writeln!(out, "No paired chats. {}", how_to_enable(loaded))?,
        }
    }
    for chat in &chats {
        let session = chat.session_id.as_deref().map_or_else(
            || "no session yet".to_string(),
            |s| format!("session {}", s.chars().take(8).collect::<String>()),
        );
        writeln!(
            out,
            "{:<14} {} · paired {} · {session}",
            chat.chat_id,
            chat.name,
            local_time(chat.paired_at)
        )?;
    }
    let enabled = loaded.config.telegram.enabled;
    let state = state.unwrap_or_else(|| "has not run".into());
    writeln!(
        out,
        "channel: {} ({state})",
        if enabled { "enabled" } else { "disabled" }
    )?;
    Ok(())
}

pub fn unpair(loaded: &Loaded, chat: i64, out: &mut impl Write) -> Result<(), CommandError> {
    match loaded
        .store()?
        .call_blocking(move |db| db.unpair_telegram_chat(chat))?
    {
        true => Ok(writeln!(
            out,
            "Unpaired chat {chat}: its messages no longer reach mnemo."
        )?),
        false => Err(CommandError::Usage(format!(
            "chat {chat} is not paired (`mnemo telegram list` shows them)"
        ))),
    }
}
