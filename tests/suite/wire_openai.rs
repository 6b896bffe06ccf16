//! The OpenAI-compatible provider against an in-test server replaying real Chat Completions
//! streams (OpenAI, DeepSeek, a local server) and error bodies: decoding, typed errors, and
//! the shape of the request it sends.

use crate::common;

use std::time::Duration;

use common::{
    Drained, Reply, TestResult, TestServer, complete, completed, drain, reasoning, run_provider,
    simple_request, text_deltas,
};
use mnemo::llm::openai::OpenAiProvider;
use mnemo::llm::{
    ContentBlock, Message, ModelRequest, Provider, ProviderError, Role, StopReason, ToolSpec, Usage,
};
use serde_json::{Value, json};

const TEXT: &str = include_str!("../fixtures/openai/text.sse");
const TOOL_CALL: &str = include_str!("../fixtures/openai/tool_call.sse");
const PARALLEL_TOOLS: &str = include_str!("../fixtures/openai/parallel_tools.sse");
const INVALID_ARGUMENTS: &str = include_str!("../fixtures/openai/invalid_arguments.sse");
const DEEPSEEK_REASONING: &str = include_str!("../fixtures/openai/deepseek_reasoning.sse");
const LOCAL_SERVER_NO_IDS: &str = include_str!("../fixtures/openai/local_server_no_ids.sse");
const ERROR_MID_STREAM: &str = include_str!("../fixtures/openai/error_mid_stream.sse");
const CONTENT_FILTER_NO_DONE: &str = include_str!("../fixtures/openai/content_filter_no_done.sse");

const MODEL: &str = "gpt-4.1";
const KEY: &str = "sk-proj-test-key";

/// Runs one request against a server playing `reply`. The server's base URL ends in `/v1`
/// like the real ones.
async fn run(
    reply: Reply,
    request: ModelRequest,
) -> Result<(TestServer, Result<Drained, ProviderError>), Box<dyn std::error::Error>> {
    run_provider(reply, request, |server| {
        let mut settings = server.settings(MODEL, Some(KEY));
        settings.base_url.push_str("/v1");
        OpenAiProvider::new(settings)
    })
    .await
}

#[tokio::test]
async fn text_arrives_in_several_deltas_and_completes() -> TestResult {
    let reply = Reply::sse(TEXT).in_pieces(9, Duration::from_millis(5));
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
    Ok(())
}

#[tokio::test]
async fn the_usage_chunk_splits_cached_prompt_tokens_out() -> TestResult {
    let (_server, outcome) = run(Reply::sse(TEXT), simple_request()).await?;
    let (events, _) = outcome?;
    let response = completed(&events).ok_or("no Completed event")?;
    assert_eq!(
        response.usage,
        Usage {
            input_tokens: 2306 - 1920,
            output_tokens: 19,
            cache_read_tokens: 1920,
            cache_write_tokens: 0,
        }
    );
    Ok(())
}

#[tokio::test]
async fn tool_arguments_arriving_in_many_pieces_are_assembled() -> TestResult {
    let reply = Reply::sse(TOOL_CALL).in_pieces(17, Duration::ZERO);
    let (_server, outcome) = run(reply, simple_request()).await?;
    let (events, response) = complete(outcome)?;
    let calls: Vec<_> = response.message.tool_calls().collect();
    assert_eq!(calls.len(), 1);
    assert_eq!(calls[0].id, "call_Kq3mTz7RwLpX2vNbYc9sD1fE");
    assert_eq!(calls[0].name, "read_file");
    assert_eq!(
        calls[0].input,
        &json!({"path": "src/config/mod.rs", "offset": 120, "limit": 80})
    );
    assert_eq!(response.stop_reason, StopReason::ToolUse);
    assert!(text_deltas(&events).is_empty());
    Ok(())
}

