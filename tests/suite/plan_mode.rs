//! Plan mode through the binary against an in-test server that records the requests: the
//! agent reads and thinks but its writes are refused, its last message is the plan, and the
//! mode reaches the model only as a note at the end of the request, so the tool list and the
//! system prompt stay as they were; `--approve-plan` carries the plan out in the normal mode.

use crate::cli_support;
use crate::common;

use std::sync::Arc;

use cli_support::{Workspace, text};
use common::{Recorded, Reply, TestServer, openai_text, openai_tool_call, run_on_openai_server};
use serde_json::{Value, json};

type TestResult = Result<(), Box<dyn std::error::Error>>;

async fn mnemo(
    ws: &Arc<Workspace>,
    server: &TestServer,
    (before, after): (&[&str], &[&str]),
) -> Result<std::process::Output, tokio::task::JoinError> {
    let mut args: Vec<String> = before.iter().map(|a| a.to_string()).collect();
    args.extend(run_on_openai_server(&server.base_url, "add a greeting"));
    args.extend(after.iter().map(|a| a.to_string()));
    cli_support::mnemo_with_key(ws, args).await
}

fn body(request: &Recorded) -> Value {
    request.json().unwrap_or_else(|e| panic!("{e}"))
}

fn last_message(request: &Recorded) -> String {
    body(request)["messages"]
        .as_array()
        .and_then(|m| m.last())
        .map(Value::to_string)
        .unwrap_or_default()
}

#[tokio::test(flavor = "multi_thread")]
async fn a_plan_changes_nothing_until_it_is_approved_and_keeps_the_cached_prefix() -> TestResult {
    let server = TestServer::start(vec![
        Reply::sse(&openai_tool_call(
            "write_file",
            &json!({"path": "hello.txt", "content": "hi"}),
        )),
        Reply::sse(&openai_text("PLAN-1: write hello.txt with a greeting")),
        Reply::sse(&openai_tool_call(
            "write_file",
            &json!({"path": "hello.txt", "content": "hi"}),
        )),
        Reply::sse(&openai_text("done")),
    ])
    .await?;
    let ws = Arc::new(Workspace::new());

    let planned = mnemo(&ws, &server, (&[], &["--plan"])).await?;
    let stderr = text(&planned.stderr);
    assert!(planned.status.success(), "{stderr}");
    assert!(
        !ws.path().join("hello.txt").exists(),
        "plan mode wrote a file"
    );
    assert!(stderr.contains("plan mode:"), "{stderr}");
    assert!(stderr.contains("--approve-plan"), "{stderr}");
    assert!(text(&planned.stdout).contains("PLAN-1"));
    let requests = server.requests();
    assert_eq!(requests.len(), 2);
    assert!(last_message(&requests[0]).contains("[mnemo] Plan mode"));
    assert!(
        last_message(&requests[1]).contains("refused"),
        "the write was refused"
    );

    let approved = ws.mnemo_with(
        &[
            "--continue",
            "--provider",
            "openai",
            "--base-url",
            &format!("{}/v1", server.base_url),
            "--model",
            "m",
            "--api-key-env",
            "LLM_KEY",
            "run",
            "--approve-plan",
        ],
        None,
        &[("LLM_KEY", "k")],
    );
    let stderr = text(&approved.stderr);
    assert!(approved.status.success(), "{stderr}");
    assert_eq!(
        ws.read("hello.txt"),
        "hi",
        "the approved plan was carried out"
    );
    let requests = server.requests();
    assert_eq!(requests.len(), 4);
    let carried = last_message(&requests[2]);
    assert!(carried.contains("The plan is approved"), "{carried}");
    assert!(carried.contains("PLAN-1: write hello.txt"), "{carried}");
    assert!(!carried.contains("[mnemo] Plan mode"), "{carried}");
    // The mode never touched the cached prefix: the same tools and system prompt throughout,
    // and each request of the plan extends the one before.
    let first = body(&requests[0]);
    for later in &requests[1..] {
        let later = body(later);
        assert_eq!(later["tools"], first["tools"]);
        assert_eq!(later["messages"][0], first["messages"][0]);
    }
    let (one, two) = (body(&requests[0]), body(&requests[1]));
    let (one, two) = (
        one["messages"].as_array().cloned().unwrap_or_default(),
        two["messages"].as_array().cloned().unwrap_or_default(),
    );
    assert_eq!(one[..one.len() - 1], two[..one.len() - 1]);
    Ok(())
}
