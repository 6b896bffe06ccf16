//! Capabilities end to end through the real Anthropic provider against an in-test server: the
//! model saves a script with `capability_create`, the next request offers it as a `cap_*` tool
//! (after the static tools, outside their cache breakpoint), calling it runs the script in the
//! sandbox, compaction archiving the messages that found it takes it out of the tool list,
//! `capability_query` brings it back, and a new session on the same store finds it again.

use crate::capability_support;
use crate::common;

use std::collections::HashSet;
use std::sync::Arc;

use capability_support::{
    Agent, HELLO_SHA256, TestResult, chain_of, finished, last_results, raw_tools,
    sha256_create_args, sse_text, sse_tool_use, status, tool_names, tools_changed,
};
use common::{Recorded, Reply, TestServer};
use mnemo::llm::anthropic::AnthropicProvider;
use mnemo::memory::Store;
use mnemo::protocol::{CompactionKind, Event, Op, ToolStatus, TurnStatus};
use serde_json::{Value, json};

const CAP: &str = "cap_sha256_hash";

fn anthropic(server: &TestServer) -> Arc<AnthropicProvider> {
    Arc::new(AnthropicProvider::new(
        server.settings("claude-sonnet-4-5", Some("test-key")),
    ))
}

fn bodies(server: &TestServer) -> Result<Vec<(Recorded, Value)>, serde_json::Error> {
    server
        .requests()
        .into_iter()
        .map(|r| r.json().map(|json| (r, json)))
        .collect()
}

/// The first request's tools: only static ones and `use_tool` last, the last static tool
/// carrying the cache breakpoint.
fn check_static_tools(body: &Value) -> Result<Vec<String>, Box<dyn std::error::Error>> {
    let names = tool_names(body);
    assert!(names.iter().all(|n| !n.starts_with("cap_")), "{names:?}");
    assert_eq!(names.last().map(String::as_str), Some("use_tool"));
    for expected in ["shell", "capability_query", "capability_create"] {
        assert!(
            names.iter().any(|n| n == expected),
            "{expected} in {names:?}"
        );
    }
    let tools = body["tools"].as_array().ok_or("no tools")?;
    let marked: Vec<usize> = (0..tools.len())
        .filter(|&i| tools[i].get("cache_control").is_some())
        .collect();
    assert_eq!(
        marked,
        [tools.len() - 2],
        "one breakpoint, on the last static tool"
    );
    Ok(names)
}