#[tokio::test]
async fn two_parallel_tool_calls_are_kept_apart() -> TestResult {
    let (_server, outcome) = run(Reply::sse(PARALLEL_TOOLS), simple_request()).await?;
    let (_, response) = complete(outcome)?;
    let calls: Vec<_> = response
        .message
        .tool_calls()
        .map(|c| (c.id, c.name, c.input.clone()))
        .collect();
    assert_eq!(
        calls,
        [
            (
                "call_9f2HnBq4WxYt7LzKcPmR3sVd",
                "search",
                json!({"pattern": "fn main"})
            ),
            (
                "call_Vb7nLq1ZsXp4TmWk8JcHr2Ge",
                "shell",
                json!({"command": "git status --short"})
            ),
        ]
    );
    assert_eq!(response.usage.cache_read_tokens, 1152);
    Ok(())
}

#[tokio::test]
async fn invalid_tool_arguments_are_kept_as_raw_text() -> TestResult {
    let (_server, outcome) = run(Reply::sse(INVALID_ARGUMENTS), simple_request()).await?;
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
async fn deepseek_reasoning_content_streams_as_reasoning() -> TestResult {
    let reply = Reply::sse(DEEPSEEK_REASONING).in_pieces(6, Duration::from_millis(2));
    let (_server, outcome) = run(reply, simple_request()).await?;
    let (events, error) = outcome?;
    assert_eq!(error, None);
    assert_eq!(reasoning(&events), "The user wants 27 + 15.\nThat is 42.");
    assert_eq!(text_deltas(&events), ["27 + 15 = ", "42."]);
    let response = completed(&events).ok_or("no Completed event")?;
    assert_eq!(
        response.message.content,
        vec![
            ContentBlock::Thinking {
                thinking: "The user wants 27 + 15.\nThat is 42.".into(),
                signature: None,
            },
            ContentBlock::Text {
                text: "27 + 15 = 42.".into()
            },
        ]
    );
    // The usage rides on the finish chunk; DeepSeek counts cache hits itself.
    assert_eq!(
        response.usage,
        Usage {
            input_tokens: 42,
            output_tokens: 38,
            cache_read_tokens: 1408,
            cache_write_tokens: 0,
        }
    );
    assert_eq!(response.stop_reason, StopReason::EndTurn);
    Ok(())
}

#[tokio::test]
async fn a_local_server_without_tool_call_ids_gets_generated_ones() -> TestResult {
    let (_server, outcome) = run(Reply::sse(LOCAL_SERVER_NO_IDS), simple_request()).await?;
    let (events, error) = outcome?;
    assert_eq!(error, None);
    assert_eq!(reasoning(&events), "Need the file list.");
    let response = completed(&events).ok_or("no Completed event")?;
    let calls: Vec<_> = response.message.tool_calls().collect();
    assert_eq!(calls.len(), 2);
    assert!(calls.iter().all(|c| c.id.starts_with("call_")), "{calls:?}");
    assert_ne!(calls[0].id, calls[1].id);
    assert_eq!(calls[0].input, &json!({"command": "ls"}));
    assert_eq!(calls[1].input, &json!({"path": "README.md"}));
    // It said "stop", but the model called tools.
    assert_eq!(response.stop_reason, StopReason::ToolUse);
    assert_eq!(response.usage.input_tokens, 310);
    Ok(())
}

#[tokio::test]
async fn a_finish_reason_without_done_is_a_complete_response() -> TestResult {
    let (_server, outcome) = run(Reply::sse(CONTENT_FILTER_NO_DONE), simple_request()).await?;
    let (_, response) = complete(outcome)?;
    assert_eq!(response.message.text(), "I can");
    assert_eq!(response.stop_reason, StopReason::Refusal);
    Ok(())
}

#[tokio::test]
async fn a_body_ending_without_finish_reason_or_done_is_an_error() -> TestResult {
    let cut = TEXT.find("data: {\"id\":\"chatcmpl-BuH3pVXvKh6y2Cq0TxZ8eDoWnF1kR\",\"object\":\"chat.completion.chunk\",\"created\":1752841033,\"model\":\"gpt-4.1-2025-04-14\",\"service_tier\":\"default\",\"system_fingerprint\":\"fp_b3f1157249\",\"choices\":[{\"index\":0,\"delta\":{},");
    let cut = cut.ok_or("fixture changed")?;
    let (_server, outcome) = run(Reply::sse(&TEXT[..cut]), simple_request()).await?;
    let (events, error) = outcome?;
    assert_eq!(text_deltas(&events).len(), 4);
    assert!(completed(&events).is_none());
    assert!(
        matches!(error, Some(ProviderError::Connection(_))),
        "{error:?}"
    );
    Ok(())
}

#[tokio::test]
async fn an_error_object_mid_stream_follows_the_deltas_already_sent() -> TestResult {
    let reply = Reply::sse(ERROR_MID_STREAM).in_pieces(3, Duration::from_millis(5));
    let (_server, outcome) = run(reply, simple_request()).await?;
    let (events, error) = outcome?;
    assert_eq!(text_deltas(&events), ["Looking at", " the diff"]);
    assert!(completed(&events).is_none());
    assert!(
        matches!(&error, Some(ProviderError::Server { status: 500, message }) if message.contains("server had an error")),
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
async fn http_errors_map_to_typed_errors() -> TestResult {
    let auth = Reply::json(
        401,
        include_str!("../fixtures/openai/error_401_invalid_api_key.json"),
    );
    let rate = Reply::json(
        429,
        include_str!("../fixtures/openai/error_429_rate_limit.json"),
    )
    .header("retry-after", "7")
    .header("x-ratelimit-remaining-tokens", "0");
    let unavailable = Reply::json(
        503,
        include_str!("../fixtures/openai/error_503_overloaded.json"),
    );
    let server_error = Reply::json(
        500,
        include_str!("../fixtures/openai/error_500_server_error.json"),
    );
    let too_long = Reply::json(
        400,
        include_str!("../fixtures/openai/error_400_context_length.json"),
    );

    let (_, outcome) = run(auth, simple_request()).await?;
    assert!(
        matches!(&outcome, Err(ProviderError::Auth { status: 401, message }) if message.contains("invalid_api_key")),
        "{outcome:?}"
    );
    let (_, outcome) = run(rate, simple_request()).await?;
    assert!(
        matches!(&outcome, Err(ProviderError::RateLimit { retry_after: Some(d), .. }) if *d == Duration::from_secs(7)),
        "{outcome:?}"
    );
    let (_, outcome) = run(unavailable, simple_request()).await?;
    assert!(
        matches!(&outcome, Err(ProviderError::Overloaded { .. })),
        "{outcome:?}"
    );
    let (_, outcome) = run(server_error, simple_request()).await?;
    assert!(
        matches!(&outcome, Err(ProviderError::Server { status: 500, .. })),
        "{outcome:?}"
    );
    let (_, outcome) = run(too_long, simple_request()).await?;
    assert!(
        matches!(&outcome, Err(ProviderError::ContextTooLong { .. })),
        "{outcome:?}"
    );
    Ok(())
}

/// A history in the middle of a tool loop with a thinking model, with a note the user typed
/// during the tool run.
fn tool_loop_request() -> ModelRequest {
    ModelRequest {
        system: "You are mnemo, a coding assistant.".into(),
        messages: vec![
            Message::user_text("Fix the failing test."),
            Message::assistant(vec![
                ContentBlock::Thinking {
                    thinking: "Run the tests first.".into(),
                    signature: None,
                },
                ContentBlock::Text {
                    text: "Running the tests.".into(),
                },
                ContentBlock::ToolUse {
                    id: "call_A".into(),
                    name: "shell".into(),
                    input: json!({"command": "cargo test"}),
                },
                ContentBlock::ToolUse {
                    id: "call_B".into(),
                    name: "read_file".into(),
                    input: Value::String("{\"path\": \"src/li".into()),
                },
            ]),
            Message {
                role: Role::User,
                content: vec![
                    ContentBlock::ToolResult {
                        tool_use_id: "call_A".into(),
                        content: "test result: FAILED. 1 failed".into(),
                        is_error: false,
                    },
                    ContentBlock::ToolResult {
                        tool_use_id: "call_B".into(),
                        content: "invalid arguments: EOF while parsing".into(),
                        is_error: true,
                    },
                ],
            },
            Message::user_text("Only touch the tests, please."),
            Message::user_text("And keep it short."),
        ]
        .into_iter()
        .map(std::sync::Arc::new)
        .collect(),
        tools: vec![ToolSpec {
            name: "shell".into(),
            description: "Runs a shell command.".into(),
            input_schema: json!({"type": "object", "properties": {"command": {"type": "string"}}})
                .into(),
        }]
        .into(),
        static_tools: usize::MAX,
        max_output_tokens: 8192,
        volatile_tail: 0,
        tool_calls: mnemo::llm::ToolCalls::Allowed,
        server_search: false,
    }
}

#[tokio::test]
async fn the_request_carries_auth_stream_options_tools_and_tool_messages() -> TestResult {
    let (server, outcome) = run(Reply::sse(TEXT), tool_loop_request()).await?;
    outcome?;
    let request = server.only_request();
    assert_eq!(request.method, "POST");
    assert_eq!(request.path, "/v1/chat/completions");
    assert_eq!(
        request.header("authorization"),
        Some("Bearer sk-proj-test-key")
    );
    assert_eq!(request.header("content-type"), Some("application/json"));

    let body = request.json()?;
    assert_eq!(body["model"], MODEL);
    assert_eq!(body["stream"], true);
    assert_eq!(body["stream_options"], json!({"include_usage": true}));
    // 127.0.0.1 is a compatible server, not api.openai.com.
    assert_eq!(body["max_tokens"], 8192);
    assert_eq!(body.get("max_completion_tokens"), None);
    assert_eq!(
        body["tools"],
        json!([{"type": "function", "function": {
            "name": "shell",
            "description": "Runs a shell command.",
            "parameters": {"type": "object", "properties": {"command": {"type": "string"}}},
        }}])
    );
    assert_eq!(
        body["messages"],
        json!([
            {"role": "system", "content": "You are mnemo, a coding assistant."},
            {"role": "user", "content": "Fix the failing test."},
            {"role": "assistant", "content": "Running the tests.",
             "reasoning_content": "Run the tests first.",
             "tool_calls": [
                {"id": "call_A", "type": "function",
                 "function": {"name": "shell", "arguments": "{\"command\":\"cargo test\"}"}},
                {"id": "call_B", "type": "function",
                 "function": {"name": "read_file", "arguments": "{\"path\": \"src/li"}},
             ]},
            {"role": "tool", "tool_call_id": "call_A", "content": "test result: FAILED. 1 failed"},
            {"role": "tool", "tool_call_id": "call_B", "content": "Error: invalid arguments: EOF while parsing"},
            {"role": "user", "content": "Only touch the tests, please.\n\nAnd keep it short."},
        ])
    );
    Ok(())
}

#[tokio::test]
async fn no_api_key_means_no_authorization_header() -> TestResult {
    let server = TestServer::start(vec![Reply::sse(TEXT)]).await?;
    let mut settings = server.settings("qwen3:8b", None);
    settings.base_url.push_str("/v1/");
    let provider = OpenAiProvider::new(settings);
    assert_eq!(provider.label(), "openai:qwen3:8b");
    let (_, error) = drain(provider.stream(simple_request()).await?).await;
    assert_eq!(error, None);
    let request = server.only_request();
    assert_eq!(request.header("authorization"), None);
    assert_eq!(request.path, "/v1/chat/completions");
    Ok(())
}
