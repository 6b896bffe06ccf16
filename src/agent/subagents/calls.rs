//! The sub-agent tools as the session runs them. Waiting stays within the tool timeout: a
//! sub-agent that needs longer goes on in the background (the elastic timeout) or is cancelled,
//! as the call asked.

use std::time::{Duration, Instant};

use serde_json::{Value, json};

use super::args::{self, ForkArgs, SpawnArgs, TimeoutAction};
use super::child::{RunSpec, run_json};
use super::host::AgentHost;
use super::{Run, Waited};
use crate::protocol::{AgentKind, AgentStatus};
use crate::text::{clip, first_line};
use crate::tools::{ToolContext, ToolError};

/// A run's label: the first line of its task, cut to this many characters.
const LABEL_CHARS: usize = 80;
/// How long `cancel_agent` waits for the run to wind down before it answers.
pub(super) const CANCEL_WAIT: Duration = Duration::from_secs(2);

impl AgentHost {
    pub(super) async fn spawn_agent(
        &self,
        args: SpawnArgs,
        ctx: &ToolContext,
    ) -> Result<String, ToolError> {
        let spec = RunSpec {
            kind: AgentKind::Spawn,
            label: clip(first_line(&args.prompt), LABEL_CHARS),
            prompt: args.prompt,
            model: args.model,
            context: args.context_mode,
            readonly: args.readonly,
            network: args.network_access,
            background: args.background,
        };
        let run = self.start_run(spec).await.map_err(ToolError::Failed)?;
        if args.background {
            return Ok(json!({"run_id": run.id, "status": "running"}).to_string());
        }
        let limit = args
            .timeout
            .map_or(ctx.timeout, |secs| Duration::from_secs(secs.max(1)))
            .min(ctx.timeout);
        match run.wait(limit, &ctx.cancel).await {
            Waited::Done => Ok(run_json(&run).to_string()),
            Waited::Cancelled => {
                run.cancel.cancel();
                Err(ToolError::Cancelled)
            }
            Waited::TimedOut => match args.timeout_action {
                TimeoutAction::Background if run.move_to_background() => Ok(json!({
                    "run_id": run.id,
                    "status": "moved_to_background",
                    "note": "it goes on; its result will arrive as a message, and \
                             read_agent_output shows its progress meanwhile",
                })
                .to_string()),
                TimeoutAction::Background => Ok(run_json(&run).to_string()),
                TimeoutAction::Cancel => {
                    run.cancel.cancel();
                    run.wait(CANCEL_WAIT, &ctx.cancel).await;
                    Ok(json!({
                        "run_id": run.id,
                        "status": AgentStatus::Cancelled.label(),
                        "reason": format!("no answer within {} s", limit.as_secs()),
                    })
                    .to_string())
                }
            },
        }
    }

    pub(super) async fn fork(&self, args: ForkArgs) -> Result<String, ToolError> {
        let prompt = format!(
            "You are a fork: a copy of the agent whose conversation is above, started to do \
             one task in parallel with it. Do only this task and answer with its result.\n\
             Task: {}\n{}",
            args.task, args.instruction
        );
        let spec = RunSpec {
            kind: AgentKind::Fork,
            label: clip(first_line(&args.task), LABEL_CHARS),
            prompt,
            model: None,
            context: args::ContextMode::Full,
            readonly: false,
            network: true,
            background: false,
        };
        let run = self.start_run(spec).await.map_err(ToolError::Failed)?;
        Ok(json!({"fork_id": run.id, "status": "running"}).to_string())
    }

    /// Waits (within the tool timeout) for every fork not gathered yet.
    pub(super) async fn gather_all(&self, ctx: &ToolContext) -> Result<String, ToolError> {
        let deadline = Instant::now() + ctx.timeout;
        let mut results = serde_json::Map::new();
        for run in self.runs.all().into_iter().filter(|r| r.is_open_fork()) {
            let left = deadline.saturating_duration_since(Instant::now());
            if run.wait(left, &ctx.cancel).await == Waited::Cancelled {
                return Err(ToolError::Cancelled);
            }
            let (status, response) = run.report();
            if status != AgentStatus::Running {
                run.mark_gathered();
            }
            results.insert(
                run.id.clone(),
                json!({"status": status.label(), "response": response}),
            );
        }
        Ok(Value::Object(results).to_string())
    }

    pub(super) fn list_agents(&self) -> String {
        let runs: Vec<Value> = self
            .runs
            .all()
            .iter()
            .map(|run| {
                let kind = match run.kind {
                    AgentKind::Spawn => "spawn",
                    AgentKind::Fork => "fork",
                };
                json!({
                    "run_id": run.id,
                    "kind": kind,
                    "status": run.status().label(),
                    "task": run.label,
                    "seconds": run.started.elapsed().as_secs(),
                })
            })
            .collect();
        Value::Array(runs).to_string()
    }

    pub(super) fn find_run(&self, id: &str) -> Result<std::sync::Arc<Run>, ToolError> {
        self.runs.get(id).ok_or_else(|| {
            let known: Vec<String> = self.runs.all().iter().map(|r| r.id.clone()).collect();
            let known = match known.is_empty() {
                true => "none".to_string(),
                false => known.join(", "),
            };
            ToolError::Failed(format!(
                "no sub-agent run `{id}` was started here; known runs: {known}"
            ))
        })
    }
}
