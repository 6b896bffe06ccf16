//! Helpers for the skills tests: a workspace and a config dir on one store, sessions with
//! skills and `turn_report` that talk to an in-test Anthropic server, a harmless `sleep` tool
//! for filler calls, and readers of recorded requests and skill stats.

// Each test binary uses a different part of this module.
#![allow(dead_code)]

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use mnemo::agent::{Session, SessionSettings, SkillSettings, prepare_skills};
use mnemo::config::Config;
use mnemo::llm::anthropic::AnthropicProvider;
use mnemo::memory::Store;
use mnemo::memory::skills::SkillStats;
use mnemo::tools::{ToolContext, ToolError, TypedTool};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::Value;

use crate::capability_support::{Agent, Fallible, chain_of};
use crate::common::TestServer;

/// A read-only tool that sleeps `ms` milliseconds: filler calls, and time to act mid-turn.
pub struct Sleep;

#[derive(Deserialize, JsonSchema)]
pub struct SleepArgs {
    pub ms: u64,
}

impl TypedTool for Sleep {
    type Args = SleepArgs;
    const NAME: &'static str = "sleep";
    const DESCRIPTION: &'static str = "Sleeps for a while.";
    const MUTATES: bool = false;

    async fn run(&self, args: SleepArgs, _ctx: &ToolContext) -> Result<String, ToolError> {
        tokio::time::sleep(Duration::from_millis(args.ms)).await;
        Ok(format!("slept {} ms", args.ms))
    }
}

/// A workspace, a config dir (user skills in its `skills/`) and a store, in one temp dir.
pub struct Env {
    _dir: tempfile::TempDir,
    pub ws: PathBuf,
    pub config: PathBuf,
    pub store: Store,
}

impl Env {
    pub fn new() -> Fallible<Self> {
        let dir = tempfile::tempdir()?;
        let root = dir.path().canonicalize()?;
        let ws = root.join("ws");
        let config = root.join("config");
        std::fs::create_dir_all(&ws)?;
        std::fs::create_dir_all(config.join("skills"))?;
        let store = Store::open(&root.join("mnemo.db"))?;
        Ok(Self {
            _dir: dir,
            ws,
            config,
            store,
        })
    }

    /// Writes a person's skill into the config dir's `skills/`.
    pub fn person_skill(&self, name: &str, description: &str, body: &str) -> Fallible<PathBuf> {
        let root = self.config.join("skills");
        let dir =
            mnemo::skills::write_skill(&root, name, description, body, &serde_json::Map::new())?;
        Ok(dir.join("SKILL.md"))
    }

    /// A new session with the skills found now, talking to `server`, started.
    pub async fn agent(
        &self,
        server: &TestServer,
        learn_after_steps: u32,
        tweak: impl FnOnce(&mut SessionSettings),
    ) -> Fallible<Agent> {
        let provider = Arc::new(AnthropicProvider::new(
            server.settings("claude-sonnet-4-5", Some("test-key")),
        ));
        let mut settings =
            SessionSettings::from_config(self.ws.clone(), "test".into(), &Config::default());
        settings.checkpoint_every = 0;
        tweak(&mut settings);
        let mut tools = mnemo::tools::builtin::builtin_tools();
        tools.register(mnemo::tools::turn_report::TurnReport);
        tools.register(Sleep);
        let mut session = Session::create(
            settings,
            chain_of(provider),
            tools,
            self.store.clone(),
            None,
        )
        .await?;
        let (library, _notices) =
            prepare_skills(&self.store, self.ws.clone(), self.config.clone()).await?;
        session.set_skills(
            library,
            SkillSettings {
                catalog_tokens: None,
                learn_after_steps,
            },
        );
        Ok(Agent {
            handle: mnemo::agent::spawn(session),
            output_bytes: 0,
        })
    }

    /// The stats of skill `name`, if it has a row.
    pub async fn stats(&self, name: &str) -> Fallible<Option<SkillStats>> {
        let all = self.store.call(|db| db.skill_stats()).await?;
        Ok(all.into_iter().find(|s| s.name == name))
    }
}

/// Every recorded request body, as JSON.
pub fn bodies(server: &TestServer) -> Fallible<Vec<Value>> {
    Ok(server
        .requests()
        .into_iter()
        .map(|r| r.json())
        .collect::<Result<_, _>>()?)
}

/// The content blocks of a request's last message (a string content as one text block).
pub fn last_blocks(body: &Value) -> Vec<Value> {
    let last = body["messages"].as_array().and_then(|m| m.last());
    match last.map(|m| &m["content"]) {
        Some(Value::Array(blocks)) => blocks.clone(),
        Some(Value::String(text)) => vec![serde_json::json!({"type": "text", "text": text})],
        _ => Vec::new(),
    }
}

/// The texts of the text blocks of a request's last message.
pub fn last_texts(body: &Value) -> Vec<String> {
    last_blocks(body)
        .iter()
        .filter(|b| b["type"] == "text")
        .filter_map(|b| b["text"].as_str().map(String::from))
        .collect()
}

/// The text of the very last content block of a request, when it is a text block.
pub fn final_text(body: &Value) -> Option<String> {
    let blocks = last_blocks(body);
    let last = blocks.last()?;
    (last["type"] == "text").then(|| last["text"].as_str().map(String::from))?
}

/// The request's system prompt, as one string.
pub fn system_text(body: &Value) -> String {
    match &body["system"] {
        Value::String(text) => text.clone(),
        Value::Array(blocks) => blocks
            .iter()
            .filter_map(|b| b["text"].as_str())
            .collect::<Vec<_>>()
            .join("\n"),
        _ => String::new(),
    }
}
