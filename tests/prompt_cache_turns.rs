//! Growth across turns in one session, on both wires, accounted by the in-test cache server:
//! a fact remembered in one turn must not rewrite the cached prompt of the next.

mod cache_support;

use std::sync::Arc;

use cache_support::{Answer, CacheServer, Exchange, Wire};
use mnemo::agent::{Session, SessionSettings};
use mnemo::llm::anthropic::AnthropicProvider;
use mnemo::llm::fallback::{ChainModel, FallbackChain, RetryPolicy};
use mnemo::llm::openai::OpenAiProvider;
use mnemo::llm::{Price, Provider, ProviderSettings};
use mnemo::memory::Store;
use mnemo::protocol::{Event, Op};
use serde_json::{Value, json};

/// Tokens a request may have outside what is read from the cache and what it adds (one
/// block, and on OpenAI one 128-token step).
fn allowance(wire: Wire) -> u64 {
    match wire {
        Wire::Anthropic => 150,
        Wire::OpenAi => 150 + 128,
    }
}

/// Runs `turns` in one session against a cache-accounting server playing `script`.
async fn session(wire: Wire, turns: &[&str], script: cache_support::Script) -> Vec<Exchange> {
    let server = CacheServer::start(wire, script)
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    let settings = ProviderSettings {
        base_url: match wire {
            Wire::Anthropic => server.base_url.clone(),
            Wire::OpenAi => format!("{}/v1", server.base_url),
        },
        model: "m".into(),
        api_key: Some("test-key".into()),
        ..ProviderSettings::default()
    };
    let provider: Arc<dyn Provider> = match wire {
        Wire::Anthropic => Arc::new(AnthropicProvider::new(settings)),
        Wire::OpenAi => Arc::new(OpenAiProvider::new(settings)),
    };
    let chain = Arc::new(FallbackChain::new(
        vec![ChainModel {
            name: "m".into(),
            provider,
            context_window: 200_000,
            max_output_tokens: 1024,
            price: Price::default(),
        }],
        RetryPolicy::default(),
    ));
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let ws = dir.path().canonicalize().unwrap_or_else(|e| panic!("{e}"));
    std::fs::write(ws.join("notes.txt"), "the build needs make db\n")
        .unwrap_or_else(|e| panic!("{e}"));
    let store = Store::open(&dir.path().join("db.sqlite")).unwrap_or_else(|e| panic!("{e}"));
    let mut tools = mnemo::tools::builtin::builtin_tools();
    mnemo::tools::memory::register(&mut tools, &store, None);
    let settings =
        SessionSettings::from_config(ws.clone(), "You are mnemo.".into(), &Default::default());
    let session = Session::create(settings, chain, tools, store, None)
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    let mut handle = mnemo::agent::spawn(session);
    for turn in turns {
        handle
            .ops
            .send(Op::UserInput {
                text: turn.to_string(),
            })
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        while let Some(event) = handle.events.recv().await {
            if matches!(event, Event::TurnFinished { .. }) {
                break;
            }
        }
    }
    let _ = handle.ops.send(Op::Shutdown).await;
    while handle.events.recv().await.is_some() {}
    server.exchanges()
}

#[tokio::test]
async fn a_fact_remembered_in_one_turn_leaves_the_next_turns_prompt_cached() {
    for wire in [Wire::Anthropic, Wire::OpenAi] {
        let script = Box::new(|step, _: &Value| match step {
            0 => Answer::tool("read_file", json!({"path": "notes.txt"})),
            1 => Answer::tool(
                "remember",
                json!({"text": "The build needs `make db` first."}),
            ),
            2 => Answer::Text("Remembered.".into()),
            3 => Answer::tool("read_file", json!({"path": "notes.txt"})),
            _ => Answer::Text("Run make db, then the tests.".into()),
        });
        let exchanges = session(wire, &["remember how to build", "how do I build?"], script).await;
        assert_eq!(exchanges.len(), 5, "{wire:?}");
        let system = |exchange: &Exchange| match wire {
            Wire::Anthropic => exchange.body["system"].clone(),
            Wire::OpenAi => exchange.body["messages"][0].clone(),
        };
        assert!(system(&exchanges[0]).to_string().contains("You are mnemo."));
        assert_eq!(
            system(&exchanges[3]),
            system(&exchanges[0]),
            "{wire:?}: the system prompt changed at the next turn"
        );
        for (at, pair) in exchanges.windows(2).enumerate() {
            let (before, now) = (pair[0].usage, pair[1].usage);
            let grown = now.total().saturating_sub(before.total());
            let fresh = now.write + now.input;
            assert!(
                fresh <= grown + allowance(wire),
                "{wire:?} request {}: {fresh} tokens not read from the cache for {grown} added",
                at + 1
            );
        }
    }
}
