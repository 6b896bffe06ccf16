//! The Anthropic provider against an in-test server replaying the Messages API's real SSE
//! streams and error bodies: decoding, typed errors, and the shape of the request it sends.

use crate::common;

use std::time::Duration;

use common::{
    Drained, Reply, TestResult, TestServer, complete, completed, drain, reasoning, run_provider,
    simple_request, text_deltas,
};
use mnemo::llm::anthropic::AnthropicProvider;
use mnemo::llm::{
    ContentBlock, Message, ModelRequest, Provider, ProviderError, Role, StopReason, ToolSpec, Usage,
};
use serde_json::{Value, json};

const TEXT: &str = include_str!("../fixtures/anthropic/text.sse");
const TOOL_USE: &str = include_str!("../fixtures/anthropic/tool_use.sse");
const PARALLEL_TOOLS: &str = include_str!("../fixtures/anthropic/parallel_tools.sse");
const INVALID_TOOL_JSON: &str = include_str!("../fixtures/anthropic/invalid_tool_json.sse");
const THINKING: &str = include_str!("../fixtures/anthropic/thinking.sse");
const OVERLOADED_MID_STREAM: &str = include_str!("../fixtures/anthropic/overloaded_mid_stream.sse");
const REFUSAL: &str = include_str!("../fixtures/anthropic/refusal.sse");

const MODEL: &str = "claude-sonnet-4-5";
const KEY: &str = "sk-ant-api03-test-key";

/// Runs one request against a server playing `reply`.
async fn run(
    reply: Reply,
    request: ModelRequest,
) -> Result<(TestServer, Result<Drained, ProviderError>), Box<dyn std::error::Error>> {
    run_provider(reply, request, |server| {
        AnthropicProvider::new(server.settings(MODEL, Some(KEY)))
    })
    .await
}

#[tokio::test]
async fn text_arrives_in_several_deltas_and_completes() -> TestResult {
    let reply = Reply::sse(TEXT).in_pieces(7, Duration::from_millis(5));
    let (_server, outcome) = run(reply, simple_request()).await?;
    let (events, error) = outcome?;
    assert_eq!(error, None);
    assert_eq!(
        text_deltas(&events),
        [
            "The build",
            " passes: all 42 tests",
            " are green — \"cargo test\"",
            " finished in 3.2 s."
        ]
    );
    let response = completed(&events).ok_or("no Completed event")?;
    assert_eq!(
        response.message.content,
        vec![ContentBlock::Text {
            text: "The build passes: all 42 tests are green — \"cargo test\" finished in 3.2 s."
                .into()
        }]
    );
    assert_eq!(response.message.role, Role::Assistant);
    assert_eq!(response.stop_reason, StopReason::EndTurn);
    assert_eq!(response.usage.input_tokens, 412);
    assert_eq!(response.usage.output_tokens, 19);
    Ok(())
}

#[tokio::test]
async fn tool_arguments_arriving_in_many_pieces_are_assembled() -> TestResult {
    let (_server, outcome) = run(
        Reply::sse(TOOL_USE).in_pieces(13, Duration::ZERO),
        simple_request(),
    )
    .await?;
    let (_, response) = complete(outcome)?;
    assert_eq!(
        response.message.text(),
        "I'll look at the config file first."
    );
    let calls: Vec<_> = response.message.tool_calls().collect();
    assert_eq!(calls.len(), 1);
    assert_eq!(calls[0].id, "toolu_01T1x1fJ34qAmk2tNTrN7Up6");
    assert_eq!(calls[0].name, "read_file");
    assert_eq!(
        calls[0].input,
        &json!({"path": "src/config/mod.rs", "offset": 120, "limit": 80})
    );
    assert_eq!(response.stop_reason, StopReason::ToolUse);
    Ok(())
}

#[tokio::test]
async fn usage_reports_cache_reads_and_writes() -> TestResult {
    let (_server, outcome) = run(Reply::sse(TOOL_USE), simple_request()).await?;
    let (events, _) = outcome?;
    let response = completed(&events).ok_or("no Completed event")?;
    assert_eq!(
        response.usage,
        Usage {
            input_tokens: 3,
            output_tokens: 87,
            cache_read_tokens: 10236,
            cache_write_tokens: 1840,
        }
    );
    Ok(())
}

