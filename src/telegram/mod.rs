//! The Telegram channel: the agent's replies and prompts reach a chat through the Bot API.

pub mod format;
