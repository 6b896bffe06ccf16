//! A message too big for the context by itself is cut: its long texts, tool results and the
//! long strings of its tool calls' arguments keep their head and tail and a note, and its
//! whole text goes to the archive. Each message is cut at most once per pass and only when
//! that shrinks it, so a pass always ends (a call's arguments of many megabytes once were cut
//! and archived again without end).

use std::cmp::Reverse;
use std::sync::Arc;

use serde_json::Value;

use super::Session;
use crate::llm::{ContentBlock, Message};
use crate::memory::types::NewArchiveEntry;
use crate::memory::{StoreError, importance, summary};

/// Characters per token assumed when a message is cut to a token size.
const CHARS_PER_TOKEN: usize = 3;
/// The fewest tokens a cut message is given.
const MIN_ROOM: u64 = 200;

impl Session {
    /// Cuts the biggest messages of the working set while it is still over the budget.
    /// Returns whether anything was cut.
    pub(super) async fn cut_oversized(&mut self) -> Result<bool, StoreError> {
        let budget = self.message_budget(self.budget());
        // A message is cut to a quarter of the budget, so several still fit beside it.
        let room = (budget / 4).max(MIN_ROOM);
        let chars = usize::try_from(room).unwrap_or(usize::MAX) * CHARS_PER_TOKEN;
        let mut total: u64 = self.meta.iter().map(|m| u64::from(m.tokens)).sum();
        let mut order: Vec<usize> = (0..self.meta.len())
            .filter(|&i| u64::from(self.meta[i].tokens) > room)
            .collect();
        order.sort_by_key(|&i| Reverse(self.meta[i].tokens));
        let mut cut_any = false;
        for index in order {
            if total <= budget || self.turn_cancel.is_cancelled() {
                break;
            }
            let original = (*self.history[index]).clone();
            let tokens = self.meta[index].tokens;
            let cut = cut_message(&original, chars, tokens);
            let cut_tokens = crate::llm::tokens::estimate_message(&cut);
            // Less than a quarter saved is no cut: a message cut before would only be archived
            // again.
            if u64::from(cut_tokens) * 4 > u64::from(tokens) * 3 {
                continue;
            }
            let meta = self.meta[index];
            let entry = NewArchiveEntry {
                session_id: self.id.clone(),
                topic: format!("full text of a message too big for the context ({tokens} tokens)"),
                summary: summary::topic_of(&original),
                token_count: u64::from(tokens),
                importance: importance::importance(std::slice::from_ref(&original)),
                first_seq: meta.seq,
                last_seq: meta.seq,
                started_at: meta.created_at,
                ended_at: meta.created_at,
                messages: vec![original],
            };
            let stored = cut.clone();
            self.services
                .store
                .call(move |db| db.archive_and_cut(entry, &stored, cut_tokens))
                .await?;
            let previous = index.checked_sub(1).map(|at| self.history[at].clone());
            self.caps.observe(meta.seq, &cut, previous.as_deref());
            self.history[index] = Arc::new(cut);
            self.meta[index].tokens = cut_tokens;
            total = total - u64::from(tokens) + u64::from(cut_tokens);
            self.archived_any = true;
            cut_any = true;
        }
        Ok(cut_any)
    }
}

/// `message` with each long text, tool result and string of a call's arguments cut to about
/// `chars` characters, head and tail, saying that the whole is in the archive.
pub(super) fn cut_message(message: &Message, chars: usize, tokens: u32) -> Message {
    let content = message
        .content
        .iter()
        .map(|block| match block {
            ContentBlock::Text { text } => ContentBlock::Text {
                text: shorten(text, chars, tokens),
            },
            ContentBlock::ToolResult {
                tool_use_id,
                content,
                is_error,
            } => ContentBlock::ToolResult {
                tool_use_id: tool_use_id.clone(),
                content: shorten(content, chars, tokens),
                is_error: *is_error,
            },
            // The call stays a call with the same arguments, its long strings cut.
            ContentBlock::ToolUse { id, name, input } => ContentBlock::ToolUse {
                id: id.clone(),
                name: name.clone(),
                input: shorten_strings(input, chars, tokens),
            },
            other @ (ContentBlock::Thinking { .. }
            | ContentBlock::Image(_)
            | ContentBlock::Server(_)) => other.clone(),
        })
        .collect();
    Message {
        role: message.role,
        content,
    }
}

fn shorten_strings(value: &Value, chars: usize, tokens: u32) -> Value {
    match value {
        Value::String(text) => Value::String(shorten(text, chars, tokens)),
        Value::Array(items) => Value::Array(
            items
                .iter()
                .map(|item| shorten_strings(item, chars, tokens))
                .collect(),
        ),
        Value::Object(fields) => Value::Object(
            fields
                .iter()
                .map(|(key, item)| (key.clone(), shorten_strings(item, chars, tokens)))
                .collect(),
        ),
        other => other.clone(),
    }
}

fn shorten(text: &str, chars: usize, tokens: u32) -> String {
    let total = text.chars().count();
    if total <= chars {
        return text.to_string();
    }
    let half = chars / 2;
    let head: String = text.chars().take(half).collect();
    let tail: String = text.chars().skip(total - half).collect();
    let cut = total - 2 * half;
    format!(
        "{head}\n[… {cut} characters cut here: the message ({tokens} tokens) was too big for the \
         context; its whole text is in the archive (memory_search) …]\n{tail}"
    )
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn a_cut_message_keeps_head_and_tail_and_says_where_the_rest_is() {
        let text = format!("HEAD{}TAIL", "x".repeat(100_000));
        let cut = cut_message(&Message::user_text(text), 1000, 33_000);
        let cut = cut.text();
        assert!(
            cut.starts_with("HEAD") && cut.ends_with("TAIL"),
            "{}",
            &cut[..50]
        );
        assert!(cut.len() < 1300, "{}", cut.len());
        assert!(cut.contains("whole text is in the archive"));
    }

    #[test]
    fn a_call_with_huge_arguments_is_cut_and_stays_a_call_with_the_same_fields() {
        let call = Message::assistant(vec![ContentBlock::ToolUse {
            id: "call_1".into(),
            name: "write_file".into(),
            input: json!({"path": "big.txt", "content": "y".repeat(4_000_000)}),
        }]);
        let before = crate::llm::tokens::estimate_message(&call);
        let cut = cut_message(&call, 3000, before);
        let after = crate::llm::tokens::estimate_message(&cut);
        assert!(
            after < 3000,
            "{after} tokens after the cut, {before} before"
        );
        let Some(ContentBlock::ToolUse { id, name, input }) = cut.content.first() else {
            panic!("not a call: {cut:?}");
        };
        assert_eq!((id.as_str(), name.as_str()), ("call_1", "write_file"));
        assert_eq!(input["path"], "big.txt");
        assert!(
            input["content"]
                .as_str()
                .is_some_and(|c| c.contains("whole text is in the archive"))
        );
    }
}
