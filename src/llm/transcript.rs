//! Canonical messages rendered as readable Markdown, for `mnemo sessions export` and for the
//! `memory_open` tool.

use std::fmt::Write;

use super::{ContentBlock, Message, Role};

pub fn to_markdown(messages: &[Message]) -> String {
    let mut out = String::new();
    for message in messages {
        let only_results = message
            .content
            .iter()
            .all(|b| matches!(b, ContentBlock::ToolResult { .. }));
        let heading = match (message.role, only_results) {
            (Role::User, true) => "### Tool results",
            (Role::User, false) => "## User",
            (Role::Assistant, _) => "## Assistant",
        };
        let _ = writeln!(out, "{heading}\n");
        for block in &message.content {
            match block {
                ContentBlock::Text { text } => {
                    let _ = writeln!(out, "{}\n", text.trim_end());
                }
                ContentBlock::Image(image) => {
                    let _ = writeln!(out, "[image: {}]\n", image.label());
                }
                ContentBlock::Thinking { thinking, .. } => {
                    for line in thinking.trim_end().lines() {
                        let _ = writeln!(out, "> {line}");
                    }
                    out.push('\n');
                }
                ContentBlock::Server(server) => {
                    let _ = writeln!(out, "{}\n", server.summary());
                }
                ContentBlock::ToolUse { name, input, .. } => {
                    let _ = writeln!(out, "**{name}** `{input}`\n");
                }
                ContentBlock::ToolResult {
                    content, is_error, ..
                } => {
                    let label = if *is_error { "error" } else { "output" };
                    let _ = writeln!(out, "{label}:\n```\n{}\n```\n", content.trim_end());
                }
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn roles_tool_calls_and_results_are_all_shown() {
        let messages = vec![
            Message::user_text("list the files"),
            Message::assistant(vec![ContentBlock::ToolUse {
                id: "c1".into(),
                name: "list_dir".into(),
                input: serde_json::json!({"path": "."}),
            }]),
            Message {
                role: Role::User,
                content: vec![ContentBlock::ToolResult {
                    tool_use_id: "c1".into(),
                    content: "Cargo.toml".into(),
                    is_error: false,
                }],
            },
        ];
        let md = to_markdown(&messages);
        assert!(md.contains("## User\n\nlist the files"));
        assert!(md.contains("**list_dir** `{\"path\":\".\"}`"));
        assert!(md.contains("### Tool results\n\noutput:\n```\nCargo.toml\n```"));
    }
}
