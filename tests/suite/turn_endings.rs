//! Every turn ends truthfully: recorded provider streams replayed by an in-test server through
//! the real providers and the agent. A reply cut off by the output limit is continued and
//! otherwise ends `cut_off`; a cut-off tool call is reported as such; a refusal ends `refused`;
//! several choices are not mixed; a broken attempt's usage is counted; an exhausted quota is
//! not retried; a silent server times out; the only model stays usable after a failure.

use crate::agent_support;
use crate::common;

use std::sync::Arc;
use std::time::Duration;

use agent_support::{Harness, start_with_chain};
use common::{Reply, TestServer};
use mnemo::llm::Price;
use mnemo::llm::anthropic::AnthropicProvider;
use mnemo::llm::fallback::{ChainModel, FallbackChain, RetryPolicy};
use mnemo::llm::openai::OpenAiProvider;
use mnemo::llm::{Provider, ProviderSettings, Timeouts, Usage};
use mnemo::protocol::{Event, Op, ToolStatus, TurnStatus, UserMessageKind};

type TestResult = Result<(), Box<dyn std::error::Error>>;

const A_CUT_TEXT: &str = include_str!("../fixtures/anthropic/max_tokens_text.sse");
const A_CUT_CALL: &str = include_str!("../fixtures/anthropic/max_tokens_tool_call.sse");
const A_TEXT: &str = include_str!("../fixtures/anthropic/text.sse");
const A_REFUSAL: &str = include_str!("../fixtures/anthropic/refusal.sse");
const A_OVERLOADED_MID_STREAM: &str =
    include_str!("../fixtures/anthropic/overloaded_mid_stream.sse");
const A_AUTH: &str = include_str!("../fixtures/anthropic/error_401_authentication.json");
const O_LENGTH: &str = include_str!("../fixtures/openai/length.sse");
const O_TEXT: &str = include_str!("../fixtures/openai/text.sse");
const O_REFUSAL: &str = include_str!("../fixtures/openai/refusal.sse");
const O_TWO_CHOICES: &str = include_str!("../fixtures/openai/two_choices.sse");
const O_QUOTA: &str = include_str!("../fixtures/openai/error_429_insufficient_quota.json");

/// The same policy as the default, without the waits.
fn quick() -> RetryPolicy {
    RetryPolicy {
        base_delay: Duration::from_millis(1),
        max_delay: Duration::from_millis(5),
        ..RetryPolicy::default()
    }
}

fn model(name: &str, provider: Arc<dyn Provider>) -> ChainModel {
    ChainModel {
        name: name.into(),
        provider,
        context_window: 200_000,
        max_output_tokens: 1024,
        price: Price {
            input: 3.0,
            output: 15.0,
            ..Price::default()
        },
    }
}

fn anthropic(server: &TestServer) -> Arc<dyn Provider> {
    Arc::new(AnthropicProvider::new(
        server.settings("claude-sonnet-4-5", Some("k")),
    ))
}

fn openai(server: &TestServer) -> Arc<dyn Provider> {
    let mut settings: ProviderSettings = server.settings("gpt-4.1", Some("k"));
    settings.base_url.push_str("/v1");
    Arc::new(OpenAiProvider::new(settings))
}

async fn session(models: Vec<ChainModel>) -> Harness {
    start_with_chain(Arc::new(FallbackChain::new(models, quick())), |_| {}).await
}

/// Sends `text` and returns the turn's events and how it ended.
async fn turn(h: &mut Harness, text: &str) -> (Vec<Event>, TurnStatus, Option<String>) {
    h.send(Op::user_input(text)).await;
    let mut events = Vec::new();
    while !matches!(events.last(), Some(Event::TurnFinished { .. })) {
        let next = tokio::time::timeout(Duration::from_secs(3600), h.handle.events.recv()).await;
        match next {
            Ok(Some(event)) => events.push(event),
            _ => panic!("the turn did not finish: {events:#?}"),
        }
    }
    let Some(Event::TurnFinished {
        status, message, ..
    }) = events.last().cloned()
    else {
        panic!("no TurnFinished in {events:#?}");
    };
    (events, status, message)
}

fn texts(events: &[Event]) -> String {
    events
        .iter()
        .filter_map(|e| match e {
            Event::TextDelta { text } => Some(text.as_str()),
            _ => None,
        })
        .collect()
}

