//! The sub-agent tools as registry tools. Each reaches the session that calls it through the
//! [`AgentHost`] its `ToolContext` carries.

use super::args::{
    CANCEL_AGENT, FORK, ForkArgs, GATHER_ALL, LIST_AGENTS, NoArgs, READ_AGENT_OUTPUT, RunIdArgs,
    SPAWN_AGENT, SpawnArgs,
};
use super::calls::CANCEL_WAIT;
use super::child::run_json;
use super::host::AgentHost;
use crate::tools::{ToolContext, ToolError, ToolRegistry, TypedTool};

/// Registers the six sub-agent tools.
pub fn register(registry: &mut ToolRegistry) {
    registry.register(SpawnAgent);
    registry.register(ReadAgentOutput);
    registry.register(ListAgents);
    registry.register(CancelAgent);
    registry.register(Fork);
    registry.register(GatherAll);
}

/// Whether `name` is a sub-agent tool (its calls need the session's [`AgentHost`]).
pub fn is_agent_tool(name: &str) -> bool {
    matches!(
        name,
        SPAWN_AGENT | READ_AGENT_OUTPUT | LIST_AGENTS | CANCEL_AGENT | FORK | GATHER_ALL
    )
}

fn host(ctx: &ToolContext) -> Result<&AgentHost, ToolError> {
    ctx.agents
        .as_ref()
        .and_then(|agents| agents.as_any().downcast_ref::<AgentHost>())
        .ok_or_else(|| ToolError::Failed("sub-agents cannot be started from here".into()))
}

pub struct SpawnAgent;

impl TypedTool for SpawnAgent {
    type Args = SpawnArgs;
    const NAME: &'static str = SPAWN_AGENT;
    const DESCRIPTION: &'static str = "Start a sub-agent with your tools on a self-contained \
        task. Waits for its answer unless background is set or the timeout passes. Returns \
        JSON with run_id, status and response.";
    const MUTATES: bool = false;

    async fn run(&self, args: SpawnArgs, ctx: &ToolContext) -> Result<String, ToolError> {
        host(ctx)?.spawn_agent(args, ctx).await
    }
}

pub struct ReadAgentOutput;

impl TypedTool for ReadAgentOutput {
    type Args = RunIdArgs;
    const NAME: &'static str = READ_AGENT_OUTPUT;
    const DESCRIPTION: &'static str =
        "The status of a sub-agent run and its answer (or what it is doing now).";
    const MUTATES: bool = false;

    async fn run(&self, args: RunIdArgs, ctx: &ToolContext) -> Result<String, ToolError> {
        let run = host(ctx)?.find_run(&args.run_id)?;
        Ok(run_json(&run).to_string())
    }
}

pub struct ListAgents;

impl TypedTool for ListAgents {
    type Args = NoArgs;
    const NAME: &'static str = LIST_AGENTS;
    const DESCRIPTION: &'static str = "The sub-agents you started, with status, kind and task.";
    const MUTATES: bool = false;

    async fn run(&self, _args: NoArgs, ctx: &ToolContext) -> Result<String, ToolError> {
        Ok(host(ctx)?.list_agents())
    }
}

pub struct CancelAgent;

impl TypedTool for CancelAgent {
    type Args = RunIdArgs;
    const NAME: &'static str = CANCEL_AGENT;
    const DESCRIPTION: &'static str = "Cancel a sub-agent run and everything it started.";
    const MUTATES: bool = false;
    const DEFERRED: bool = true;

    async fn run(&self, args: RunIdArgs, ctx: &ToolContext) -> Result<String, ToolError> {
        let run = host(ctx)?.find_run(&args.run_id)?;
        run.cancel.cancel();
        run.wait(CANCEL_WAIT, &ctx.cancel).await;
        Ok(run_json(&run).to_string())
    }
}

pub struct Fork;

impl TypedTool for Fork {
    type Args = ForkArgs;
    const NAME: &'static str = FORK;
    const DESCRIPTION: &'static str = "Start a copy of yourself, with this conversation, on \
        one task in parallel; returns its run id at once. gather_all collects the answers.";
    const MUTATES: bool = false;

    async fn run(&self, args: ForkArgs, ctx: &ToolContext) -> Result<String, ToolError> {
        host(ctx)?.fork(args).await
    }
}

pub struct GatherAll;

impl TypedTool for GatherAll {
    type Args = NoArgs;
    const NAME: &'static str = GATHER_ALL;
    const DESCRIPTION: &'static str =
        "Wait for every open fork and return {fork_id: {status, response}}.";
    const MUTATES: bool = false;

    async fn run(&self, _args: NoArgs, ctx: &ToolContext) -> Result<String, ToolError> {
        host(ctx)?.gather_all(ctx).await
    }
}
