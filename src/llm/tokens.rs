//! Token estimates for messages, stored with each message so budgets need no re-counting.

use super::{ContentBlock, Message};

/// About four bytes per token for English text and code; good enough for budgeting until a
/// provider reports real usage.
pub fn estimate_message(message: &Message) -> u32 {
    let bytes: usize = message
        .content
        .iter()
        .map(|block| match block {
            ContentBlock::Text { text } => text.len(),
            ContentBlock::Thinking { thinking, .. } => thinking.len(),
            ContentBlock::ToolUse { name, input, .. } => name.len() + input.to_string().len(),
            ContentBlock::ToolResult { content, .. } => content.len(),
        })
        .sum();
    u32::try_from(bytes.div_ceil(4) + 4).unwrap_or(u32::MAX)
}