#[tokio::test]
async fn two_parallel_tool_calls_are_kept_apart() -> TestResult {
    let (_server, outcome) = run(Reply::sse(PARALLEL_TOOLS), simple_request()).await?;
    let (events, response) = complete(outcome)?;
    let calls: Vec<_> = response
        .message
        .tool_calls()
        .map(|c| (c.id, c.name, c.input.clone()))
        .collect();
    assert_eq!(
        calls,
        [
            (
                "toolu_01D7FLrfh4GYq7yT1ULFeyMV",
                "search",
                json!({"pattern": "fn main"})
            ),
            (
                "toolu_01XbVqe8T7bQ5Hm2KJ8cAtPz",
                "shell",
                json!({"command": "git status --short"})
            ),
        ]
    );
    assert!(text_deltas(&events).is_empty());
    Ok(())
}

#[tokio::test]
async fn invalid_tool_json_is_kept_as_raw_text() -> TestResult {
    let (_server, outcome) = run(Reply::sse(INVALID_TOOL_JSON), simple_request()).await?;
    let (_, response) = complete(outcome)?;
    let call = response.message.tool_calls().next().ok_or("no tool call")?;
    assert_eq!(
        call.input,
        &Value::String("{\"path\": \"notes.md\", \"content\": \"line one".into())
    );
    assert_eq!(response.stop_reason, StopReason::MaxTokens);
    Ok(())
}

#[tokio::test]
async fn thinking_streams_as_reasoning_and_keeps_its_signature() -> TestResult {
    let (_server, outcome) = run(
        Reply::sse(THINKING).in_pieces(5, Duration::ZERO),
        simple_request(),
    )
    .await?;
    let (events, error) = outcome?;
    assert_eq!(error, None);
    assert_eq!(
        reasoning(&events),
        "The user wants the sum of 27 and 15.\n27 + 15 = 42."
    );
    assert_eq!(text_deltas(&events), ["27 + 15 = ", "42."]);
    let response = completed(&events).ok_or("no Completed event")?;
    let ContentBlock::Thinking {
        thinking,
        signature,
    } = &response.message.content[0]
    else {
        return Err(format!("not a thinking block: {:?}", response.message.content[0]).into());
    };
    assert_eq!(
        thinking,
        "The user wants the sum of 27 and 15.\n27 + 15 = 42."
    );
    assert!(
        signature
            .as_deref()
            .is_some_and(|s| s.starts_with("EqQBCgIYAhIM"))
    );
    assert_eq!(response.message.text(), "27 + 15 = 42.");
    Ok(())
}

#[tokio::test]
async fn a_refusal_is_its_own_stop_reason() -> TestResult {
    let (_server, outcome) = run(Reply::sse(REFUSAL), simple_request()).await?;
    let (events, _) = outcome?;
    let response = completed(&events).ok_or("no Completed event")?;
    assert_eq!(response.stop_reason, StopReason::Refusal);
    Ok(())
}

#[tokio::test]
async fn an_error_event_mid_stream_follows_the_deltas_already_sent() -> TestResult {
    let reply = Reply::sse(OVERLOADED_MID_STREAM).in_pieces(3, Duration::from_millis(5));
    let (_server, outcome) = run(reply, simple_request()).await?;
    let (events, error) = outcome?;
    assert_eq!(text_deltas(&events), ["Looking at", " the diff"]);
    assert!(completed(&events).is_none());
    assert!(
        matches!(&error, Some(ProviderError::Overloaded { message }) if message.contains("Overloaded")),
        "{error:?}"
    );
    Ok(())
}

#[tokio::test]
async fn a_connection_cut_mid_stream_is_an_error_not_a_hang() -> TestResult {
    let cut = TEXT.find(" are green").ok_or("fixture changed")?;
    let reply = Reply::sse(TEXT)
        .in_pieces(3, Duration::from_millis(5))
        .cut_after(cut);
    let (_server, outcome) = run(reply, simple_request()).await?;
    let (events, error) = outcome?;
    assert_eq!(text_deltas(&events), ["The build", " passes: all 42 tests"]);
    assert!(completed(&events).is_none());
    assert!(
        matches!(error, Some(ProviderError::Connection(_))),
        "{error:?}"
    );
    Ok(())
}

