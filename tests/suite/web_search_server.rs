//! Anthropic's own web search: offered as its server tool, its call shown as a pane and the
//! cited pages listed under the answer, its blocks kept verbatim in the history and sent back to
//! Anthropic (and to no other wire); a configured search endpoint or `server_search = false`
//! leaves it out. An in-test server plays the Messages API's search stream.

use crate::cli_support;
use crate::common;

use std::sync::Arc;

use cli_support::{Workspace, mnemo_with_key, text};
use common::{Reply, TestResult, TestServer, complete, run_provider, simple_request, text_deltas};
use mnemo::llm::anthropic::AnthropicProvider;
use mnemo::llm::openai::OpenAiProvider;
use mnemo::llm::server_tool::ServerPart;
use mnemo::llm::{ContentBlock, Message, ModelRequest, StreamEvent};
use serde_json::{Value, json};

const SEARCH: &str = include_str!("../fixtures/anthropic/web_search.sse");
const TEXT: &str = include_str!("../fixtures/anthropic/text.sse");
const RESULT_ID: &str = "srvtoolu_01WYG3ziw53XMcoyKL4XcZmE";
const SECRET_OF_RESULT: &str =
    "EqgfCioIARgBIiQ3YTAwMjY1Mi1mZjM5LTQ1NGUtODgxNC1kNjNjNTk1ZWI3Y2ESDPVTJ5Zr0kdvQmSmWhoM";

fn searching_request() -> ModelRequest {
    ModelRequest {
        server_search: true,
        ..simple_request()
    }
}

#[tokio::test]
async fn a_search_is_offered_shown_as_a_pane_and_its_sources_listed_under_the_answer() -> TestResult
{
    let (server, outcome) = run_provider(Reply::sse(SEARCH), searching_request(), |server| {
        AnthropicProvider::new(server.settings("claude-sonnet-4-5", Some("k")))
    })
    .await?;
    let (events, response) = complete(outcome)?;
    let body = server.only_request().json()?;
    let tool = &body["tools"][0];
    assert_eq!(tool["type"], "web_search_20250305");
    assert_eq!(tool["name"], "web_search");
    assert_eq!(tool["max_uses"], 5);
    assert_eq!(
        tool["cache_control"]["type"], "ephemeral",
        "the last static tool"
    );

    let runs: Vec<_> = events
        .iter()
        .filter_map(|e| match e {
            StreamEvent::ServerTool(run) => Some(run),
            _ => None,
        })
        .collect();
    assert_eq!(runs.len(), 1, "{events:?}");
    assert_eq!(runs[0].name, "web_search");
    assert_eq!(
        runs[0].input,
        json!({"query": "rust latest stable release"})
    );
    assert!(!runs[0].failed);
    assert_eq!(
        runs[0].output,
        "Announcing Rust 1.95.0 | Rust Blog <https://blog.rust-lang.org/2026/04/16/Rust-1.95.0/>\n\
         Releases · rust-lang/rust <https://github.com/rust-lang/rust/releases>"
    );

    let streamed = text_deltas(&events).concat();
    let answer = response.message.text();
    assert_eq!(streamed, answer, "what streamed is what is kept");
    assert!(
        answer.contains("The latest stable release is Rust 1.95.0, released in April."),
        "{answer}"
    );
    assert!(
        answer.ends_with(
            "Sources:\n1. [Announcing Rust 1.95.0 | Rust Blog]\
             (https://blog.rust-lang.org/2026/04/16/Rust-1.95.0/)\n"
        ),
        "only the cited page is listed: {answer}"
    );

    let server_blocks: Vec<_> = response
        .message
        .content
        .iter()
        .filter_map(|b| match b {
            ContentBlock::Server(block) => Some(block),
            _ => None,
        })
        .collect();
    assert_eq!(server_blocks.len(), 2);
    assert_eq!(
        server_blocks[0].raw,
        json!({"type": "server_tool_use", "id": RESULT_ID, "name": "web_search",
               "input": {"query": "rust latest stable release"}})
    );
    assert!(matches!(
        server_blocks[1].part(),
        Some(ServerPart::Result {
            tool_use_id: RESULT_ID,
            ..
        })
    ));
    assert_eq!(
        server_blocks[1].raw["content"][0]["encrypted_content"],
        SECRET_OF_RESULT
    );
    Ok(())
}

/// The history after a search, and a follow-up question.
async fn history_after_a_search() -> Result<Vec<Arc<Message>>, Box<dyn std::error::Error>> {
    let (_server, outcome) = run_provider(Reply::sse(SEARCH), searching_request(), |server| {
        AnthropicProvider::new(server.settings("claude-sonnet-4-5", Some("k")))
    })
    .await?;
    let (_, response) = complete(outcome)?;
    Ok(vec![
        Arc::new(Message::user_text("Which Rust is the latest?")),
        Arc::new(response.message),
        Arc::new(Message::user_text("And what changed in it?")),
    ])
}

