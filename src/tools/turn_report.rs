//! `turn_report`: the model's short account of the turn it just finished. The tool only
//! validates it; the agent reads the call to record the report, keep its memory notes,
//! retitle the session and compact when asked.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::{ToolContext, ToolError, TypedTool};

pub struct TurnReport;

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct TurnReportArgs {
    /// Whether the user's request of this turn was fully done.
    pub did_success: bool,
    /// What the session is about now, in a few words.
    pub current_topic: String,
    /// Durable facts or lessons worth keeping for later sessions; usually empty.
    #[serde(default)]
    pub memory_notes: Vec<String>,
    /// True when the earlier conversation no longer matters for what comes next.
    #[serde(default)]
    pub should_compress: bool,
}

impl TypedTool for TurnReport {
    type Args = TurnReportArgs;
    const NAME: &'static str = "turn_report";
    const DESCRIPTION: &'static str = "Report on the turn you are finishing. Call it once, in \
        the same response as your final answer to the user.";
    const MUTATES: bool = false;

    async fn run(&self, _args: TurnReportArgs, _ctx: &ToolContext) -> Result<String, ToolError> {
        Ok("recorded".into())
    }
}
