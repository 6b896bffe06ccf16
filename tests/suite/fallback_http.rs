//! The fallback chain against in-test HTTP servers speaking the real wire formats: 429 with
//! retry-after, 529, 500, 401 and a stream cut mid-response, driven through a real session.
//! Backoffs are configured tiny so the sequences run in about a second.

use crate::agent_support;
use crate::common;

use std::sync::Arc;
use std::time::Duration;

use agent_support::settings;
use common::{Reply, TestServer};
use mnemo::agent::Session;
use mnemo::llm::Price;
use mnemo::llm::ProviderSettings;
use mnemo::llm::anthropic::AnthropicProvider;
use mnemo::llm::fallback::{ChainModel, FallbackChain, RetryPolicy};
use mnemo::llm::openai::OpenAiProvider;
use mnemo::memory::Store;
use mnemo::protocol::{Event, Op, TurnStatus};

type TestResult = Result<(), Box<dyn std::error::Error>>;

fn fixture(path: &str) -> Result<String, std::io::Error> {
    std::fs::read_to_string(format!("tests/fixtures/{path}"))
}

fn quick_policy() -> RetryPolicy {
    RetryPolicy {
        attempts: 3,
        base_delay: Duration::from_millis(10),
        max_delay: Duration::from_secs(2),
        cooldown: Duration::from_secs(60),
        auth_cooldown: Duration::from_secs(600),
    }
}

fn anthropic(server: &TestServer) -> ChainModel {
    ChainModel {
        name: "claude".into(),
        provider: Arc::new(AnthropicProvider::new(ProviderSettings {
            base_url: server.base_url.clone(),
            model: "claude-sonnet-4-5".into(),
            api_key: Some("test-key".into()),
            ..ProviderSettings::default()
        })),
        context_window: 200_000,
        max_output_tokens: 1024,
        price: Price::default(),
    }
}

fn openai(server: &TestServer) -> ChainModel {
    ChainModel {
        name: "gpt".into(),
        provider: Arc::new(OpenAiProvider::new(ProviderSettings {
            base_url: format!("{}/v1", server.base_url),
            model: "gpt-5.1".into(),
            api_key: Some("test-key".into()),
            ..ProviderSettings::default()
        })),
        context_window: 400_000,
        max_output_tokens: 1024,
        price: Price::default(),
    }
}

/// Runs one turn per prompt on a session over `chain` and returns every event.
async fn run(
    chain: FallbackChain,
    prompts: &[&str],
) -> Result<Vec<Event>, Box<dyn std::error::Error>> {
    let dir = tempfile::tempdir()?;
    let ws = dir.path().canonicalize()?;
    let session = Session::create(
        settings(&ws),
        Arc::new(chain),
        mnemo::tools::ToolRegistry::new(),
        Store::open_in_memory()?,
        None,
    )
    .await?;
    let mut handle = mnemo::agent::spawn(session);
    let mut events = Vec::new();
    for prompt in prompts {
        handle.ops.send(Op::user_input(prompt.to_string())).await?;
        while let Some(event) =
            tokio::time::timeout(Duration::from_secs(20), handle.events.recv()).await?
        {
            let done = matches!(event, Event::TurnFinished { .. });
            events.push(event);
            if done {
                break;
            }
        }
    }
    Ok(events)
}

fn finished(events: &[Event]) -> Vec<TurnStatus> {
    events
        .iter()
        .filter_map(|e| match e {
            Event::TurnFinished { status, .. } => Some(*status),
            _ => None,
        })
        .collect()
}