#[tokio::test]
async fn a_body_ending_before_message_stop_is_an_error() -> TestResult {
    let cut = TEXT.find("event: message_stop").ok_or("fixture changed")?;
    let (_server, outcome) = run(Reply::sse(&TEXT[..cut]), simple_request()).await?;
    let (events, error) = outcome?;
    assert_eq!(text_deltas(&events).len(), 4);
    assert!(completed(&events).is_none());
    assert!(
        matches!(&error, Some(ProviderError::Connection(m)) if m.contains("message_stop")),
        "{error:?}"
    );
    Ok(())
}

#[tokio::test]
async fn http_errors_map_to_typed_errors() -> TestResult {
    let auth = Reply::json(
        401,
        include_str!("../fixtures/anthropic/error_401_authentication.json"),
    );
    let rate = Reply::json(
        429,
        include_str!("../fixtures/anthropic/error_429_rate_limit.json"),
    )
    .header("retry-after", "7")
    .header("anthropic-ratelimit-input-tokens-remaining", "0");
    let overloaded = Reply::json(
        529,
        include_str!("../fixtures/anthropic/error_529_overloaded.json"),
    );
    let unavailable = Reply::json(503, "upstream connect error or disconnect/reset before headers. reset reason: connection termination")
        .header("content-type", "text/plain");
    let too_long = Reply::json(
        400,
        include_str!("../fixtures/anthropic/error_400_prompt_too_long.json"),
    );

    let (_, outcome) = run(auth, simple_request()).await?;
    assert!(
        matches!(&outcome, Err(ProviderError::Auth { status: 401, message }) if message.contains("invalid x-api-key")),
        "{outcome:?}"
    );
    let (_, outcome) = run(rate, simple_request()).await?;
    assert!(
        matches!(&outcome, Err(ProviderError::RateLimit { retry_after: Some(d), .. }) if *d == Duration::from_secs(7)),
        "{outcome:?}"
    );
    let (_, outcome) = run(overloaded, simple_request()).await?;
    assert!(
        matches!(&outcome, Err(ProviderError::Overloaded { .. })),
        "{outcome:?}"
    );
    let (_, outcome) = run(unavailable, simple_request()).await?;
    assert!(
        matches!(&outcome, Err(ProviderError::Server { status: 503, .. })),
        "{outcome:?}"
    );
    let (_, outcome) = run(too_long, simple_request()).await?;
    assert!(
        matches!(&outcome, Err(ProviderError::ContextTooLong { message }) if message.contains("215837")),
        "{outcome:?}"
    );
    Ok(())
}

/// A history in the middle of a tool loop, with a note the user typed during the tool run.
fn tool_loop_request() -> ModelRequest {
    ModelRequest {
        system: "You are mnemo, a coding assistant.".into(),
        messages: vec![
            Message::user_text("Fix the failing test."),
            Message::assistant(vec![
                ContentBlock::Thinking {
                    thinking: "Run the tests first.".into(),
                    signature: Some("EqQBCgIYAhIMsig".into()),
                },
                ContentBlock::Thinking {
                    thinking: "Reasoning from another provider.".into(),
                    signature: None,
                },
                ContentBlock::Text {
                    text: String::new(),
                },
                ContentBlock::ToolUse {
                    id: "toolu_01A".into(),
                    name: "shell".into(),
                    input: json!({"command": "cargo test"}),
                },
                ContentBlock::ToolUse {
                    id: "toolu_01B".into(),
                    name: "read_file".into(),
                    input: Value::String("{\"path\": \"src/li".into()),
                },
            ]),
            Message {
                role: Role::User,
                content: vec![
                    ContentBlock::ToolResult {
                        tool_use_id: "toolu_01A".into(),
                        content: "test result: FAILED. 1 failed".into(),
                        is_error: false,
                    },
                    ContentBlock::ToolResult {
                        tool_use_id: "toolu_01B".into(),
                        content: "invalid arguments: EOF while parsing".into(),
                        is_error: true,
                    },
                ],
            },
            Message::user_text("Only touch the tests, please."),
        ]
        .into_iter()
        .map(std::sync::Arc::new)
        .collect(),
        tools: vec![
            ToolSpec {
                name: "shell".into(),
                description: "Runs a shell command.".into(),
                input_schema:
                    json!({"type": "object", "properties": {"command": {"type": "string"}}}).into(),
            },
            ToolSpec {
                name: "read_file".into(),
                description: "Reads a file.".into(),
                input_schema: json!({"type": "object", "properties": {"path": {"type": "string"}}})
                    .into(),
            },
        ]
        .into(),
        static_tools: usize::MAX,
        max_output_tokens: 8192,
        volatile_tail: 0,
        tool_calls: mnemo::llm::ToolCalls::Allowed,
        server_search: false,
    }
}

