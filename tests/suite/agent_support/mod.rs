//! Builds agent sessions on the scripted provider for the agent tests.

// Each test binary uses a different part of this module.
#![allow(dead_code)]

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use mnemo::agent::{AgentHandle, Session, SessionSettings};
use mnemo::llm::Price;
use mnemo::llm::fallback::{ChainModel, FallbackChain, RetryPolicy};
use mnemo::llm::scripted::{Script, ScriptedProvider};
use mnemo::memory::Store;
use mnemo::protocol::{Event, Op};
use mnemo::tools::{ToolContext, ToolError, ToolRegistry, TypedTool};
use schemars::JsonSchema;
use serde::Deserialize;

pub struct Harness {
    pub handle: AgentHandle,
    pub sleeper_calls: Arc<AtomicUsize>,
    /// Kept so the directory lives as long as the session.
    _workspace: tempfile::TempDir,
}

/// A read-only tool that sleeps, so tests can watch concurrency, timeouts and interrupts.
pub struct Sleeper {
    pub calls: Arc<AtomicUsize>,
}

#[derive(Deserialize, JsonSchema)]
pub struct SleepArgs {
    /// Milliseconds to sleep.
    pub ms: u64,
}

impl TypedTool for Sleeper {
    type Args = SleepArgs;
    const NAME: &'static str = "sleep";
    const DESCRIPTION: &'static str = "Sleeps for a while.";
    const MUTATES: bool = false;

    async fn run(&self, args: SleepArgs, ctx: &ToolContext) -> Result<String, ToolError> {
        self.calls.fetch_add(1, Ordering::SeqCst);
        tokio::select! {
            () = tokio::time::sleep(Duration::from_millis(args.ms)) => Ok(format!("slept {} ms", args.ms)),
            () = ctx.cancel.cancelled() => Err(ToolError::Cancelled),
        }
    }
}

/// A chain of one scripted model, as a session without fallbacks has.
pub fn chain(provider: Arc<ScriptedProvider>) -> Arc<FallbackChain> {
    Arc::new(FallbackChain::new(
        vec![ChainModel {
            name: "scripted".into(),
            provider,
            context_window: 10_000,
            max_output_tokens: 1024,
            price: Price::default(),
        }],
        RetryPolicy::default(),
    ))
}

pub fn settings(workspace: &std::path::Path) -> SessionSettings {
    SessionSettings::from_config(workspace.to_path_buf(), "test".into(), &Default::default())
}

pub async fn start(script: serde_json::Value, tweak: impl FnOnce(&mut SessionSettings)) -> Harness {
    let script: Script = serde_json::from_value(script).unwrap_or_else(|e| panic!("script: {e}"));
    let provider = Arc::new(ScriptedProvider::new(script));
    start_with_chain(chain(provider), tweak).await
}

/// A session on `chain` (for example real providers against an in-test server).
pub async fn start_with_chain(
    chain: Arc<FallbackChain>,
    tweak: impl FnOnce(&mut SessionSettings),
) -> Harness {
    let workspace = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let root = workspace
        .path()
        .canonicalize()
        .unwrap_or_else(|e| panic!("{e}"));
    let sleeper_calls = Arc::new(AtomicUsize::new(0));
    let mut tools: ToolRegistry = mnemo::tools::builtin::builtin_tools();
    tools.register(Sleeper {
        calls: sleeper_calls.clone(),
    });
    let mut settings = settings(&root);
    tweak(&mut settings);
    let store = Store::open_in_memory().unwrap_or_else(|e| panic!("store: {e}"));
    let session = Session::create(settings, chain, tools, store, None)
        .await
        .unwrap_or_else(|e| panic!("session: {e}"));
    Harness {
        handle: mnemo::agent::spawn(session),
        sleeper_calls,
        _workspace: workspace,
    }
}

impl Harness {
    /// The session's workspace root (canonical).
    pub fn workspace(&self) -> std::path::PathBuf {
        self._workspace
            .path()
            .canonicalize()
            .unwrap_or_else(|e| panic!("{e}"))
    }

    pub async fn send(&self, op: Op) {
        self.handle
            .ops
            .send(op)
            .await
            .unwrap_or_else(|e| panic!("send: {e}"));
    }

    /// Receives events until one matches, returning everything seen including it.
    pub async fn until(&mut self, mut done: impl FnMut(&Event) -> bool) -> Vec<Event> {
        let mut seen = Vec::new();
        loop {
            let event = tokio::time::timeout(Duration::from_secs(30), self.handle.events.recv())
                .await
                .unwrap_or_else(|_| panic!("no event; seen so far: {seen:#?}"))
                .unwrap_or_else(|| panic!("agent ended; seen: {seen:#?}"));
            let stop = done(&event);
            seen.push(event);
            if stop {
                return seen;
            }
        }
    }

    pub async fn until_turn_finished(&mut self) -> Vec<Event> {
        self.until(|e| matches!(e, Event::TurnFinished { .. }))
            .await
    }

    /// Shuts the agent down and returns its session.
    pub async fn finish(self) -> Session {
        self.send(Op::Shutdown).await;
        let Harness { mut handle, .. } = self;
        while handle.events.recv().await.is_some() {}
        handle.task.await.unwrap_or_else(|e| panic!("{e}"))
    }
}
