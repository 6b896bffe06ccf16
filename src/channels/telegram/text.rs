//! The channel's own texts: escaping, tool lines, approval questions.

use serde_json::Value;

pub use super::format::escape_html;
use crate::protocol::{ApprovalAction, ApprovalDecision};
use crate::text::clip;

/// The visible text of HTML this module wrote (tags dropped, entities read).
pub fn plain_of(html: &str) -> String {
    let mut out = String::with_capacity(html.len());
    let mut in_tag = false;
    for c in html.chars() {
        match (in_tag, c) {
            (false, '<') => in_tag = true,
            (true, '>') => in_tag = false,
            (false, c) => out.push(c),
            (true, _) => {}
        }
    }
    out.replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&quot;", "\"")
        .replace("&amp;", "&")
}

/// Makes text literal in markdown: every ASCII punctuation character backslash-escaped.
pub fn escape_markdown(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        if c.is_ascii_punctuation() {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

/// A session id as people type it.
pub fn short_id(id: &str) -> String {
    id.chars().take(8).collect()
}

/// A tool call as one markdown line: the tool and its key argument, as the terminal shows it.
pub fn tool_line(name: &str, arguments: &Value) -> String {
    let key = crate::tools::describe::key_argument(name, arguments);
    let mut line = format!("🔧 _{}_", escape_markdown(name));
    if !key.is_empty() {
        line.push_str(" · ");
        line.push_str(&escape_markdown(&clip(&key, 80)));
    }
    line
}

/// The most of a diff or argument list a question shows.
const DETAIL_LIMIT: usize = 2500;

/// An approval question as HTML.
pub fn approval_question(tool: &str, action: &ApprovalAction, reason: &str) -> String {
    let (what, body) = match action {
        ApprovalAction::Command {
            command, sandbox, ..
        } => (format!("run a command ({sandbox})"), command.clone()),
        ApprovalAction::Write { path, diff } => (format!("change {path}"), diff.clone()),
        ApprovalAction::Memory { change } => ("change what it remembers".into(), change.clone()),
        ApprovalAction::Schedule { change } => ("change a schedule".into(), change.clone()),
        ApprovalAction::McpCall {
            server,
            tool,
            arguments,
        } => (format!("call {tool} of {server}"), arguments.clone()),
        ApprovalAction::Network { host, port } => {
            (format!("reach {host}"), format!("{host}:{port}"))
        }
    };
    format!(
        "❓ <b>{}</b> wants to {}:\n<pre>{}</pre>\n<i>{}</i>",
        escape_html(tool),
        escape_html(&what),
        escape_html(&clip(&body, DETAIL_LIMIT)),
        escape_html(reason)
    )
}

/// What a decision did, as the chat is told.
pub fn decision_label(decision: ApprovalDecision) -> &'static str {
    match decision {
        ApprovalDecision::AllowOnce => "Allowed once.",
        ApprovalDecision::AllowSession => "Allowed for this session.",
        ApprovalDecision::Deny => "Denied.",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_tool_line_names_the_tool_and_its_key_argument_literally() {
        let line = tool_line(
            "shell",
            &json!({"command": "ls *.rs | wc -l", "timeout": 5}),
        );
        assert_eq!(line, "🔧 _shell_ · ls \\*\\.rs \\| wc \\-l");
        assert_eq!(tool_line("status", &json!({})), "🔧 _status_");
        let grep = json!({"pattern": "fn main", "path": "src"});
        assert_eq!(tool_line("grep", &grep), "🔧 _grep_ · fn main  in src");
        let multi = json!({"command": "cargo build\ncargo test"});
        assert_eq!(tool_line("shell", &multi), "🔧 _shell_ · cargo build…");
    }

    #[test]
    fn a_question_escapes_what_the_model_wrote() {
        let action = ApprovalAction::Command {
            command: "echo '<b>' && rm -rf x".into(),
            escalation: None,
            sandbox: "workspace-write".into(),
        };
        let html = approval_question("shell", &action, "asks <always>");
        assert!(
            html.contains("echo '&lt;b&gt;' &amp;&amp; rm -rf x"),
            "{html}"
        );
        assert_eq!(
            plain_of(&html),
            "❓ shell wants to run a command (workspace-write):\necho '<b>' && rm -rf x\nasks <always>"
        );
    }
}
