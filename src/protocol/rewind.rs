//! What a rewind carries over the protocol: the turns that can be taken back, and what taking
//! one back restored and could not restore.

use serde::{Deserialize, Serialize};

/// What a rewind takes back.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RewindWhat {
    /// The files the agent changed since the turn started, as they were before it.
    Files,
    /// The conversation, back to just before the turn's prompt.
    Conversation,
    Both,
}

impl RewindWhat {
    pub fn files(self) -> bool {
        matches!(self, RewindWhat::Files | RewindWhat::Both)
    }

    pub fn conversation(self) -> bool {
        matches!(self, RewindWhat::Conversation | RewindWhat::Both)
    }

    pub fn label(self) -> &'static str {
        match self {
            RewindWhat::Files => "files",
            RewindWhat::Conversation => "conversation",
            RewindWhat::Both => "files and conversation",
        }
    }
}

/// One turn a rewind can go back to, as `/rewind` lists it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TurnSummary {
    pub turn: u64,
    /// The prompt that opened it.
    pub prompt: String,
    /// Milliseconds since the epoch.
    pub started_at: i64,
    /// The files the agent changed in it (relative to the workspace).
    pub files: Vec<String>,
    /// The shell commands run in it (their effects cannot be taken back).
    pub commands: Vec<String>,
    /// Whether the conversation can still go back to before it (not when it was compacted).
    pub conversation: bool,
}

/// A file a rewind could not put back, and why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct NotRestored {
    pub path: String,
    pub why: String,
}

/// What a rewind did.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct RewindReport {
    pub turn: u64,
    /// Files written back with their content from before.
    pub restored: Vec<String>,
    /// Files the agent created, removed again.
    pub removed: Vec<String>,
    pub not_restored: Vec<NotRestored>,
    /// Shell commands run since the turn: their side effects stay.
    pub commands: Vec<String>,
    /// The rewound prompt, when the conversation went back: it goes back into the input box.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prompt: Option<String>,
}

impl RewindReport {
    /// The report for the person, one fact a line.
    pub fn describe(&self) -> String {
        let mut lines = Vec::new();
        let mut head = format!("Rewound to before turn {}", self.turn);
        if self.prompt.is_some() {
            head.push_str(": the conversation is back to before its prompt");
        }
        lines.push(head);
        let files = self.restored.len() + self.removed.len();
        match files {
            0 if self.not_restored.is_empty() => {}
            _ => lines.push(format!(
                "files: {} restored, {} removed (created since), {} not restorable",
                self.restored.len(),
                self.removed.len(),
                self.not_restored.len()
            )),
        }
        for path in &self.restored {
            lines.push(format!("  restored {path}"));
        }
        for path in &self.removed {
            lines.push(format!("  removed {path}"));
        }
        for NotRestored { path, why } in &self.not_restored {
            lines.push(format!("  not restored {path}: {why}"));
        }
        if !self.commands.is_empty() {
            lines.push("shell commands run since then; their effects were not undone:".into());
            for command in &self.commands {
                lines.push(format!("  $ {command}"));
            }
        }
        lines.join("\n")
    }
}
