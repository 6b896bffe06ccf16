//! What the model sends to the sub-agent tools, with the schemas it is shown.

use schemars::JsonSchema;
use serde::Deserialize;

pub const SPAWN_AGENT: &str = "spawn_agent";
pub const READ_AGENT_OUTPUT: &str = "read_agent_output";
pub const LIST_AGENTS: &str = "list_agents";
pub const CANCEL_AGENT: &str = "cancel_agent";
pub const FORK: &str = "fork";
pub const GATHER_ALL: &str = "gather_all";

// What the sub-agent starts with besides its prompt: the whole conversation, a summary of it
// written by the compressor model, or only the prompt. (Plain comments: doc comments would
// put a description of every variant in each request's schema.)
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ContextMode {
    Full,
    Summary,
    #[default]
    None,
}

// When the wait times out: stop waiting (the result arrives later as a message) or cancel.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum TimeoutAction {
    #[default]
    Background,
    Cancel,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SpawnArgs {
    /// The complete task for the sub-agent: what to do and what to answer with.
    pub prompt: String,
    /// A configured model name for the sub-agent; default: your own model.
    pub model: Option<String>,
    /// What context it starts with: full, summary or none (default).
    #[serde(default)]
    pub context_mode: ContextMode,
    /// Give it only tools that change nothing.
    #[serde(default)]
    pub readonly: bool,
    /// Let its commands reach the network where the approval policy allows it.
    #[serde(default)]
    pub network_access: bool,
    /// Return its run id at once; the result arrives later as a message.
    #[serde(default)]
    pub background: bool,
    /// Seconds to wait for it (at most the tool timeout).
    pub timeout: Option<u64>,
    /// On timeout: background (default; the result arrives later) or cancel.
    #[serde(default)]
    pub timeout_action: TimeoutAction,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RunIdArgs {
    /// The run id that spawn_agent or fork returned.
    pub run_id: String,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ForkArgs {
    /// A short name for the task.
    pub task: String,
    /// What the fork should do and answer with.
    pub instruction: String,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct NoArgs {}
