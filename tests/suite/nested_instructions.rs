//! Instruction files everywhere they live, end to end through the binary against an in-test
//! server that records each request: the person's own `AGENTS.md` and the project root's are
//! in the system prompt; a subdirectory's reaches the conversation only once the agent worked
//! in that directory, appended so the earlier request stays a prefix, once per session even
//! across a resume; `CLAUDE.md` stands in where no `AGENTS.md` is; a link out is refused.

use crate::cli_support;
use crate::common;

use std::os::unix::fs::symlink;
use std::sync::Arc;

use cli_support::{Workspace, text};
use common::{Recorded, Reply, TestServer, openai_text, openai_tool_call, run_on_openai_server};
use serde_json::{Value, json};

type TestResult = Result<(), Box<dyn std::error::Error>>;

/// Runs `mnemo [extra] run PROMPT` against `server` on a blocking thread.
async fn run(
    ws: &Arc<Workspace>,
    server: &TestServer,
    extra: &[&str],
) -> Result<std::process::Output, tokio::task::JoinError> {
    let mut args: Vec<String> = extra.iter().map(|a| a.to_string()).collect();
    args.extend(run_on_openai_server(&server.base_url, "work on it"));
    cli_support::mnemo_with_key(ws, args).await
}

fn messages(request: &Recorded) -> Vec<Value> {
    request
        .json()
        .unwrap_or_else(|e| panic!("{e}"))
        .get("messages")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default()
}

fn body(request: &Recorded) -> String {
    String::from_utf8_lossy(&request.body).into_owned()
}

fn write(ws: &Workspace, name: &str, text: &str) {
    let path = ws.path().join(name);
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent).unwrap_or_else(|e| panic!("{e}"));
    }
    std::fs::write(path, text).unwrap_or_else(|e| panic!("{e}"));
}

#[tokio::test(flavor = "multi_thread")]
async fn nested_instructions_arrive_when_their_directory_is_touched() -> TestResult {
    let server = TestServer::start(vec![
        Reply::sse(&openai_tool_call(
            "read_file",
            &json!({"path": "sub/a.txt"}),
        )),
        Reply::sse(&openai_tool_call("list_dir", &json!({"path": "other"}))),
        Reply::sse(&openai_tool_call(
            "read_file",
            &json!({"path": "linked/b.txt"}),
        )),
        Reply::sse(&openai_text("done")),
        Reply::sse(&openai_tool_call(
            "read_file",
            &json!({"path": "sub/a.txt"}),
        )),
        Reply::sse(&openai_text("done again")),
    ])
    .await?;
    let ws = Arc::new(Workspace::new());
    let outside = tempfile::tempdir()?;
    std::fs::write(outside.path().join("secret.md"), "SECRET-OUTSIDE-42")?;
    write(&ws, ".cfg/AGENTS.md", "USER-RULE: answer briefly");
    write(&ws, "AGENTS.md", "ROOT-RULE: run make check");
    write(&ws, "sub/AGENTS.md", "SUB-RULE: tabs not spaces");
    write(&ws, "sub/a.txt", "alpha");
    write(&ws, "other/CLAUDE.md", "OTHER-CLAUDE-RULE: no unsafe");
    write(&ws, "linked/b.txt", "beta");
    symlink(
        outside.path().join("secret.md"),
        ws.path().join("linked/AGENTS.md"),
    )?;

    let out = run(&ws, &server, &[]).await?;
    let stderr = text(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    let requests = server.requests();
    assert_eq!(requests.len(), 4, "{stderr}");

    let first = body(&requests[0]);
    assert!(first.contains("USER-RULE: answer briefly"), "{first}");
    assert!(first.contains("ROOT-RULE: run make check"), "{first}");
    for later in ["SUB-RULE", "OTHER-CLAUDE-RULE"] {
        assert!(
            !first.contains(later),
            "{later} was sent before its directory was touched"
        );
    }
    let second = body(&requests[1]);
    assert!(second.contains("SUB-RULE: tabs not spaces"), "{second}");
    assert!(!second.contains("OTHER-CLAUDE-RULE"), "{second}");
    assert!(body(&requests[2]).contains("OTHER-CLAUDE-RULE: no unsafe"));
    // Each request extends the one before it: the system prompt and history are not rewritten.
    for pair in requests.windows(2) {
        let (before, after) = (messages(&pair[0]), messages(&pair[1]));
        assert!(after.len() > before.len());
        assert_eq!(after[..before.len()], before[..]);
    }
    let last = body(&requests[3]);
    assert!(
        !last.contains("SECRET-OUTSIDE-42"),
        "a link out reached the provider"
    );
    assert_eq!(last.matches("SUB-RULE").count(), 1, "{last}");
    assert!(
        stderr.contains("linked/AGENTS.md is a symlink out of the workspace"),
        "{stderr}"
    );

    // A resumed session touching the directory again does not get the file twice.
    let out = run(&ws, &server, &["--continue"]).await?;
    assert!(out.status.success(), "{}", text(&out.stderr));
    let requests = server.requests();
    assert_eq!(requests.len(), 6);
    assert_eq!(body(&requests[5]).matches("SUB-RULE").count(), 1);
    Ok(())
}
