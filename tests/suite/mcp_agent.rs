//! MCP servers in the agent: real npm servers (installed into target/npm-mcp on first use),
//! the real Anthropic provider against an in-test server, so each test reads the requests the
//! model got. Tools are offered after the static ones, calls round trip, a server that adds a
//! tool has it in the next request, a killed server fails its call and comes back, a large
//! server is searched instead of listed, and write-like tools follow the approval mode.

use crate::capability_support;
use crate::common;
use crate::mcp_support;

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use capability_support::{
    Agent, Fallible, TestResult, approvals, chain_of, finished, last_results, sse_text,
    sse_tool_use, status, tool_names, tools_changed,
};
use common::{Reply, TestServer};
use mcp_support::{everything, filesystem, manager, ready};
use mnemo::agent::{Session, SessionSettings};
use mnemo::config::Config;
use mnemo::llm::anthropic::AnthropicProvider;
use mnemo::mcp::{McpManager, ServerState};
use mnemo::memory::Store;
use mnemo::protocol::{
    ApprovalAction, ApprovalDecision, CompactionKind, Event, Op, ToolStatus, TurnStatus,
};
use mnemo::sandbox::ApprovalMode;
use serde_json::{Value, json};

struct Setup {
    _dir: tempfile::TempDir,
    ws: PathBuf,
    logs: PathBuf,
    store: Store,
}

fn setup() -> Fallible<Setup> {
    let dir = tempfile::tempdir()?;
    let ws = dir.path().canonicalize()?.join("ws");
    let logs = dir.path().join("logs");
    std::fs::create_dir(&ws)?;
    let store = Store::open(&dir.path().join("mnemo.db"))?;
    Ok(Setup {
        _dir: dir,
        ws,
        logs,
        store,
    })
}

/// A session on `server`'s model with `mcp`'s servers, its settings changed by `tweak`.
async fn agent(
    server: &TestServer,
    setup: &Setup,
    mcp: McpManager,
    tweak: impl FnOnce(&mut SessionSettings),
) -> Fallible<Agent> {
    let mut settings =
        SessionSettings::from_config(setup.ws.clone(), "test".into(), &Config::default());
    tweak(&mut settings);
    let provider = AnthropicProvider::new(server.settings("claude-sonnet-4-5", Some("test-key")));
    let chain = chain_of(Arc::new(provider));
    let tools = mnemo::tools::builtin::builtin_tools();
    let mut session = Session::create(settings, chain, tools, setup.store.clone(), None).await?;
    session.set_mcp(mcp);
    Ok(Agent::spawn(session))
}

async fn model(replies: Vec<String>) -> Fallible<TestServer> {
    Ok(TestServer::start(replies.iter().map(|r| Reply::sse(r)).collect()).await?)
}

fn bodies(server: &TestServer) -> Fallible<Vec<Value>> {
    let mut out = Vec::new();
    for request in server.requests() {
        out.push(request.json()?);
    }
    Ok(out)
}

fn tool<'a>(body: &'a Value, name: &str) -> Option<&'a Value> {
    body["tools"].as_array()?.iter().find(|t| t["name"] == name)
}

