//! The summary an archive entry gets without a model: what was asked, which files and tools
//! were involved, and how it ended. Deterministic, so compaction works offline and the same
//! stretch always reads the same.

use std::collections::BTreeMap;

use crate::llm::{ContentBlock, Message, Role};

/// Longest topic, in characters.
pub const TOPIC_CHARS: usize = 80;
/// Longest quoted line in the summary, in characters.
const LINE_CHARS: usize = 160;
const MAX_REQUESTS: usize = 8;
const MAX_FILES: usize = 12;

/// `(topic, summary)` for a stretch of conversation; the topic is its first request, `None`
/// when the stretch holds none (it continues a turn that started before it).
pub fn mechanical_summary(messages: &[Message]) -> (Option<String>, String) {
    let requests: Vec<&str> = messages
        .iter()
        .filter(|message| message.role == Role::User)
        .filter_map(|message| first_text_line(message))
        .collect();
    let topic = requests.first().map(|line| clip(line, TOPIC_CHARS));

    let mut files: Vec<&str> = Vec::new();
    let mut tools: BTreeMap<&str, usize> = BTreeMap::new();
    for message in messages {
        for call in message.tool_calls() {
            *tools.entry(call.name).or_default() += 1;
            let path = call.input.get("path").and_then(|path| path.as_str());
            if let Some(path) = path.filter(|path| !files.contains(path)) {
                files.push(path);
            }
        }
    }

    let mut lines = Vec::new();
    if !requests.is_empty() {
        lines.push("Requests:".to_owned());
        for request in requests.iter().take(MAX_REQUESTS) {
            lines.push(format!("- {}", clip(request, LINE_CHARS)));
        }
        if requests.len() > MAX_REQUESTS {
            lines.push(format!("- … and {} more", requests.len() - MAX_REQUESTS));
        }
    }
    if !files.is_empty() {
        let shown: Vec<&str> = files.iter().take(MAX_FILES).copied().collect();
        let more = files.len().saturating_sub(MAX_FILES);
        let suffix = if more > 0 {
            format!(" and {more} more")
        } else {
            String::new()
        };
        lines.push(format!("Files: {}{suffix}", shown.join(", ")));
    }
    if !tools.is_empty() {
        let mut counted: Vec<(&str, usize)> = tools.into_iter().collect();
        counted.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(b.0)));
        let listed: Vec<String> = counted
            .iter()
            .map(|(name, count)| format!("{name} ×{count}"))
            .collect();
        lines.push(format!("Tools: {}", listed.join(", ")));
    }
    let last_answer = messages
        .iter()
        .rev()
        .filter(|message| message.role == Role::Assistant)
        .find_map(|message| first_text_line(message));
    if let Some(answer) = last_answer {
        lines.push(format!("Outcome: {}", clip(answer, LINE_CHARS)));
    }
    (topic, lines.join("\n"))
}

/// A topic for a message: its first line of text, or what its tool calls touched.
pub fn topic_of(message: &Message) -> String {
    if let Some(line) = first_text_line(message) {
        return clip(line, TOPIC_CHARS);
    }
    let calls: Vec<String> = message
        .tool_calls()
        .map(
            |call| match call.input.get("path").and_then(|p| p.as_str()) {
                Some(path) => format!("{} {path}", call.name),
                None => call.name.to_owned(),
            },
        )
        .collect();
    match calls.is_empty() {
        true => "tool results".to_owned(),
        false => clip(&calls.join(", "), TOPIC_CHARS),
    }
}

/// The first non-blank line of the message's text blocks (tool results are not text).
fn first_text_line(message: &Message) -> Option<&str> {
    message
        .content
        .iter()
        .filter_map(|block| match block {
            ContentBlock::Text { text } => Some(text.as_str()),
            _ => None,
        })
        .flat_map(str::lines)
        .map(str::trim)
        .find(|line| !line.is_empty())
}

/// `line` cut to `max` characters, ending in an ellipsis when cut.
fn clip(line: &str, max: usize) -> String {
    if line.chars().count() <= max {
        return line.to_owned();
    }
    let mut out: String = line.chars().take(max.saturating_sub(1)).collect();
    out.push('…');
    out
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn call(name: &str, input: serde_json::Value) -> ContentBlock {
        ContentBlock::ToolUse {
            id: name.to_owned(),
            name: name.to_owned(),
            input,
        }
    }

    fn result(text: &str) -> Message {
        Message {
            role: Role::User,
            content: vec![ContentBlock::ToolResult {
                tool_use_id: "x".to_owned(),
                content: text.to_owned(),
                is_error: false,
            }],
        }
    }

    #[test]
    fn a_stretch_is_summarized_by_requests_files_tools_and_outcome() {
        let messages = vec![
            Message::user_text("\n  Fix the failing login test\nIt fails on CI."),
            Message::assistant(vec![
                ContentBlock::Text {
                    text: "Looking.".to_owned(),
                },
                call("fs_read", json!({"path": "src/login.rs"})),
            ]),
            result("fn login() {}"),
            Message::assistant(vec![
                call("fs_edit", json!({"path": "src/login.rs"})),
                call("shell", json!({"command": "cargo test"})),
                call("fs_read", json!({"path": "tests/login.rs"})),
            ]),
            result("ok"),
            Message::user_text("also update the changelog"),
            Message::assistant(vec![ContentBlock::Text {
                text: "Fixed the test and updated the changelog.\nDetails follow.".to_owned(),
            }]),
        ];
        let (topic, summary) = mechanical_summary(&messages);
        assert_eq!(topic.as_deref(), Some("Fix the failing login test"));
        assert_eq!(
            summary,
            "Requests:\n- Fix the failing login test\n- also update the changelog\n\
             Files: src/login.rs, tests/login.rs\n\
             Tools: fs_read ×2, fs_edit ×1, shell ×1\n\
             Outcome: Fixed the test and updated the changelog."
        );
        assert_eq!(mechanical_summary(&messages), (topic, summary));
    }

    #[test]
    fn a_long_first_line_is_clipped_to_the_topic_length() {
        let (topic, _) = mechanical_summary(&[Message::user_text("é".repeat(200))]);
        let topic = topic.unwrap_or_default();
        assert_eq!(topic.chars().count(), TOPIC_CHARS);
        assert!(topic.ends_with('…'));
    }

    #[test]
    fn a_stretch_without_a_request_has_no_topic_of_its_own() {
        let (topic, summary) = mechanical_summary(&[result("output")]);
        assert_eq!(topic, None);
        assert_eq!(summary, "");
        let call = Message::assistant(vec![call("read_file", json!({"path": "src/a.rs"}))]);
        assert_eq!(topic_of(&call), "read_file src/a.rs");
        assert_eq!(
            topic_of(&Message::user_text("\n  fix it\nplease")),
            "fix it"
        );
    }
}
