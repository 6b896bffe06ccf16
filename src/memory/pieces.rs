//! What of a remembered thing is embedded: pieces that each fit the embedder's input, so no
//! text is silently cut and unrelated requests are not averaged into one vector. An archive
//! entry gives its topic with its summary, then each of its turns (a user's request with
//! what was said and done for it), a long turn split at paragraph, line, sentence or word
//! boundaries. An entry scores by its best piece.

use crate::llm::{ContentBlock, Message, Role};

/// At most this many pieces per entry: a huge stretch of conversation keeps its first ones.
pub const MAX_PIECES: usize = 64;

/// The texts to embed for an archive entry. `fits` says whether a text fits the embedder's
/// input whole.
pub fn entry_pieces(
    topic: &str,
    summary: &str,
    messages: &[Message],
    fits: &dyn Fn(&str) -> bool,
) -> Vec<String> {
    let mut pieces = Vec::new();
    let head = format!("{}\n{}", topic.trim(), summary.trim());
    pieces.extend(split_to_fit(head.trim(), fits));
    for turn in turns(messages) {
        pieces.extend(split_to_fit(&turn, fits));
        if pieces.len() >= MAX_PIECES {
            break;
        }
    }
    pieces.truncate(MAX_PIECES);
    pieces.retain(|p| !p.trim().is_empty());
    pieces
}

/// The text of each turn: a user's words open one; the assistant's words and the names of
/// the tools it called follow. Tool output is left out: it is long and says little about
/// what was asked.
fn turns(messages: &[Message]) -> Vec<String> {
    let mut turns: Vec<String> = Vec::new();
    for message in messages {
        let mut words = Vec::new();
        for block in &message.content {
            match block {
                ContentBlock::Text { text } => words.push(text.trim().to_string()),
                ContentBlock::ToolUse { name, input, .. } => {
                    let input = input.to_string();
                    let input = crate::text::clip(&input, 200);
                    words.push(format!("[{name} {input}]"));
                }
                _ => {}
            }
        }
        let text = words.join("\n");
        if text.trim().is_empty() {
            continue;
        }
        let opens = message.role == Role::User;
        match turns.last_mut() {
            Some(turn) if !opens => {
                turn.push('\n');
                turn.push_str(&text);
            }
            _ => turns.push(text),
        }
    }
    turns
}

/// `text` as pieces that each fit: whole when it fits, else cut at the coarsest boundary
/// (blank line, line, sentence, word) that makes parts fit, and as a last resort by
/// characters.
pub fn split_to_fit(text: &str, fits: &dyn Fn(&str) -> bool) -> Vec<String> {
    let text = text.trim();
    if text.is_empty() {
        return Vec::new();
    }
    if fits(text) {
        return vec![text.to_string()];
    }
    for separator in ["\n\n", "\n", ". ", " "] {
        let parts: Vec<&str> = text.split_inclusive(separator).collect();
        if parts.len() > 1 {
            return pack(&parts, fits);
        }
    }
    let chars: Vec<char> = text.chars().collect();
    let half = chars.len() / 2;
    let (left, right): (String, String) = (
        chars[..half].iter().collect(),
        chars[half..].iter().collect(),
    );
    let mut pieces = split_to_fit(&left, fits);
    pieces.extend(split_to_fit(&right, fits));
    pieces
}

/// Joins consecutive parts while they fit; a part too big on its own is split further.
fn pack(parts: &[&str], fits: &dyn Fn(&str) -> bool) -> Vec<String> {
    let mut pieces = Vec::new();
    let mut current = String::new();
    for part in parts {
        let candidate = format!("{current}{part}");
        if fits(candidate.trim()) {
            current = candidate;
            continue;
        }
        if !current.trim().is_empty() {
            pieces.push(current.trim().to_string());
        }
        current = String::new();
        if fits(part.trim()) {
            current = part.to_string();
        } else {
            pieces.extend(split_to_fit(part, fits));
        }
    }
    if !current.trim().is_empty() {
        pieces.push(current.trim().to_string());
    }
    pieces
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn user(text: &str) -> Message {
        Message::user_text(text.to_string())
    }

    fn assistant(text: &str) -> Message {
        Message::assistant(vec![ContentBlock::Text { text: text.into() }])
    }

    fn within(chars: usize) -> impl Fn(&str) -> bool {
        move |text: &str| text.chars().count() <= chars
    }

    #[test]
    fn an_entry_gives_its_head_then_one_piece_per_turn() {
        let messages = vec![
            user("Set the staging database port to 6543"),
            Message::assistant(vec![ContentBlock::ToolUse {
                id: "1".into(),
                name: "edit_file".into(),
                input: json!({"path": "db.toml"}),
            }]),
            Message {
                role: Role::User,
                content: vec![ContentBlock::ToolResult {
                    tool_use_id: "1".into(),
                    content: "ok".into(),
                    is_error: false,
                }],
            },
            assistant("Done: staging listens on 6543."),
            user("Now rename the cron job"),
            assistant("Renamed."),
        ];
        let pieces = entry_pieces(
            "Database ports",
            "Ports were set.",
            &messages,
            &within(1000),
        );
        assert_eq!(pieces.len(), 3, "{pieces:#?}");
        assert_eq!(pieces[0], "Database ports\nPorts were set.");
        assert!(pieces[1].starts_with("Set the staging database port to 6543"));
        assert!(pieces[1].contains("[edit_file {\"path\":\"db.toml\"}]"));
        assert!(pieces[1].ends_with("Done: staging listens on 6543."));
        assert!(!pieces[1].contains("ok"), "tool output is left out");
        assert_eq!(pieces[2], "Now rename the cron job\nRenamed.");
    }

    #[test]
    fn a_long_text_is_cut_at_the_coarsest_boundary_that_fits() {
        let text = "First paragraph is here.\n\nSecond one. It has two sentences.";
        assert_eq!(
            split_to_fit(text, &within(40)),
            [
                "First paragraph is here.",
                "Second one. It has two sentences."
            ]
        );
        let sentences = split_to_fit("One two three. Four five six. Seven.", &within(16));
        assert_eq!(sentences, ["One two three.", "Four five six.", "Seven."]);
        let word = "x".repeat(25);
        let cut = split_to_fit(&word, &within(10));
        assert!(cut.iter().all(|p| p.chars().count() <= 10), "{cut:?}");
        assert_eq!(cut.concat(), word, "nothing is lost");
    }
}