#[tokio::test(flavor = "multi_thread")]
async fn mcp_tools_are_offered_after_the_static_ones_and_calls_round_trip() -> TestResult {
    let setup = setup()?;
    let mcp = manager(vec![("everything", everything()?)], &setup.logs);
    let server = model(vec![
        sse_tool_use(
            "r1",
            "mcp__everything__echo",
            &json!({"message": "hi there"}),
        ),
        sse_tool_use(
            "r2",
            "mcp__everything__get-structured-content",
            &json!({"location": "Chicago"}),
        ),
        sse_tool_use("r3", "mcp__everything__echo", &json!({})),
        sse_tool_use("r4", "mcp_list_resources", &json!({"server": "everything"})),
        sse_text("r5", "Done."),
    ])
    .await?;
    // The session starts at once; its first request waits for the server to be ready.
    let mut agent = agent(&server, &setup, mcp, |_| {}).await?;
    let events = agent
        .turn("echo, weather, a bad call and the resources")
        .await?;
    assert_eq!(status(&events), Some(TurnStatus::Completed));

    let requests = bodies(&server)?;
    assert_eq!(requests.len(), 5);
    let names = tool_names(&requests[0]);
    let echo_at = names
        .iter()
        .position(|n| n == "mcp__everything__echo")
        .ok_or(format!("no echo tool in {names:?}"))?;
    let shell_at = names.iter().position(|n| n == "shell").ok_or("no shell")?;
    assert!(shell_at < echo_at, "static tools come first: {names:?}");
    assert!(names.contains(&"mcp_read_resource".to_string()));
    // server-everything registers this one after the handshake and announces it.
    assert!(
        names.contains(&"mcp__everything__simulate-research-query".to_string()),
        "{names:?}"
    );
    let echo = tool(&requests[0], "mcp__everything__echo").ok_or("no echo")?;
    assert_eq!(
        echo["input_schema"]["properties"]["message"]["type"],
        "string"
    );
    assert!(
        echo.get("cache_control").is_none(),
        "the breakpoint stays on the static tools"
    );

    assert_eq!(
        last_results(&requests[1]),
        [("Echo: hi there".to_string(), false)]
    );
    let weather = &last_results(&requests[2])[0];
    assert!(
        !weather.1 && weather.0.contains("\"temperature\""),
        "{weather:?}"
    );
    let invalid = &last_results(&requests[3])[0];
    assert!(invalid.1, "an invalid call is a tool error: {invalid:?}");
    let resources = &last_results(&requests[4])[0];
    assert!(
        !resources.1 && resources.0.contains("\"uri\""),
        "{resources:?}"
    );

    let calls = finished(&events);
    let statuses: Vec<ToolStatus> = calls.iter().map(|c| c.1).collect();
    use ToolStatus::{Error, Ok as Done};
    assert_eq!(statuses, [Done, Done, Error, Done], "{calls:#?}");
    Ok(())
}

#[tokio::test(flavor = "multi_thread")]
async fn a_tool_the_server_adds_is_offered_in_the_next_request_and_announced() -> TestResult {
    let setup = setup()?;
    let mcp = manager(vec![("dyn", mcp_support::dynamic()?)], &setup.logs);
    let server = model(vec![
        sse_tool_use("r1", "mcp__dyn__add-tool", &json!({})),
        sse_tool_use("r2", "mcp__dyn__extra-tool", &json!({})),
        sse_text("r3", "The new tool works."),
    ])
    .await?;
    let mut agent = agent(&server, &setup, mcp, |_| {}).await?;
    let events = agent.turn("add a tool and use it").await?;
    assert_eq!(status(&events), Some(TurnStatus::Completed));
    let requests = bodies(&server)?;
    assert!(!tool_names(&requests[0]).contains(&"mcp__dyn__extra-tool".to_string()));
    // The server announces its new list while the call returns; the next step offers it.
    assert!(
        tool_names(&requests[1]).contains(&"mcp__dyn__extra-tool".to_string()),
        "{:?}",
        tool_names(&requests[1])
    );
    assert_eq!(last_results(&requests[2]), [("extra".to_string(), false)]);
    let added: Vec<String> = tools_changed(&events)
        .into_iter()
        .flat_map(|c| c.0)
        .collect();
    assert!(
        added.contains(&"mcp__dyn__extra-tool".to_string()),
        "{added:?}"
    );
    Ok(())
}