#[tokio::test]
async fn a_reply_cut_off_by_the_output_limit_is_continued() -> TestResult {
    let server = TestServer::start(vec![Reply::sse(A_CUT_TEXT), Reply::sse(A_TEXT)]).await?;
    let mut h = session(vec![model("claude", anthropic(&server))]).await;
    let (events, status, _) = turn(&mut h, "how do I set it up?").await;
    assert_eq!(status, TurnStatus::Completed);
    assert!(events.iter().any(|e| matches!(
        e,
        Event::UserMessage {
            kind: UserMessageKind::Continuation,
            ..
        }
    )));
    let second = server.requests()[1].json()?;
    let messages = second["messages"].as_array().ok_or("no messages")?;
    let last = messages.last().ok_or("empty")?.to_string();
    assert!(last.contains("cut off by the output limit"), "{last}");
    let previous = messages[messages.len() - 2].to_string();
    assert!(
        previous.contains("2. Run"),
        "the cut text is kept: {previous}"
    );
    Ok(())
}

#[tokio::test]
async fn a_reply_still_cut_off_after_the_continuations_ends_cut_off() -> TestResult {
    let replies = vec![
        Reply::sse(O_LENGTH),
        Reply::sse(O_LENGTH),
        Reply::sse(O_LENGTH),
    ];
    let server = TestServer::start(replies).await?;
    let mut h = session(vec![model("gpt", openai(&server))]).await;
    let (_, status, message) = turn(&mut h, "explain the migration").await;
    assert_eq!(status, TurnStatus::CutOff);
    let message = message.unwrap_or_default();
    assert!(
        message.contains("cut off by the output limit (1024 tokens)"),
        "{message}"
    );
    assert!(message.contains("2 continuation"), "{message}");
    assert_eq!(server.requests().len(), 3, "two continuations, then stop");
    Ok(())
}

#[tokio::test]
async fn a_tool_call_cut_off_by_the_output_limit_is_reported_as_too_big() -> TestResult {
    let server = TestServer::start(vec![Reply::sse(A_CUT_CALL), Reply::sse(A_TEXT)]).await?;
    let mut h = session(vec![model("claude", anthropic(&server))]).await;
    let (events, status, _) = turn(&mut h, "write the module").await;
    assert_eq!(status, TurnStatus::Completed);
    let result = events.iter().find_map(|e| match e {
        Event::ToolCallFinished {
            name,
            status,
            output,
            ..
        } if name == "write_file" => Some((*status, output.clone())),
        _ => None,
    });
    let Some((ToolStatus::Error, output)) = result else {
        panic!("no failed write_file in {events:#?}");
    };
    assert!(
        output.contains("cut off by the output limit (1024 tokens)"),
        "{output}"
    );
    assert!(output.contains("Make the call smaller"), "{output}");
    assert!(!output.contains("not valid JSON"), "{output}");
    assert!(!h.workspace().join("src/big.rs").exists());
    Ok(())
}

#[tokio::test]
async fn refusals_end_the_turn_as_refused_on_both_wires() -> TestResult {
    let server = TestServer::start(vec![Reply::sse(A_REFUSAL)]).await?;
    let mut h = session(vec![model("claude", anthropic(&server))]).await;
    let (_, status, message) = turn(&mut h, "something it will not do").await;
    assert_eq!(status, TurnStatus::Refused);
    assert!(
        message
            .unwrap_or_default()
            .contains("I can't help with that.")
    );

    let server = TestServer::start(vec![Reply::sse(O_REFUSAL)]).await?;
    let mut h = session(vec![model("gpt", openai(&server))]).await;
    let (events, status, message) = turn(&mut h, "something it will not do").await;
    assert_eq!(status, TurnStatus::Refused);
    assert_eq!(texts(&events), "I'm sorry, I can't assist with that.");
    assert!(
        message
            .unwrap_or_default()
            .contains("I'm sorry, I can't assist with that.")
    );
    Ok(())
}

#[tokio::test]
async fn only_the_first_of_several_choices_is_read() -> TestResult {
    let server = TestServer::start(vec![Reply::sse(O_TWO_CHOICES)]).await?;
    let mut h = session(vec![model("gpt", openai(&server))]).await;
    let (events, status, _) = turn(&mut h, "pick one").await;
    assert_eq!(status, TurnStatus::Completed);
    assert_eq!(texts(&events), "Option one is safer.");
    Ok(())
}

/// The session's usage as last reported.
fn last_total(events: &[Event]) -> Option<(Usage, f64)> {
    events.iter().rev().find_map(|e| match e {
        Event::Usage {
            total, cost_usd, ..
        } => Some((*total, *cost_usd)),
        _ => None,
    })
}

