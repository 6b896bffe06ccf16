//! Pairing: a chat nobody paired gets a one-time code and nothing else; its owner types
//! `mnemo telegram pair CODE` in a terminal. A chat has one code at a time, sent again at most
//! every few minutes; codes expire soon, and when too many wait the oldest gives way, so
//! strangers can neither fill the store nor keep the owner's chat from getting a code.

use crate::memory::telegram::Pairing;
use crate::memory::types::Millis;

/// How long a code can be used.
pub const CODE_LIFETIME_MS: Millis = 15 * 60 * 1000;
/// A chat that got its code less than this long ago gets no answer.
pub const RESEND_AFTER_MS: Millis = 5 * 60 * 1000;
/// Codes waiting at once, across chats; a new chat's code takes the oldest one's place.
pub const MAX_WAITING: usize = 64;

/// Letters and digits that cannot be mistaken for one another.
const ALPHABET: &[u8] = b"ABCDEFGHJKMNPQRSTUVWXYZ23456789";
const CODE_LEN: usize = 8;

/// A fresh code, from the system's random source.
pub fn new_code() -> String {
    let random = uuid::Uuid::new_v4().into_bytes();
    random
        .iter()
        .take(CODE_LEN)
        .map(|byte| char::from(ALPHABET[usize::from(*byte) % ALPHABET.len()]))
        .collect()
}

/// What to send a chat that is not paired, given its code so far: `None` to stay silent.
pub fn answer(
    existing: Option<&Pairing>,
    chat_id: i64,
    name: &str,
    now: Millis,
    fresh: impl FnOnce() -> String,
) -> Option<Pairing> {
    match existing {
        Some(code) if now - code.sent_at < RESEND_AFTER_MS => None,
        Some(code) if now - code.created_at < CODE_LIFETIME_MS => Some(Pairing {
            sent_at: now,
            ..code.clone()
        }),
        _ => Some(Pairing {
            chat_id,
            code: fresh(),
            name: name.to_string(),
            created_at: now,
            sent_at: now,
        }),
    }
}

/// The message carrying a code (HTML).
pub fn code_message(code: &str) -> String {
    format!(
        "This chat is not paired with mnemo. If it is yours, run this in a terminal on the \
         machine where mnemo runs:\n\n<code>mnemo telegram pair {code}</code>\n\nThe code \
         works for 15 minutes. Until then, nothing you send here reaches mnemo."
    )
}

/// What the bot tells a chat once its owner paired it (markdown).
pub fn paired_message(host: &str, running: bool) -> String {
    let next = match running {
        true => "Write here to talk to it while `mnemo serve` runs; /help lists the commands.",
        false => {
            "Its Telegram channel is not on yet: once `mnemo serve` runs with it, what you \
                  write here reaches mnemo."
        }
    };
    format!(
        "Paired with mnemo on {}. {next}",
        super::text::escape_markdown(host)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    const MINUTE: Millis = 60 * 1000;

    #[test]
    fn codes_are_eight_unambiguous_characters_and_differ() {
        let a = new_code();
        assert_eq!(a.len(), CODE_LEN);
        assert!(a.bytes().all(|b| ALPHABET.contains(&b)), "{a}");
        assert_ne!(a, new_code());
    }

    #[test]
    fn a_chat_gets_one_code_then_silence_then_the_same_code_then_a_new_one() {
        let first = answer(None, 7, "Ada", 0, || "AAAA2222".into());
        let Some(first) = first else {
            panic!("a new chat gets a code")
        };
        assert_eq!(first.code, "AAAA2222");
        assert_eq!(
            answer(Some(&first), 7, "Ada", 4 * MINUTE, || "X".into()),
            None
        );
        let again = answer(Some(&first), 7, "Ada", 6 * MINUTE, || "X".into());
        assert_eq!(again.as_ref().map(|p| p.code.as_str()), Some("AAAA2222"));
        let again = again.unwrap_or(first);
        let later = answer(Some(&again), 7, "Ada", 16 * MINUTE + 6 * MINUTE, || {
            "BBBB3333".into()
        });
        assert_eq!(later.map(|p| p.code), Some("BBBB3333".into()));
    }
}
