//! The crash boundary: a tool that panics is a failed call, its crash record is written (and
//! posted to the webhook), and the session goes on; `mnemo doctor` checks the set-up and lists
//! the records.

#[path = "suite/agent_support/mod.rs"]
mod agent_support;
#[path = "suite/cli_support/mod.rs"]
mod cli_support;
#[path = "suite/common/mod.rs"]
mod common;

use std::sync::Arc;

use agent_support::{chain, settings};
use cli_support::{Workspace, text};
use common::{Reply, TestServer};
use mnemo::agent::Session;
use mnemo::crash::CrashRecord;
use mnemo::llm::scripted::{Script, ScriptedProvider};
use mnemo::memory::Store;
use mnemo::protocol::{Event, Op, ToolStatus, TurnStatus};
use mnemo::tools::{ToolContext, ToolError, TypedTool};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::json;

type TestResult = Result<(), Box<dyn std::error::Error>>;

/// A tool with a bug.
struct Buggy;

#[derive(Deserialize, JsonSchema)]
struct BuggyArgs {}

impl TypedTool for Buggy {
    type Args = BuggyArgs;
    const NAME: &'static str = "buggy";
    const DESCRIPTION: &'static str = "Has a bug.";
    const MUTATES: bool = false;

    async fn run(&self, _args: BuggyArgs, _ctx: &ToolContext) -> Result<String, ToolError> {
        let lines: Vec<&str> = Vec::new();
        Ok(lines[3].to_string())
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_tool_that_panics_leaves_a_record_and_the_session_goes_on() -> TestResult {
    let data = tempfile::tempdir()?;
    mnemo::crash::install(Some(data.path()));
    let webhook = TestServer::start(vec![Reply::json(200, "{}")]).await?;
    mnemo::crash::set_webhook(Some(format!("{}/crashes", webhook.base_url)));

    let ws = tempfile::tempdir()?;
    let script: Script = serde_json::from_value(json!({"turns": [
        {"tool_calls": [{"name": "buggy", "arguments": {}}]},
        {"text": "I went on without it."}
    ]}))?;
    let mut tools = mnemo::tools::builtin::builtin_tools();
    tools.register(Buggy);
    let session = Session::create(
        settings(&ws.path().canonicalize()?),
        chain(Arc::new(ScriptedProvider::new(script))),
        tools,
        Store::open_in_memory()?,
        None,
    )
    .await?;
    let id = session.id.clone();
    let mut handle = mnemo::agent::spawn(session);
    handle
        .ops
        .send(Op::user_input("use the buggy tool"))
        .await?;
    let mut events = Vec::new();
    while !matches!(events.last(), Some(Event::TurnFinished { .. })) {
        let next = tokio::time::timeout(std::time::Duration::from_secs(20), handle.events.recv());
        events.push(next.await?.ok_or("the agent ended")?);
    }
    assert!(matches!(
        events.last(),
        Some(Event::TurnFinished {
            status: TurnStatus::Completed,
            ..
        })
    ));
    let output = events
        .iter()
        .find_map(|e| match e {
            Event::ToolCallFinished {
                status: ToolStatus::Error,
                output,
                ..
            } => Some(output.clone()),
            _ => None,
        })
        .ok_or("no failed tool call")?;
    assert!(
        output.contains("it crashed (index out of bounds"),
        "{output}"
    );
    assert!(output.contains("a crash record was written to"), "{output}");

    let records = mnemo::crash::recent(&mnemo::crash::crash_dir(data.path()), 5);
    assert_eq!(records.len(), 1);
    let (path, record) = &records[0];
    assert!(output.contains(&path.display().to_string()), "{output}");
    assert_eq!(record.component, "tool:buggy");
    assert_eq!(record.session_id.as_deref(), Some(id.as_str()));
    assert!(record.message.contains("index out of bounds"));
    assert!(
        record
            .location
            .as_deref()
            .is_some_and(|l| l.contains("crash.rs"))
    );
    assert_eq!(record.version, env!("CARGO_PKG_VERSION"));
    assert!(!record.backtrace.is_empty());

    let posted = webhook.only_request();
    assert_eq!(posted.path, "/crashes");
    let sent: CrashRecord = serde_json::from_slice(&posted.body)?;
    assert_eq!(&sent, record);
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn doctor_checks_the_set_up_and_lists_crash_records() -> TestResult {
    let ws = Workspace::new();
    // The doctor asks the chosen model's server whether it answers: one runs here.
    let ollama = TestServer::start(vec![Reply::json(200, r#"{"data":[]}"#)]).await?;
    std::fs::create_dir_all(ws.path().join(".cfg"))?;
    std::fs::write(
        ws.path().join(".cfg/config.toml"),
        format!(
            "default_model = \"ollama\"\n[sandbox]\nallow_domains = [\"crates.io\", \"*.crates.io\"]\n\
             [models.ollama]\nbase_url = \"{}/v1\"\n",
            ollama.base_url
        ),
    )?;
    let crashes = ws.path().join(".data/crashes");
    std::fs::create_dir_all(&crashes)?;
    let record = CrashRecord {
        time: "2026-11-20T10:00:00.000Z".into(),
        component: "sub-agent".into(),
        message: "something broke".into(),
        location: Some("src/x.rs:1:1".into()),
        backtrace: String::new(),
        version: "0.1.0".into(),
        session_id: None,
    };
    std::fs::write(crashes.join("one.json"), serde_json::to_string(&record)?)?;
    let out = ws.mnemo(&["doctor"], None);
    let stdout = text(&out.stdout);
    assert!(out.status.success(), "{stdout}{}", text(&out.stderr));
    for line in [
        "✓ the sandbox works",
        "commands reach only crates.io, *.crates.io through mnemo's proxy",
        "web search through Anthropic models' own search tool; for other models set [web] searxng_url",
        "✓ the default model ollama needs no key",
        "is writable",
        "✓ the database is sound",
        "2026-11-20T10:00:00.000Z  sub-agent: something broke",
    ] {
        assert!(stdout.contains(line), "missing {line:?} in:\n{stdout}");
    }
    assert!(
        stdout.contains("claude-sonnet: no key (ANTHROPIC_API_KEY unset)"),
        "{stdout}"
    );

    std::fs::write(ws.path().join(".cfg/config.toml"), "")?;
    let out = ws.mnemo(&["doctor"], None);
    assert_eq!(out.status.code(), Some(1));
    assert!(text(&out.stdout).contains("✗ the default model claude-sonnet has no key"));
    Ok(())
}