#[tokio::test]
async fn a_created_capability_is_offered_runs_leaves_with_compaction_and_comes_back() -> TestResult
{
    let dir = tempfile::tempdir()?;
    let ws = dir.path().canonicalize()?.join("ws");
    std::fs::create_dir(&ws)?;
    let store = Store::open(&dir.path().join("mnemo.db"))?;
    let hash_call = json!({"text": "hello world"});
    let summary = json!({"goal": "Hash some texts", "current_status": "a hashing tool exists"});
    let mut replies = vec![
        sse_text("r0", "Hello."),
        sse_tool_use("r1", "capability_create", &sha256_create_args()),
        sse_tool_use("r2", CAP, &hash_call),
        sse_text(
            "r3",
            &format!("The SHA-256 of \"hello world\" is {HELLO_SHA256}."),
        ),
    ];
    replies.extend((4..9).map(|i| sse_text(&format!("r{i}"), &format!("Noted, step {i}."))));
    replies.extend([
        sse_text("r9", &summary.to_string()),
        sse_tool_use("r10", CAP, &hash_call),
        sse_tool_use("r11", "capability_query", &json!({"query": "sha256"})),
        sse_tool_use(
            "r12",
            "use_tool",
            &json!({"tool": CAP, "arguments": hash_call}),
        ),
        sse_text("r13", "Same hash again."),
    ]);
    let server = TestServer::start(replies.iter().map(|r| Reply::sse(r)).collect()).await?;
    let mut agent = Agent::start(chain_of(anthropic(&server)), &store, &ws, |_| {}).await?;

    let hello = agent.turn("hello").await?;
    assert_eq!(status(&hello), Some(TurnStatus::Completed));
    let made = agent
        .turn("save a tool that hashes text with sha256, then hash 'hello world'")
        .await?;
    assert_eq!(status(&made), Some(TurnStatus::Completed));
    let calls = finished(&made);
    assert_eq!(calls.len(), 2, "{calls:#?}");
    assert_eq!(calls[0].0, "capability_create");
    assert_eq!(calls[0].1, ToolStatus::Ok, "{}", calls[0].2);
    assert_eq!((calls[1].0.as_str(), calls[1].1), (CAP, ToolStatus::Ok));
    assert_eq!(calls[1].2, HELLO_SHA256);
    assert_eq!(tools_changed(&made), [(vec![CAP.to_string()], vec![])]);

    let requests = bodies(&server)?;
    assert_eq!(requests.len(), 4);
    let static_names = check_static_tools(&requests[0].1)?;
    // Nothing changed between the first two requests: the same bytes, so the cache holds.
    assert_eq!(
        raw_tools(&requests[0].0.body)?,
        raw_tools(&requests[1].0.body)?
    );
    assert!(!tool_names(&requests[1].1).iter().any(|n| n == CAP));

    // The request after the create carries the same tool list, byte for byte (the cached
    // prompt holds); the capability's schema is in the create's result in the history.
    let offered = &requests[2].1;
    assert_eq!(
        raw_tools(&requests[0].0.body)?,
        raw_tools(&requests[2].0.body)?
    );
    let created = last_results(offered);
    assert_eq!(created.len(), 1);
    assert!(!created[0].1, "{}", created[0].0);
    let created: Value = serde_json::from_str(&created[0].0)?;
    assert_eq!(created["created"]["tool"], CAP);
    assert_eq!(
        created["created"]["input_schema"],
        sha256_create_args()["input_schema"]
    );
    assert_eq!(created["smoke_test"]["passed"], true);
    assert_eq!(
        mnemo::tools::describe::result_line("capability_create", &created.to_string()).as_deref(),
        Some("created capability sha256-hash v1 · smoke test passed")
    );

    // The call's result is the script's output; no change, so the same tools bytes again.
    let answered = &requests[3];
    assert_eq!(
        last_results(&answered.1),
        [(HELLO_SHA256.to_string(), false)]
    );
    assert_eq!(
        raw_tools(&requests[2].0.body)?,
        raw_tools(&answered.0.body)?
    );

    // Five more turns, so the create and the call are no longer among the recent messages.
    for i in 0..5 {
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

    let again = agent.turn("hash 'hello world' once more").await?;
    assert_eq!(status(&again), Some(TurnStatus::Completed));
    assert_eq!(
        tools_changed(&again),
        [
            (vec![], vec![CAP.to_string()]),
            (vec![CAP.to_string()], vec![])
        ],
        "removed by the compaction, added by the query"
    );
    let calls = finished(&again);
    assert_eq!(calls.len(), 3, "{calls:#?}");
    assert_eq!((calls[0].0.as_str(), calls[0].1), (CAP, ToolStatus::Error));
    assert!(
        calls[0].2.contains("not in your tool list"),
        "{}",
        calls[0].2
    );
    assert!(calls[0].2.contains("capability_query"), "{}", calls[0].2);
    assert_eq!(calls[2].2, HELLO_SHA256);

    let requests = bodies(&server)?;
    assert_eq!(requests.len(), 14);
    for (at, (recorded, _)) in requests.iter().enumerate().take(9).skip(4) {
        assert_eq!(
            raw_tools(&recorded.body)?,
            raw_tools(&requests[0].0.body)?,
            "request {at}"
        );
    }
    assert!(
        tool_names(&requests[9].1).is_empty(),
        "the compressor gets no tools"
    );
    // After the compaction: the static tools only, byte for byte as in the first request.
    assert_eq!(tool_names(&requests[10].1), static_names);
    assert_eq!(
        raw_tools(&requests[0].0.body)?,
        raw_tools(&requests[10].0.body)?
    );
    let refused = last_results(&requests[11].1);
    assert_eq!(refused.len(), 1);
    assert!(refused[0].1 && refused[0].0.contains("not in your tool list"));
    assert_eq!(tool_names(&requests[11].1), static_names);
    // The query found it: offered again from the next request on.
    let found = last_results(&requests[12].1);
    assert!(
        !found[0].1 && found[0].0.contains("\"sha256-hash\""),
        "{found:?}"
    );
    assert_eq!(tool_names(&requests[12].1), static_names);
    assert_eq!(
        last_results(&requests[13].1),
        [(HELLO_SHA256.to_string(), false)]
    );
    let first_session = agent.finish().await?.id.clone();

    // A new session on the same store starts with the static tools and finds it by query.
    let server = TestServer::start(vec![
        Reply::sse(&sse_tool_use(
            "s0",
            "capability_query",
            &json!({"query": "sha256"}),
        )),
        Reply::sse(&sse_text("s1", "Found it.")),
    ])
    .await?;
    let mut agent = Agent::start(chain_of(anthropic(&server)), &store, &ws, |_| {}).await?;
    let events = agent.turn("is there a hashing tool?").await?;
    assert_eq!(status(&events), Some(TurnStatus::Completed));
    assert_eq!(tools_changed(&events), [(vec![CAP.to_string()], vec![])]);
    let second = agent.finish().await?;
    assert_ne!(second.id, first_session);
    let requests = bodies(&server)?;
    assert_eq!(requests.len(), 2);
    assert_eq!(tool_names(&requests[0].1), static_names);
    let found = last_results(&requests[1].1);
    let listed: Value = serde_json::from_str(&found[0].0)?;
    let names: HashSet<&str> = listed["capabilities"]
        .as_array()
        .ok_or("no capabilities")?
        .iter()
        .filter_map(|c| c["name"].as_str())
        .collect();
    assert!(names.contains("sha256-hash"), "{listed}");
    assert_eq!(tool_names(&requests[1].1), static_names);
    Ok(())
}
