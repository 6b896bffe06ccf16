//! `mnemo telegram pair|list|unpair`: which Telegram chats reach the agent. Only a person at a
//! terminal of this machine pairs a chat, with the code the bot sent it.

use std::io::Write;

use super::{CommandError, local_time};
use crate::channels::telegram::pairing::CODE_LIFETIME_MS;
use crate::host::Loaded;

pub fn pair(loaded: &Loaded, code: &str, out: &mut impl Write) -> Result<(), CommandError> {
    let code = code.trim().to_string();
    let paired = loaded
        .store()?
        .call_blocking(move |db| db.pair_telegram_chat(&code, CODE_LIFETIME_MS))?;
    let Some(chat) = paired else {
        return Err(CommandError::Usage(
            "no chat waits with that code (codes work once, for 15 minutes); send the bot a \
             message to get a new one"
                .into(),
        ));
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
            "Note: [telegram] enabled is false in your config; the channel does not run yet."
        )?;
    }
    Ok(())
}

pub fn list(loaded: &Loaded, out: &mut impl Write) -> Result<(), CommandError> {
    let (chats, state) = loaded
        .store()?
        .call_blocking(|db| Ok((db.paired_chats()?, db.telegram_state()?)))?;
    if chats.is_empty() {
        writeln!(
            out,
            "No paired chats. Message the bot from Telegram, then run `mnemo telegram pair \
             CODE` with the code it answers."
        )?;
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
