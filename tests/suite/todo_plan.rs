//! The agent's visible plan end to end through the binary: `mnemo run --json` emits it as
//! events, while a step is open it rides at the end of the next request (the earlier request
//! stays a prefix), and a resumed session shows it again and keeps sending it.

use crate::cli_support;
use crate::common;

use std::sync::Arc;

use cli_support::{Workspace, text};
use common::{Recorded, Reply, TestServer, openai_text, openai_tool_call, run_on_openai_server};
use serde_json::{Value, json};

type TestResult = Result<(), Box<dyn std::error::Error>>;

async fn run(
    ws: &Arc<Workspace>,
    server: &TestServer,
    (before, after): (&[&str], &[&str]),
) -> Result<std::process::Output, tokio::task::JoinError> {
    let mut args: Vec<String> = before.iter().map(|a| a.to_string()).collect();
    args.extend(run_on_openai_server(&server.base_url, "fix the parser"));
    args.extend(after.iter().map(|a| a.to_string()));
    cli_support::mnemo_with_key(ws, args).await
}

fn messages(request: &Recorded) -> Vec<Value> {
    request
        .json()
        .unwrap_or_else(|e| panic!("{e}"))
        .get("messages")
        .cloned()
        .and_then(|m| m.as_array().cloned())
        .unwrap_or_default()
}

/// The text of the newest message of a request (the tool results and what rides with them).
fn last_message(request: &Recorded) -> String {
    messages(request)
        .last()
        .map(Value::to_string)
        .unwrap_or_default()
}

const PLAN_TAIL: &str = "[Plan]\\n[>] read the parser\\n[ ] fix the bug";

#[tokio::test(flavor = "multi_thread")]
async fn the_plan_is_an_event_rides_with_the_next_request_and_survives_a_resume() -> TestResult {
    let plan = json!({"items": [
        {"step": "read the parser", "status": "in_progress"},
        {"step": "fix the bug", "status": "pending"},
    ]});
    let server = TestServer::start(vec![
        Reply::sse(&openai_tool_call("todo", &plan)),
        Reply::sse(&openai_text("reading it now")),
        Reply::sse(&openai_text("still on it")),
    ])
    .await?;
    let ws = Arc::new(Workspace::new());

    let out = run(&ws, &server, (&[], &["--json"])).await?;
    assert!(out.status.success(), "{}", text(&out.stderr));
    let events: Vec<Value> = text(&out.stdout)
        .lines()
        .filter_map(|line| serde_json::from_str(line).ok())
        .collect();
    let updates: Vec<&Value> = events
        .iter()
        .filter(|e| e["type"] == "todo_updated")
        .collect();
    assert_eq!(updates.len(), 1, "{events:#?}");
    assert_eq!(updates[0]["items"], plan["items"]);

    let requests = server.requests();
    assert_eq!(requests.len(), 2);
    assert!(!last_message(&requests[0]).contains("[Plan]"));
    let second = last_message(&requests[1]);
    assert!(second.contains(PLAN_TAIL), "{second}");
    let (before, after) = (messages(&requests[0]), messages(&requests[1]));
    assert_eq!(
        after[..before.len()],
        before[..],
        "the history was rewritten"
    );

    // The next run goes on with the same session: the plan is shown again and still sent.
    let out = run(&ws, &server, (&["--continue"], &[])).await?;
    let stderr = text(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(stderr.contains("☰ Plan · 0 of 2 done"), "{stderr}");
    assert!(stderr.contains("[>] read the parser"), "{stderr}");
    let third = last_message(&server.requests()[2]);
    assert!(third.contains(PLAN_TAIL), "{third}");
    Ok(())
}

#[tokio::test(flavor = "multi_thread")]
async fn a_plan_that_breaks_the_rules_is_refused_and_not_shown() -> TestResult {
    let two_open = json!({"items": [
        {"step": "read", "status": "in_progress"},
        {"step": "fix", "status": "in_progress"},
    ]});
    let server = TestServer::start(vec![
        Reply::sse(&openai_tool_call("todo", &two_open)),
        Reply::sse(&openai_text("ok")),
    ])
    .await?;
    let ws = Arc::new(Workspace::new());
    let out = run(&ws, &server, (&[], &[])).await?;
    let stderr = text(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(!stderr.contains("☰ Plan"), "{stderr}");
    let results = last_message(&server.requests()[1]);
    assert!(
        results.contains("only one step can be in progress at a time"),
        "{results}"
    );
    assert!(!results.contains("[Plan]"), "{results}");
    Ok(())
}