#[tokio::test]
async fn the_request_carries_headers_cache_breakpoints_and_merged_messages() -> TestResult {
    let (server, outcome) = run(Reply::sse(TEXT), tool_loop_request()).await?;
    outcome?;
    let request = server.only_request();
    assert_eq!(request.method, "POST");
    assert_eq!(request.path, "/v1/messages");
    assert_eq!(request.header("x-api-key"), Some(KEY));
    assert_eq!(request.header("anthropic-version"), Some("2023-06-01"));
    assert_eq!(request.header("content-type"), Some("application/json"));
    assert_eq!(request.header("authorization"), None);

    let body = request.json()?;
    assert_eq!(body["model"], MODEL);
    assert_eq!(body["max_tokens"], 8192);
    assert_eq!(body["stream"], true);
    assert_eq!(
        body["system"],
        json!([{"type": "text", "text": "You are mnemo, a coding assistant.", "cache_control": {"type": "ephemeral"}}])
    );
    assert_eq!(body["tools"][0].get("cache_control"), None);
    assert_eq!(body["tools"][1]["name"], "read_file");
    assert_eq!(body["tools"][1]["input_schema"]["type"], "object");
    assert_eq!(
        body["tools"][1]["cache_control"],
        json!({"type": "ephemeral"})
    );

    let messages = body["messages"].as_array().ok_or("no messages")?;
    assert_eq!(
        messages.len(),
        3,
        "the two user messages are merged: {messages:#?}"
    );
    assert_eq!(
        messages[0],
        json!({"role": "user", "content": [{"type": "text", "text": "Fix the failing test.", "cache_control": {"type": "ephemeral"}}]})
    );
    assert_eq!(
        messages[1],
        json!({"role": "assistant", "content": [
            {"type": "thinking", "thinking": "Run the tests first.", "signature": "EqQBCgIYAhIMsig"},
            {"type": "tool_use", "id": "toolu_01A", "name": "shell", "input": {"command": "cargo test"}},
            {"type": "tool_use", "id": "toolu_01B", "name": "read_file", "input": {}},
        ]})
    );
    assert_eq!(
        messages[2],
        json!({"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": "toolu_01A", "content": "test result: FAILED. 1 failed"},
            {"type": "tool_result", "tool_use_id": "toolu_01B", "content": "invalid arguments: EOF while parsing", "is_error": true},
            {"type": "text", "text": "Only touch the tests, please.", "cache_control": {"type": "ephemeral"}},
        ]})
    );
    assert_eq!(body.to_string().matches("cache_control").count(), 4);
    Ok(())
}

#[tokio::test]
async fn no_api_key_means_no_key_header() -> TestResult {
    let server = TestServer::start(vec![Reply::sse(TEXT)]).await?;
    let provider = AnthropicProvider::new(server.settings(MODEL, None));
    assert_eq!(provider.label(), "anthropic:claude-sonnet-4-5");
    let (_, error) = drain(provider.stream(simple_request()).await?).await;
    assert_eq!(error, None);
    let request = server.only_request();
    assert_eq!(request.header("x-api-key"), None);
    assert_eq!(request.header("anthropic-version"), Some("2023-06-01"));
    Ok(())
}

#[tokio::test]
async fn a_trailing_slash_in_the_base_url_is_ignored() -> TestResult {
    let server = TestServer::start(vec![Reply::sse(TEXT)]).await?;
    let mut settings = server.settings(MODEL, Some(KEY));
    settings.base_url.push('/');
    let provider = AnthropicProvider::new(settings);
    drain(provider.stream(simple_request()).await?).await;
    assert_eq!(server.only_request().path, "/v1/messages");
    Ok(())
}