#[tokio::test(flavor = "multi_thread")]
async fn a_server_killed_mid_call_fails_the_call_and_the_session_goes_on() -> TestResult {
    let setup = setup()?;
    let mcp = manager(vec![("everything", everything()?)], &setup.logs);
    let long = json!({"duration": 30, "steps": 30});
    let server = model(vec![
        sse_tool_use(
            "r1",
            "mcp__everything__trigger-long-running-operation",
            &long,
        ),
        sse_text("r2", "The server went away."),
        sse_tool_use("r3", "mcp__everything__echo", &json!({"message": "back"})),
        sse_text("r4", "It is back."),
    ])
    .await?;
    let mut agent = agent(&server, &setup, mcp.clone(), |_| {}).await?;
    agent.send(Op::user_input("run the long operation")).await?;
    agent
        .until(|e| matches!(e, Event::ToolCallStarted { .. }))
        .await?;
    // Give the call time to reach the server, then kill the server.
    tokio::time::sleep(Duration::from_millis(500)).await;
    let pid = mcp
        .server_pid("everything")
        .ok_or("the server has no pid")?;
    // SAFETY: signalling a child process this test started.
    unsafe { libc::kill(pid as i32, libc::SIGKILL) };
    let events = agent
        .until(|e| matches!(e, Event::TurnFinished { .. }))
        .await?;
    assert_eq!(status(&events), Some(TurnStatus::Completed));
    let calls = finished(&events);
    assert_eq!(calls[0].1, ToolStatus::Error);
    assert!(
        calls[0].2.contains("exited during the call"),
        "{}",
        calls[0].2
    );

    // The server comes back with a new process, and the session uses it.
    let deadline = tokio::time::Instant::now() + Duration::from_secs(60);
    while !matches!(mcp.states()[0].1, ServerState::Ready { .. })
        || mcp.server_pid("everything") == Some(pid)
    {
        assert!(tokio::time::Instant::now() < deadline, "{:?}", mcp.states());
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let again = agent.turn("echo something").await?;
    assert_eq!(status(&again), Some(TurnStatus::Completed));
    let calls = finished(&again);
    assert_eq!(calls[0].1, ToolStatus::Ok, "{}", calls[0].2);
    assert_eq!(calls[0].2, "Echo: back");
    Ok(())
}

#[tokio::test(flavor = "multi_thread")]
async fn a_large_server_is_searched_and_what_is_found_leaves_with_compaction() -> TestResult {
    let setup = setup()?;
    std::fs::write(setup.ws.join("notes.txt"), "the deferred tool read me")?;
    let mcp = manager(vec![("filesystem", filesystem(&setup.ws)?)], &setup.logs);
    let read = json!({"path": setup.ws.join("notes.txt")});
    let summary = json!({"goal": "Read notes", "current_status": "the notes were read"});
    let mut replies = vec![
        sse_tool_use(
            "r1",
            "mcp_tool_search",
            &json!({"query": "read file contents"}),
        ),
        sse_tool_use(
            "r2",
            "use_tool",
            &json!({"tool": "mcp__filesystem__read_text_file", "arguments": read}),
        ),
        sse_text("r3", "The notes say: the deferred tool read me."),
    ];
    replies.extend((4..10).map(|i| sse_text(&format!("r{i}"), &format!("Noted, step {i}."))));
    replies.extend([
        sse_text("r10", &summary.to_string()),
        sse_text("r11", "Fine."),
    ]);
    let server = model(replies).await?;
    let mut agent = agent(&server, &setup, mcp, |s| s.mcp_max_tool_tokens = 100).await?;

    let events = agent.turn("read notes.txt").await?;
    assert_eq!(status(&events), Some(TurnStatus::Completed));
    let requests = bodies(&server)?;
    let first = tool_names(&requests[0]);
    assert!(first.contains(&"mcp_tool_search".to_string()), "{first:?}");
    assert!(
        !first.iter().any(|n| n.starts_with("mcp__filesystem__")),
        "{first:?}"
    );
    let search = tool(&requests[0], "mcp_tool_search").ok_or("no search tool")?;
    assert!(
        search["description"]
            .as_str()
            .unwrap_or("")
            .contains("filesystem (")
    );
    let found = &last_results(&requests[1])[0];
    assert!(
        found.0.contains("mcp__filesystem__read_text_file"),
        "{found:?}"
    );
    // What was found is called through use_tool: the tool list stays as it was, and the
    // found tool's schema is in the search result.
    let found: Value = serde_json::from_str(&found.0)?;
    assert!(found["tools"][0]["input_schema"].is_object(), "{found}");
    assert_eq!(requests[1]["tools"], requests[0]["tools"]);
    assert!(first.contains(&"use_tool".to_string()), "{first:?}");
    assert_eq!(
        last_results(&requests[2]),
        [("the deferred tool read me".to_string(), false)]
    );

    for i in 0..6 {
        let events = agent.turn(&format!("note {i}")).await?;
        assert_eq!(status(&events), Some(TurnStatus::Completed));
    }
    agent.send(Op::Compact).await?;
    let compacted = agent
        .until(|e| matches!(e, Event::Compacted { .. }))
        .await?;
    assert!(matches!(
        compacted.last(),
        Some(Event::Compacted {
            kind: CompactionKind::Model,
            ..
        })
    ));
    let after = agent.turn("anything else?").await?;
    assert_eq!(status(&after), Some(TurnStatus::Completed));
    let removed: Vec<String> = tools_changed(&compacted)
        .into_iter()
        .chain(tools_changed(&after))
        .flat_map(|c| c.1)
        .collect();
    assert!(
        removed.contains(&"mcp__filesystem__read_text_file".to_string()),
        "{removed:?}"
    );
    let requests = bodies(&server)?;
    let last = tool_names(requests.last().ok_or("no request")?);
    assert!(
        !last.iter().any(|n| n.starts_with("mcp__filesystem__")),
        "{last:?}"
    );
    assert!(last.contains(&"mcp_tool_search".to_string()));
    Ok(())
}

#[tokio::test(flavor = "multi_thread")]
async fn an_interrupt_cancels_the_mcp_call_at_the_server() -> TestResult {
    let setup = setup()?;
    let mcp = manager(vec![("dyn", mcp_support::dynamic()?)], &setup.logs);
    let server = model(vec![
        sse_tool_use("r1", "mcp__dyn__wait", &json!({})),
        sse_tool_use("r2", "mcp__dyn__was-cancelled", &json!({})),
        sse_text("r3", "It was cancelled."),
    ])
    .await?;
    let mut agent = agent(&server, &setup, mcp, |_| {}).await?;
    agent.send(Op::user_input("wait")).await?;
    agent
        .until(|e| matches!(e, Event::ToolCallStarted { .. }))
        .await?;
    tokio::time::sleep(Duration::from_millis(300)).await;
    let interrupted_at = std::time::Instant::now();
    agent.send(Op::Interrupt).await?;
    let events = agent
        .until(|e| matches!(e, Event::TurnFinished { .. }))
        .await?;
    assert_eq!(status(&events), Some(TurnStatus::Interrupted));
    assert!(interrupted_at.elapsed() < Duration::from_secs(5));
    let next = agent.turn("was it cancelled?").await?;
    let calls = finished(&next);
    assert_eq!(
        calls[0].2, "true",
        "the server heard the cancellation: {calls:#?}"
    );
    Ok(())
}

/// Answers each approval question with the next of `answers`, collecting the turn's events.
async fn answering(agent: &mut Agent, answers: &[ApprovalDecision]) -> Fallible<Vec<Event>> {
    let mut answers = answers.iter();
    let mut seen = Vec::new();
    loop {
        let events = agent
            .until(|e| {
                matches!(
                    e,
                    Event::ApprovalRequested { .. } | Event::TurnFinished { .. }
                )
            })
            .await?;
        let last = events.last().cloned();
        seen.extend(events);
        match last {
            Some(Event::ApprovalRequested { id, .. }) => {
                let decision = *answers.next().ok_or("an unexpected question")?;
                agent.send(Op::Approval { id, decision }).await?;
            }
            _ => return Ok(seen),
        }
    }
}

fn questions(events: &[Event]) -> Vec<ApprovalAction> {
    events
        .iter()
        .filter_map(|e| match e {
            Event::ApprovalRequested { action, .. } => Some(action.clone()),
            _ => None,
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread")]
async fn a_write_like_mcp_tool_asks_under_ask_and_a_read_only_one_does_not() -> TestResult {
    let setup = setup()?;
    let mcp = manager(vec![("filesystem", filesystem(&setup.ws)?)], &setup.logs);
    let target = setup.ws.join("made.txt");
    let write = json!({"path": target, "content": "written by MCP"});
    let server = model(vec![
        sse_tool_use("r1", "mcp__filesystem__write_file", &write),
        sse_tool_use("r2", "mcp__filesystem__write_file", &write),
        sse_tool_use(
            "r3",
            "mcp__filesystem__list_directory",
            &json!({"path": setup.ws}),
        ),
        sse_text("r4", "Written."),
    ])
    .await?;
    let mut agent = agent(&server, &setup, mcp, |s| {
        s.approvals = approvals(ApprovalMode::Ask);
    })
    .await?;
    agent.send(Op::user_input("write made.txt")).await?;
    let events = answering(
        &mut agent,
        &[ApprovalDecision::Deny, ApprovalDecision::AllowOnce],
    )
    .await?;
    assert_eq!(status(&events), Some(TurnStatus::Completed));
    let asked = questions(&events);
    assert_eq!(
        asked.len(),
        2,
        "the listing is read-only and asks nothing: {asked:#?}"
    );
    assert!(matches!(
        &asked[0],
        ApprovalAction::McpCall { server, tool, arguments }
            if server == "filesystem" && tool == "write_file" && arguments.contains("made.txt")
    ));
    let calls = finished(&events);
    assert_eq!(calls[0].1, ToolStatus::Error);
    assert!(calls[0].2.contains("not run"), "{}", calls[0].2);
    assert_eq!(calls[1].1, ToolStatus::Ok, "{}", calls[1].2);
    assert_eq!(std::fs::read_to_string(&target)?, "written by MCP");
    assert_eq!(calls[2].1, ToolStatus::Ok);
    assert!(calls[2].2.contains("made.txt"));
    Ok(())
}

#[tokio::test(flavor = "multi_thread")]
async fn the_front_end_hears_each_servers_state() -> TestResult {
    let setup = setup()?;
    let mcp = manager(vec![("filesystem", filesystem(&setup.ws)?)], &setup.logs);
    ready(&mcp).await;
    let server = model(vec![]).await?;
    let mut agent = agent(&server, &setup, mcp, |s| s.mcp_max_tool_tokens = 100).await?;
    agent.send(Op::ListMcpServers).await?;
    let events = agent
        .until(|e| matches!(e, Event::McpServers { .. }))
        .await?;
    let Some(Event::McpServers { servers }) = events.last() else {
        return Err("no answer".into());
    };
    assert_eq!(servers.len(), 1);
    assert_eq!(servers[0].name, "filesystem");
    assert!(servers[0].ready && servers[0].deferred, "{servers:?}");
    assert!(servers[0].state.starts_with("ready with "), "{servers:?}");
    agent.finish().await?;
    Ok(())
}

/// The real server's image (server-everything's tiny PNG) reaches the model as an image block
/// inside the call's result on the Anthropic wire, its text still describing it.
#[tokio::test(flavor = "multi_thread")]
async fn an_mcp_tools_image_reaches_the_model_inside_its_result() -> TestResult {
    let setup = setup()?;
    let mcp = manager(vec![("everything", everything()?)], &setup.logs);
    let server = model(vec![
        sse_tool_use("r1", "mcp__everything__get-tiny-image", &json!({})),
        sse_text("r2", "A tiny picture."),
    ])
    .await?;
    let mut agent = agent(&server, &setup, mcp, |_| {}).await?;
    let events = agent.turn("show me the tiny image").await?;
    assert_eq!(status(&events), Some(TurnStatus::Completed));
    let requests = bodies(&server)?;
    assert_eq!(requests.len(), 2);
    let messages = requests[1]["messages"].as_array().ok_or("no messages")?;
    let results: Vec<&Value> = messages
        .iter()
        .filter(|m| m["role"] == "user")
        .flat_map(|m| m["content"].as_array().into_iter().flatten())
        .filter(|b| b["type"] == "tool_result")
        .collect();
    assert_eq!(results.len(), 1, "{messages:#?}");
    let parts = results[0]["content"]
        .as_array()
        .ok_or("the result has no parts")?;
    let image = parts
        .iter()
        .find(|p| p["type"] == "image")
        .ok_or(format!("no image in {parts:?}"))?;
    assert_eq!(image["source"]["type"], "base64");
    assert_eq!(image["source"]["media_type"], "image/png");
    let text = parts
        .iter()
        .find(|p| p["type"] == "text")
        .and_then(|p| p["text"].as_str())
        .ok_or("no text part")?;
    assert!(text.contains("[image: image/png"), "{text}");
    Ok(())
}
