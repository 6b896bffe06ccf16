//! A cheap, deterministic guess at how much an archived stretch matters, so search can prefer
//! the stretches where things were decided, built or fixed. No model call: it runs on every
//! compaction.

use crate::llm::{ContentBlock, Message};

const BASELINE: f64 = 0.5;

/// Full bonus at this many messages, tool calls or characters of text.
const MESSAGES_FOR_FULL: f64 = 40.0;
const TOOL_CALLS_FOR_FULL: f64 = 10.0;
const CHARS_FOR_FULL: f64 = 20_000.0;

const MESSAGE_BONUS: f64 = 0.1;
const TOOL_BONUS: f64 = 0.15;
const LENGTH_BONUS: f64 = 0.1;
/// Per distinct action word, up to `ACTION_BONUS_MAX`.
const ACTION_WORD_BONUS: f64 = 0.05;
const ACTION_BONUS_MAX: f64 = 0.2;

/// Words that mark a stretch where something durable happened (with their common forms).
const ACTION_WORDS: &[&[&str]] = &[
    &["decided", "decide", "decision"],
    &["created", "create"],
    &["fixed", "fix", "fixes"],
    &["installed", "install"],
    &["configured", "configure", "configuration"],
    &["remember"],
    &["important"],
];

/// Importance in [0, 1]: 0.5 plus bounded bonuses for the number of messages, tool use, the
/// amount of text and action words.
pub fn importance(messages: &[Message]) -> f64 {
    let mut tool_calls = 0usize;
    let mut chars = 0usize;
    let mut text = String::new();
    for block in messages.iter().flat_map(|message| &message.content) {
        match block {
            ContentBlock::Text { text: part } => {
                chars += part.len();
                text.push_str(part);
                text.push(' ');
            }
            ContentBlock::ToolUse { .. } => tool_calls += 1,
            ContentBlock::ToolResult { content, .. } => chars += content.len(),
            ContentBlock::Server(_) => tool_calls += 1,
            ContentBlock::Thinking { .. } | ContentBlock::Image(_) => {}
        }
    }
    let text = text.to_lowercase();
    let words: Vec<&str> = text.split(|c: char| !c.is_alphanumeric()).collect();
    let actions = ACTION_WORDS
        .iter()
        .filter(|forms| words.iter().any(|word| forms.contains(word)))
        .count();
    let share = |count: usize, full: f64| (count as f64 / full).min(1.0);
    let score = BASELINE
        + MESSAGE_BONUS * share(messages.len(), MESSAGES_FOR_FULL)
        + TOOL_BONUS * share(tool_calls, TOOL_CALLS_FOR_FULL)
        + LENGTH_BONUS * share(chars, CHARS_FOR_FULL)
        + (ACTION_WORD_BONUS * actions as f64).min(ACTION_BONUS_MAX);
    score.clamp(0.0, 1.0)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn tool_call(n: usize) -> Message {
        Message::assistant(vec![ContentBlock::ToolUse {
            id: format!("t{n}"),
            name: "shell".to_owned(),
            input: json!({"command": "ls"}),
        }])
    }

    #[test]
    fn a_short_plain_exchange_stays_near_the_baseline() {
        let score = importance(&[Message::user_text("hi"), Message::user_text("hello")]);
        assert!((0.5..0.52).contains(&score), "{score}");
    }

    #[test]
    fn each_bonus_raises_importance() {
        let base = vec![Message::user_text("look at the logs")];
        let plain = importance(&base);

        let mut more = base.clone();
        more.extend((0..10).map(|_| Message::user_text("ok")));
        assert!(importance(&more) > plain);

        let mut tools = base.clone();
        tools.push(tool_call(1));
        assert!(importance(&tools) > plain);

        let long = vec![Message::user_text("look at the logs ".repeat(500))];
        assert!(importance(&long) > plain);

        let action = vec![Message::user_text(
            "look at the logs; we decided to keep them",
        )];
        assert!(importance(&action) > plain);
        let two = vec![Message::user_text("we decided and fixed it")];
        assert!(importance(&two) > importance(&action));
    }

    #[test]
    fn importance_never_exceeds_one() {
        let mut messages: Vec<Message> = (0..100).map(tool_call).collect();
        messages.push(Message::user_text(
            "Important: remember we decided, created, fixed, installed and configured it. "
                .repeat(1000),
        ));
        assert_eq!(importance(&messages), 1.0);
        assert_eq!(importance(&[]), 0.5);
    }
}