#[tokio::test]
async fn rate_limit_overload_and_server_error_exhaust_a_model_then_the_fallback_answers()
-> TestResult {
    let primary = TestServer::start(vec![
        Reply::json(429, &fixture("anthropic/error_429_rate_limit.json")?)
            .header("retry-after", "1"),
        Reply::json(529, &fixture("anthropic/error_529_overloaded.json")?),
        Reply::json(
            500,
            r#"{"type":"error","error":{"type":"api_error","message":"Internal server error"}}"#,
        ),
    ])
    .await?;
    let fallback = TestServer::start(vec![Reply::sse(&fixture("openai/text.sse")?)]).await?;
    let chain = FallbackChain::new(vec![anthropic(&primary), openai(&fallback)], quick_policy());
    let events = run(chain, &["does the build pass?"]).await?;

    assert_eq!(finished(&events), [TurnStatus::Completed]);
    let retries: Vec<(u32, u64)> = events
        .iter()
        .filter_map(|e| match e {
            Event::Retry {
                attempt, delay_ms, ..
            } => Some((*attempt, *delay_ms)),
            _ => None,
        })
        .collect();
    assert_eq!(retries.len(), 2, "{events:#?}");
    assert_eq!(
        retries[0],
        (2, 1000),
        "the first retry honours retry-after: 1"
    );
    assert!(events.iter().any(|e| matches!(e,
        Event::ModelFallback { from, to, .. } if from == "claude" && to == "gpt")));
    assert_eq!(primary.requests().len(), 3);
    assert!(events.iter().any(|e| matches!(e,
        Event::AssistantMessage { text } if text.starts_with("The build passes"))));
    Ok(())
}

#[tokio::test]
async fn a_stream_cut_mid_response_is_retried_and_the_partial_text_replaced() -> TestResult {
    let sse = fixture("anthropic/text.sse")?;
    let cut = sse.find("finished in").ok_or("fixture changed")?;
    let server = TestServer::start(vec![Reply::sse(&sse).cut_after(cut), Reply::sse(&sse)]).await?;
    let chain = FallbackChain::new(vec![anthropic(&server)], quick_policy());
    let events = run(chain, &["does the build pass?"]).await?;

    assert_eq!(finished(&events), [TurnStatus::Completed]);
    let retry = events
        .iter()
        .position(|e| matches!(e, Event::Retry { .. }))
        .ok_or("no retry")?;
    assert!(matches!(
        &events[retry],
        Event::Retry {
            discard_partial: true,
            ..
        }
    ));
    assert!(
        events[..retry]
            .iter()
            .any(|e| matches!(e, Event::TextDelta { .. }))
    );
    let answers: Vec<&String> = events
        .iter()
        .filter_map(|e| match e {
            Event::AssistantMessage { text } => Some(text),
            _ => None,
        })
        .collect();
    assert_eq!(answers.len(), 1, "the answer is committed once");
    assert_eq!(answers[0].matches("The build").count(), 1);
    Ok(())
}

#[tokio::test]
async fn an_auth_error_moves_on_at_once_and_the_model_cools_down() -> TestResult {
    let primary = TestServer::start(vec![Reply::json(
        401,
        &fixture("anthropic/error_401_authentication.json")?,
    )])
    .await?;
    let fallback = TestServer::start(vec![
        Reply::sse(&fixture("openai/text.sse")?),
        Reply::sse(&fixture("openai/text.sse")?),
    ])
    .await?;
    let chain = FallbackChain::new(vec![anthropic(&primary), openai(&fallback)], quick_policy());
    let events = run(chain, &["first", "second"]).await?;
    assert_eq!(
        finished(&events),
        [TurnStatus::Completed, TurnStatus::Completed]
    );
    assert!(!events.iter().any(|e| matches!(e, Event::Retry { .. })));
    assert_eq!(
        primary.requests().len(),
        1,
        "the cooling model is not asked again"
    );
    assert_eq!(fallback.requests().len(), 2);
    Ok(())
}

#[tokio::test]
async fn when_every_model_fails_the_turn_fails_listing_each_cause() -> TestResult {
    let primary = TestServer::start(vec![Reply::json(
        401,
        &fixture("anthropic/error_401_authentication.json")?,
    )])
    .await?;
    let fallback = TestServer::start(vec![Reply::json(
        401,
        &fixture("openai/error_401_invalid_api_key.json")?,
    )])
    .await?;
    let chain = FallbackChain::new(vec![anthropic(&primary), openai(&fallback)], quick_policy());
    let events = run(chain, &["hi"]).await?;
    let message = events
        .iter()
        .find_map(|e| match e {
            Event::TurnFinished {
                status: TurnStatus::Failed,
                message,
                ..
            } => message.clone(),
            _ => None,
        })
        .ok_or("turn did not fail")?;
    assert!(
        message.contains("claude: authentication failed (401)"),
        "{message}"
    );
    assert!(
        message.contains("gpt: authentication failed (401)"),
        "{message}"
    );
    Ok(())
}