#[tokio::test]
async fn the_usage_of_an_attempt_that_broke_off_is_counted() -> TestResult {
    let replies = vec![Reply::sse(A_OVERLOADED_MID_STREAM), Reply::sse(A_TEXT)];
    let server = TestServer::start(replies).await?;
    let mut h = session(vec![model("claude", anthropic(&server))]).await;
    let (events, status, _) = turn(&mut h, "review the diff").await;
    assert_eq!(status, TurnStatus::Completed);
    let (total, cost) = last_total(&events).ok_or("no usage")?;
    // The broken attempt's 220 input and 1 output tokens, then the answer's 412 and 19.
    assert_eq!(
        (total.prompt_tokens(), total.output_tokens),
        (220 + 412, 1 + 19)
    );
    let expected = (632.0 * 3.0 + 20.0 * 15.0) / 1e6;
    assert!((cost - expected).abs() < 1e-12, "{cost} != {expected}");
    Ok(())
}

#[tokio::test]
async fn an_exhausted_quota_is_not_retried_and_the_next_model_answers() -> TestResult {
    let quota = TestServer::start(vec![Reply::json(429, O_QUOTA)]).await?;
    let other = TestServer::start(vec![Reply::sse(O_TEXT)]).await?;
    let mut h = session(vec![
        model("gpt", openai(&quota)),
        model("backup", openai(&other)),
    ])
    .await;
    let (events, status, _) = turn(&mut h, "hello").await;
    assert_eq!(status, TurnStatus::Completed);
    assert_eq!(
        quota.requests().len(),
        1,
        "a quota error must not be retried"
    );
    let fallback = events.iter().find_map(|e| match e {
        Event::ModelFallback { reason, .. } => Some(reason.clone()),
        _ => None,
    });
    let reason = fallback.ok_or("no fallback event")?;
    assert!(reason.contains("quota is used up"), "{reason}");
    assert!(!events.iter().any(|e| matches!(e, Event::Retry { .. })));
    Ok(())
}

// The store works on a thread of its own, so a paused clock would run ahead of it; short real
// timeouts stand in for the defaults.
#[tokio::test]
async fn a_server_that_never_answers_times_out_with_retries_shown() -> TestResult {
    let server = TestServer::start(vec![
        Reply::silent(),
        Reply::sse(A_TEXT).stall_after(200),
        Reply::sse(A_TEXT),
    ])
    .await?;
    let mut settings = server.settings("claude-sonnet-4-5", Some("k"));
    settings.timeouts = Timeouts {
        connect: Duration::from_secs(1),
        first_byte: Duration::from_millis(300),
        idle: Duration::from_millis(400),
    };
    let provider = Arc::new(AnthropicProvider::new(settings));
    let mut h = session(vec![model("claude", provider)]).await;
    let (events, status, _) = turn(&mut h, "hello").await;
    assert_eq!(status, TurnStatus::Completed);
    let reasons: Vec<String> = events
        .iter()
        .filter_map(|e| match e {
            Event::Retry { reason, .. } => Some(reason.clone()),
            _ => None,
        })
        .collect();
    assert_eq!(reasons.len(), 2, "{reasons:?}");
    assert!(reasons[0].contains("no answer within 0.3 s"), "{reasons:?}");
    assert!(reasons[1].contains("went quiet for 0.4 s"), "{reasons:?}");
    Ok(())
}

#[tokio::test]
async fn the_only_model_is_tried_again_after_it_failed() -> TestResult {
    let server = TestServer::start(vec![Reply::json(401, A_AUTH), Reply::sse(A_TEXT)]).await?;
    let mut h = session(vec![model("claude", anthropic(&server))]).await;
    let (_, status, _) = turn(&mut h, "first").await;
    assert_eq!(status, TurnStatus::Failed);
    let (_, status, _) = turn(&mut h, "second").await;
    assert_eq!(
        status,
        TurnStatus::Completed,
        "the resting model was not asked"
    );
    assert_eq!(server.requests().len(), 2);
    Ok(())
}

#[tokio::test]
async fn an_endless_stream_line_is_stopped_at_the_event_limit() -> TestResult {
    let endless = format!("event: message_start\ndata: {}", "x".repeat(20 << 20));
    let replies = vec![Reply::sse(&endless); 3];
    let server = TestServer::start(replies).await?;
    let mut h = session(vec![model("claude", anthropic(&server))]).await;
    let (_, status, message) = turn(&mut h, "hello").await;
    assert_eq!(status, TurnStatus::Failed);
    let message = message.unwrap_or_default();
    assert!(
        message.contains("passed 16 MiB without ending"),
        "{message}"
    );
    Ok(())
}
