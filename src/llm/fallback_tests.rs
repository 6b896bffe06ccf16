use std::collections::VecDeque;
use std::sync::Arc;

use super::*;
use crate::llm::scripted::{Script, ScriptedProvider};

fn model(name: &str) -> ChainModel {
    ChainModel {
        name: name.into(),
        provider: Arc::new(ScriptedProvider::new(Script::default())),
        context_window: 1000,
        max_output_tokens: 100,
        price: Price::default(),
    }
}

fn rate_limited(secs: Option<u64>) -> ProviderError {
    ProviderError::RateLimit {
        retry_after: secs.map(Duration::from_secs),
        message: "slow down".into(),
    }
}

/// Drives the chain as the agent does, where each attempt takes the next scripted outcome;
/// returns the result, the models tried per attempt, and the notices.
async fn run_script(
    chain: &FallbackChain,
    outcomes: Vec<Result<&'static str, ProviderError>>,
) -> (
    Result<(&'static str, String), ChainError>,
    Vec<String>,
    Vec<ChainNotice>,
) {
    let mut outcomes: VecDeque<_> = outcomes.into();
    let mut tried = Vec::new();
    let mut notices = Vec::new();
    let mut run = chain.start();
    while let Some((model, notice)) = run.next_model() {
        notices.extend(notice);
        loop {
            tried.push(model.name.clone());
            let err = match outcomes.pop_front() {
                Some(Ok(value)) => return (Ok((value, model.name)), tried, notices),
                Some(Err(err)) => err,
                None => ProviderError::Server {
                    status: 500,
                    message: "script ran out".into(),
                },
            };
            match run.failed(err) {
                Decision::Retry { delay, notice } => {
                    notices.push(notice);
                    tokio::time::sleep(delay).await;
                }
                Decision::NextModel => break,
                Decision::Stop(err) => return (Err(err), tried, notices),
            }
        }
    }
    (Err(run.exhausted()), tried, notices)
}

#[test]
fn backoff_doubles_from_the_base_up_to_the_cap_and_honours_retry_after() {
    let policy = RetryPolicy::default();
    let mid = 0.5;
    assert_eq!(policy.backoff(1, None, mid), Duration::from_secs(2));
    assert_eq!(policy.backoff(2, None, mid), Duration::from_secs(4));
    assert_eq!(policy.backoff(3, None, mid), Duration::from_secs(8));
    assert_eq!(policy.backoff(10, None, mid), Duration::from_secs(30));
    assert_eq!(policy.backoff(1, None, 0.0), Duration::from_millis(1500));
    assert_eq!(policy.backoff(1, None, 1.0), Duration::from_millis(2500));
    assert_eq!(
        policy.backoff(1, Some(Duration::from_secs(7)), mid),
        Duration::from_secs(7)
    );
}

#[tokio::test(start_paused = true)]
async fn a_rate_limited_model_is_retried_after_its_retry_after() {
    let chain = FallbackChain::new(vec![model("a"), model("b")], RetryPolicy::default());
    let started = Instant::now();
    let (result, tried, notices) =
        run_script(&chain, vec![Err(rate_limited(Some(7))), Ok("done")]).await;
    assert_eq!(result.ok(), Some(("done", "a".to_string())));
    assert_eq!(tried, ["a", "a"]);
    assert_eq!(started.elapsed(), Duration::from_secs(7));
    assert!(
        matches!(&notices[..], [ChainNotice::Retry { attempt: 2, delay, .. }] if *delay == Duration::from_secs(7))
    );
}

#[tokio::test(start_paused = true)]
async fn after_the_attempts_the_next_model_takes_over_and_the_first_cools_down() {
    let chain = FallbackChain::new(vec![model("a"), model("b")], RetryPolicy::default());
    let overloaded = || ProviderError::Overloaded {
        message: "Overloaded".into(),
    };
    let (result, tried, notices) = run_script(
        &chain,
        vec![
            Err(overloaded()),
            Err(overloaded()),
            Err(overloaded()),
            Ok("from b"),
        ],
    )
    .await;
    assert_eq!(result.ok(), Some(("from b", "b".to_string())));
    assert_eq!(tried, ["a", "a", "a", "b"]);
    assert!(
        matches!(notices.last(), Some(ChainNotice::Fallback { from, to, .. }) if from == "a" && to == "b")
    );

    // While `a` cools down it is skipped without a call; after the cooldown it is back.
    let (_, tried, _) = run_script(&chain, vec![Ok("b again")]).await;
    assert_eq!(tried, ["b"]);
    tokio::time::advance(Duration::from_secs(61)).await;
    let (_, tried, _) = run_script(&chain, vec![Ok("a again")]).await;
    assert_eq!(tried, ["a"]);
}

#[tokio::test(start_paused = true)]
async fn auth_and_bad_request_errors_move_on_at_once() {
    let chain = FallbackChain::new(
        vec![model("a"), model("b"), model("c")],
        RetryPolicy::default(),
    );
    let started = Instant::now();
    let (result, tried, _) = run_script(
        &chain,
        vec![
            Err(ProviderError::Auth {
                status: 401,
                message: "invalid x-api-key".into(),
            }),
            Err(ProviderError::BadRequest {
                message: "unknown field".into(),
            }),
            Ok("c works"),
        ],
    )
    .await;
    assert_eq!(result.map(|(v, _)| v).ok(), Some("c works"));
    assert_eq!(tried, ["a", "b", "c"]);
    assert_eq!(started.elapsed(), Duration::ZERO);
    // An auth failure cools for ten minutes, a bad request not at all.
    let (_, tried, _) = run_script(&chain, vec![Ok("b")]).await;
    assert_eq!(tried, ["b"]);
    tokio::time::advance(Duration::from_secs(601)).await;
    let (_, tried, _) = run_script(&chain, vec![Ok("a")]).await;
    assert_eq!(tried, ["a"]);
}

#[tokio::test(start_paused = true)]
async fn the_final_failure_lists_every_cause() {
    let chain = FallbackChain::new(vec![model("a"), model("b")], RetryPolicy::default());
    let (result, _, _) = run_script(
        &chain,
        vec![
            Err(ProviderError::Auth {
                status: 401,
                message: "bad key".into(),
            }),
            Err(ProviderError::BadRequest {
                message: "no such model".into(),
            }),
        ],
    )
    .await;
    let message = result.err().map(|e| e.to_string()).unwrap_or_default();
    assert!(
        message.contains("a: authentication failed (401): bad key"),
        "{message}"
    );
    assert!(
        message.contains("b: bad request: no such model"),
        "{message}"
    );
}

#[tokio::test(start_paused = true)]
async fn a_long_retry_after_moves_to_the_next_model_instead_of_waiting() {
    let chain = FallbackChain::new(vec![model("a"), model("b")], RetryPolicy::default());
    let (result, tried, _) = run_script(&chain, vec![Err(rate_limited(Some(120))), Ok("b")]).await;
    assert_eq!(result.map(|(v, _)| v).ok(), Some("b"));
    assert_eq!(tried, ["a", "b"]);
}

#[tokio::test(start_paused = true)]
async fn context_too_long_is_handed_back_for_compaction() {
    let chain = FallbackChain::new(vec![model("a"), model("b")], RetryPolicy::default());
    let (result, tried, _) = run_script(
        &chain,
        vec![Err(ProviderError::ContextTooLong {
            message: "prompt is too long".into(),
        })],
    )
    .await;
    assert!(matches!(result, Err(ChainError::ContextTooLong { .. })));
    assert_eq!(tried, ["a"]);
}

#[tokio::test(start_paused = true)]
async fn chains_built_from_the_same_cooldowns_skip_a_model_that_failed_in_either() {
    let cooldowns = Cooldowns::default();
    let policy = RetryPolicy::default();
    let main = FallbackChain::sharing(vec![model("a"), model("b")], policy, cooldowns.clone());
    let auth = ProviderError::Auth {
        status: 401,
        message: "invalid x-api-key".into(),
    };
    let (_, tried, _) = run_script(&main, vec![Err(auth), Ok("b works")]).await;
    assert_eq!(tried, ["a", "b"]);
    // A sub-agent's chain with `a` learns that it rests, without calling it.
    let other = FallbackChain::sharing(vec![model("a"), model("c")], policy, cooldowns.clone());
    let (result, tried, _) = run_script(&other, vec![Ok("c works")]).await;
    assert_eq!(tried, ["c"]);
    assert_eq!(result.map(|(v, _)| v).ok(), Some("c works"));
    // When every model of a chain rests, the first is tried anyway rather than failing the
    // request unsent (the only model of a session, once failed, stays usable).
    let only = FallbackChain::sharing(vec![model("a")], policy, cooldowns);
    let (result, tried, _) = run_script(&only, vec![Ok("a works again")]).await;
    assert_eq!(tried, ["a"]);
    assert_eq!(result.map(|(v, _)| v).ok(), Some("a works again"));
    // A chain of its own knows nothing of it.
    let own = FallbackChain::new(vec![model("a")], policy);
    let (_, tried, _) = run_script(&own, vec![Ok("a works")]).await;
    assert_eq!(tried, ["a"]);
}

#[tokio::test(start_paused = true)]
async fn a_local_server_that_is_down_is_not_retried_and_said_alone() {
    let down = || ProviderError::NotAnswering {
        server: "127.0.0.1:8080".into(),
        reason: "connection refused".into(),
    };
    let chain = FallbackChain::new(vec![model("local")], RetryPolicy::default());
    let started = Instant::now();
    let (result, tried, notices) = run_script(&chain, vec![Err(down())]).await;
    assert_eq!(tried, ["local"]);
    assert!(notices.is_empty(), "{notices:?}");
    assert_eq!(started.elapsed(), Duration::ZERO);
    assert_eq!(
        result.err().map(|e| e.to_string()).as_deref(),
        Some(down().to_string().as_str())
    );
    // Not rested: the next message tries it again, once the person started it.
    let (result, tried, _) = run_script(&chain, vec![Ok("up")]).await;
    assert_eq!(result.ok(), Some(("up", "local".to_string())));
    assert_eq!(tried, ["local"]);

    // With a fallback, the next model takes over as for any other failure.
    let chain = FallbackChain::new(vec![model("local"), model("b")], RetryPolicy::default());
    let (result, tried, _) = run_script(&chain, vec![Err(down()), Ok("done")]).await;
    assert_eq!(result.ok(), Some(("done", "b".to_string())));
    assert_eq!(tried, ["local", "b"]);
}
