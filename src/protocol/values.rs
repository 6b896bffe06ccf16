//! Small values the protocol carries that the agent's parts share: token usage, the
//! approval vocabulary and images attached to a message. They live here so the protocol depends on nothing else of the crate.

use std::fmt;

use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Usage {
    pub input_tokens: u64,
    pub output_tokens: u64,
    #[serde(default)]
    pub cache_read_tokens: u64,
    #[serde(default)]
    pub cache_write_tokens: u64,
}

impl Usage {
    pub fn add(&mut self, other: &Usage) {
        self.input_tokens += other.input_tokens;
        self.output_tokens += other.output_tokens;
        self.cache_read_tokens += other.cache_read_tokens;
        self.cache_write_tokens += other.cache_write_tokens;
    }

    /// Every token of the prompt, whether read from cache or not.
    pub fn prompt_tokens(&self) -> u64 {
        self.input_tokens + self.cache_read_tokens + self.cache_write_tokens
    }
}

#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize, clap::ValueEnum,
)]
#[serde(rename_all = "snake_case")]
pub enum ApprovalMode {
    /// Nothing is written: file writes are refused, commands run in the read-only sandbox, and
    /// nothing is asked.
    #[serde(alias = "read-only")]
    #[value(alias = "read_only")]
    ReadOnly,
    /// Every file write and every command waits for the user's approval.
    Ask,
    /// What the sandbox allows runs without asking; more (network, no sandbox) is asked for.
    #[default]
    Auto,
    /// No sandbox and no questions.
    Full,
}

impl ApprovalMode {
    pub const ALL: [ApprovalMode; 4] = [
        ApprovalMode::ReadOnly,
        ApprovalMode::Ask,
        ApprovalMode::Auto,
        ApprovalMode::Full,
    ];

    pub fn label(self) -> &'static str {
        match self {
            ApprovalMode::ReadOnly => "read-only",
            ApprovalMode::Ask => "ask",
            ApprovalMode::Auto => "auto",
            ApprovalMode::Full => "full",
        }
    }

    pub fn parse(text: &str) -> Option<Self> {
        let text = text.trim().replace('_', "-");
        Self::ALL.into_iter().find(|mode| mode.label() == text)
    }

    /// One line for `/approval` and the status bar.
    pub fn explain(self) -> &'static str {
        match self {
            ApprovalMode::ReadOnly => "read-only: no file writes, commands run read-only",
            ApprovalMode::Ask => "ask: every write and every command needs approval",
            ApprovalMode::Auto => "auto: sandboxed actions run, anything more asks",
            ApprovalMode::Full => "full: no sandbox, nothing asks",
        }
    }
}

impl fmt::Display for ApprovalMode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.label())
    }
}

/// More than the sandbox gives by default, requested by the model for one command.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Escalation {
    /// The sandbox, with the network reachable.
    Network,
    /// No sandbox at all (writes outside the workspace, devices, anything).
    FullAccess,
}

impl Escalation {
    pub fn label(self) -> &'static str {
        match self {
            Escalation::Network => "network access",
            Escalation::FullAccess => "running outside the sandbox",
        }
    }
}

// The `todo` tool's items and `Event::TodoUpdated`'s: one step of the agent's visible plan.
// (A plain comment: a doc comment would be sent to the model in every request.)
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(inline)]
pub struct TodoItem {
    /// The step, in a few words.
    pub step: String,
    pub status: TodoStatus,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
#[schemars(inline)]
pub enum TodoStatus {
    Pending,
    InProgress,
    Done,
}

impl TodoStatus {
    /// The box a step is drawn with, in the transcript and in the request's checkpoint.
    pub fn mark(self) -> &'static str {
        match self {
            TodoStatus::Pending => "[ ]",
            TodoStatus::InProgress => "[>]",
            TodoStatus::Done => "[x]",
        }
    }
}

/// An image attached to a user message: its name and its encoded bytes in base64. The session
/// checks it again (kind, size, pixels) before the model sees it, whoever sent it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Attachment {
    pub name: String,
    pub data: String,
}