#[tokio::test]
async fn the_search_blocks_go_back_to_anthropic_verbatim_and_to_no_other_wire() -> TestResult {
    let messages = history_after_a_search().await?;
    let request = ModelRequest {
        messages: messages.clone(),
        ..searching_request()
    };
    let (server, outcome) = run_provider(Reply::sse(TEXT), request.clone(), |server| {
        AnthropicProvider::new(server.settings("claude-sonnet-4-5", Some("k")))
    })
    .await?;
    complete(outcome)?;
    let body = server.only_request().json()?;
    let assistant = &body["messages"][1]["content"];
    let kinds: Vec<&str> = assistant
        .as_array()
        .ok_or("no assistant content")?
        .iter()
        .filter_map(|b| b["type"].as_str())
        .collect();
    assert_eq!(
        kinds,
        ["text", "server_tool_use", "web_search_tool_result", "text"],
        "the cited passages come back as one text"
    );
    let fixture_result = fixture_block(2)?;
    assert_eq!(
        assistant[2], fixture_result,
        "the result goes back unchanged"
    );

    let (server, outcome) = run_provider(
        Reply::sse(&common::openai_text("It added things.")),
        request,
        |server| OpenAiProvider::new(server.settings("m", Some("k"))),
    )
    .await?;
    complete(outcome)?;
    let body = server.only_request().body;
    let body = String::from_utf8_lossy(&body);
    assert!(!body.contains(RESULT_ID), "{body}");
    assert!(!body.contains("web_search_20250305"), "{body}");
    assert!(body.contains("The latest stable release is Rust 1.95.0"));
    Ok(())
}

/// The `content_block` of the fixture's `content_block_start` event for block `index`.
fn fixture_block(index: u64) -> Result<Value, Box<dyn std::error::Error>> {
    for line in SEARCH.lines() {
        let Some(data) = line.strip_prefix("data: ") else {
            continue;
        };
        let event: Value = serde_json::from_str(data)?;
        if event["type"] == "content_block_start" && event["index"] == index {
            return Ok(event["content_block"].clone());
        }
    }
    Err(format!("no block {index} in the fixture").into())
}

#[tokio::test]
async fn no_server_search_when_it_is_turned_off_or_a_search_tool_is_configured() -> TestResult {
    let (server, outcome) = run_provider(Reply::sse(TEXT), simple_request(), |server| {
        AnthropicProvider::new(server.settings("claude-sonnet-4-5", Some("k")))
    })
    .await?;
    complete(outcome)?;
    assert!(server.only_request().json()?.get("tools").is_none());

    let configured = ModelRequest {
        tools: vec![mnemo::llm::ToolSpec {
            name: "web_search".into(),
            description: "Searches the web through SearXNG.".into(),
            input_schema: json!({"type": "object"}).into(),
        }]
        .into(),
        ..searching_request()
    };
    let (server, outcome) = run_provider(Reply::sse(TEXT), configured, |server| {
        AnthropicProvider::new(server.settings("claude-sonnet-4-5", Some("k")))
    })
    .await?;
    complete(outcome)?;
    let tools = server.only_request().json()?["tools"].clone();
    assert_eq!(tools.as_array().map(Vec::len), Some(1), "{tools}");
    assert_eq!(
        tools[0]["description"], "Searches the web through SearXNG.",
        "{tools}"
    );
    Ok(())
}

/// Through the binary: `mnemo run` on Anthropic offers the search, prints the sources, keeps
/// the search in the session, and the next turn (`--continue`) sends it back; with
/// `[web] server_search = false` nothing is offered.
#[tokio::test(flavor = "multi_thread")]
async fn a_session_searches_then_continues_with_the_search_in_its_history() -> TestResult {
    let server = TestServer::start(vec![Reply::sse(SEARCH), Reply::sse(TEXT)]).await?;
    let ws = Arc::new(Workspace::new());
    let args = |extra: &[&str], prompt: &str| -> Vec<String> {
        let mut args: Vec<String> = [
            "--provider",
            "anthropic",
            "--base-url",
            &server.base_url,
            "--model",
            "claude-sonnet-4-5",
            "--api-key-env",
            "LLM_KEY",
        ]
        .map(str::to_string)
        .to_vec();
        args.extend(extra.iter().map(|a| a.to_string()));
        args.extend(["run".to_string(), prompt.to_string()]);
        args
    };
    let out = mnemo_with_key(&ws, args(&[], "Which Rust is the latest?")).await?;
    assert!(out.status.success(), "{}", text(&out.stderr));
    let stdout = text(&out.stdout);
    assert!(
        stdout.contains("Rust 1.95.0, released in April."),
        "{stdout}"
    );
    assert!(
        stdout.contains("1. [Announcing Rust 1.95.0 | Rust Blog]"),
        "{stdout}"
    );
    let first = server.requests()[0].json()?;
    assert_eq!(first["tools"][0]["type"], "web_search_20250305");

    let out = mnemo_with_key(&ws, args(&["--continue"], "And what changed?")).await?;
    assert!(out.status.success(), "{}", text(&out.stderr));
    let second = server.requests()[1].json()?;
    let sent = second["messages"].to_string();
    assert!(sent.contains(SECRET_OF_RESULT), "{sent}");
    assert!(sent.contains("\"server_tool_use\""), "{sent}");

    std::fs::create_dir_all(ws.path().join(".cfg"))?;
    ws.write(".cfg/config.toml", "[web]\nserver_search = false\n");
    let quiet = TestServer::start(vec![Reply::sse(TEXT)]).await?;
    let mut off = args(&[], "Which Rust is the latest?");
    off[3] = quiet.base_url.clone();
    let out = mnemo_with_key(&ws, off).await?;
    assert!(out.status.success(), "{}", text(&out.stderr));
    let body = quiet.only_request().json()?;
    let tools = body["tools"].as_array().ok_or("no tools")?;
    assert!(tools.iter().all(|t| t["name"] != "web_search"), "{tools:?}");
    Ok(())
}
