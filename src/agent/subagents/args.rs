//! What the model sends to the sub-agent tools, with the schemas it is shown.

use std::sync::{Arc, OnceLock};

use schemars::JsonSchema;
use serde::Deserialize;

use crate::llm::ToolSpec;
use crate::tools::schema_of;

pub const SPAWN_AGENT: &str = "spawn_agent";
pub const READ_AGENT_OUTPUT: &str = "read_agent_output";
pub const LIST_AGENTS: &str = "list_agents";
pub const CANCEL_AGENT: &str = "cancel_agent";
pub const FORK: &str = "fork";
pub const GATHER_ALL: &str = "gather_all";

/// What the sub-agent starts with besides its prompt.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ContextMode {
    /// Your whole conversation so far.
    Full,
    /// A summary of your conversation written by the compressor model.
    Summary,
    /// Only the prompt.
    #[default]
    None,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum TimeoutAction {
    /// Stop waiting; the result arrives later as a message.
    #[default]
    Background,
    /// Cancel the sub-agent.
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
    /// Give it only tools that change nothing (default false).
    #[serde(default)]
    pub readonly: bool,
    /// Let its commands reach the network where the approval policy allows it (default false).
    #[serde(default)]
    pub network_access: bool,
    /// Return at once with its run id instead of waiting; its result arrives later as a
    /// message (default false).
    #[serde(default)]
    pub background: bool,
    /// Seconds to wait for it (at most the tool timeout).
    pub timeout: Option<u64>,
    /// When the wait times out: background (default) or cancel.
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

pub fn is_agent_tool(name: &str) -> bool {
    matches!(
        name,
        SPAWN_AGENT | READ_AGENT_OUTPUT | LIST_AGENTS | CANCEL_AGENT | FORK | GATHER_ALL
    )
}

/// The schemas of the sub-agent tools, generated once.
pub fn agent_tool_specs() -> Arc<[ToolSpec]> {
    static SPECS: OnceLock<Arc<[ToolSpec]>> = OnceLock::new();
    SPECS
        .get_or_init(|| {
            [
                spec::<SpawnArgs>(
                    SPAWN_AGENT,
                    "Start a sub-agent for a self-contained task; it works with the same tools \
                     and answers with its result. Waits for it unless background is true or \
                     the timeout passes (then it goes on in the background and its result \
                     arrives as a message). Returns JSON with run_id, status and response.",
                ),
                spec::<RunIdArgs>(
                    READ_AGENT_OUTPUT,
                    "The status of a sub-agent run and its answer (or what it is doing now).",
                ),
                spec::<NoArgs>(
                    LIST_AGENTS,
                    "The sub-agents you started, with status, kind and task.",
                ),
                spec::<RunIdArgs>(
                    CANCEL_AGENT,
                    "Cancel a sub-agent run and everything it started.",
                ),
                spec::<ForkArgs>(
                    FORK,
                    "Start a copy of yourself, with your conversation so far, on one task in \
                     parallel. Returns its run id at once; collect the answers with \
                     gather_all.",
                ),
                spec::<NoArgs>(
                    GATHER_ALL,
                    "Wait for every open fork and return {fork_id: {status, response}}.",
                ),
            ]
            .into()
        })
        .clone()
}

fn spec<A: JsonSchema>(name: &str, description: &str) -> ToolSpec {
    ToolSpec {
        name: name.to_string(),
        description: description.to_string(),
        input_schema: schema_of::<A>(),
    }
}
