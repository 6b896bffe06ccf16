//! A capability's whole life in prompt-cache terms, on both wires: created, called, paged out
//! by compaction, found again by a query and called. Each request outside the compaction
//! costs only what it adds; the tool list never changes.

use crate::cache_support;
use crate::capability_support;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use cache_support::{Answer, CacheServer, Exchange, Wire, growth_only};
use capability_support::{Agent, HELLO_SHA256, chain_of, sha256_create_args};
use mnemo::memory::Store;
use mnemo::protocol::{Event, Op, TurnStatus};
use serde_json::{Value, json};

const CAP: &str = "cap_sha256_hash";

/// The model's side: the answer to the `n`th request that offers tools, or the summary when
/// the compressor asks (a request without tools).
fn script() -> cache_support::Script {
    let asked = Arc::new(AtomicUsize::new(0));
    let call = json!({"tool": CAP, "arguments": {"text": "hello world"}});
    Box::new(move |_, body: &Value| {
        if body["tools"].as_array().is_none_or(Vec::is_empty) {
            let summary = json!({"goal": "Hash texts", "current_status": "a hashing tool exists"});
            return Answer::Text(summary.to_string());
        }
        match asked.fetch_add(1, Ordering::SeqCst) {
            0 => Answer::tool("capability_create", sha256_create_args()),
            // After the compaction (8) the call is refused; a query (9) finds it again.
            1 | 8 | 10 => Answer::tool("use_tool", call.clone()),
            9 => Answer::tool("capability_query", json!({"query": "sha256"})),
            2 | 11 => Answer::Text(format!("The SHA-256 is {HELLO_SHA256}.")),
            n => Answer::Text(format!("Noted {n}.")),
        }
    })
}

#[tokio::test]
async fn a_capability_made_lost_to_compaction_and_found_again_costs_only_what_it_adds() {
    for wire in [Wire::Anthropic, Wire::OpenAi] {
        let server = CacheServer::start(wire, script())
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let ws = dir
            .path()
            .canonicalize()
            .unwrap_or_else(|e| panic!("{e}"))
            .join("ws");
        std::fs::create_dir(&ws).unwrap_or_else(|e| panic!("{e}"));
        let store = Store::open(&dir.path().join("mnemo.db")).unwrap_or_else(|e| panic!("{e}"));
        let chain = chain_of(server.provider());
        let mut agent = Agent::start(chain, &store, &ws, |_| {})
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        let turn = async |agent: &mut Agent, text: &str| {
            let events = agent.turn(text).await.unwrap_or_else(|e| panic!("{e}"));
            let status = events.iter().find_map(|e| match e {
                Event::TurnFinished { status, .. } => Some(*status),
                _ => None,
            });
            assert_eq!(status, Some(TurnStatus::Completed), "{wire:?}: {events:#?}");
        };
        turn(&mut agent, "make a sha256 tool and hash 'hello world'").await;
        for n in 0..5 {
            turn(&mut agent, &format!("note {n}")).await;
        }
        agent
            .send(Op::Compact)
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        agent
            .until(|e| matches!(e, Event::Compacted { .. }))
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        turn(&mut agent, "hash 'hello world' once more").await;
        agent.finish().await.unwrap_or_else(|e| panic!("{e}"));

        let exchanges: Vec<Exchange> = server
            .exchanges()
            .into_iter()
            .filter(|e| e.body["tools"].as_array().is_some_and(|t| !t.is_empty()))
            .collect();
        assert_eq!(exchanges.len(), 12, "{wire:?}");
        let results = exchanges[11].body["messages"].to_string();
        assert!(
            results.contains(HELLO_SHA256),
            "{wire:?}: not hashed after the query"
        );
        for exchange in &exchanges {
            assert_eq!(
                exchange.body["tools"], exchanges[0].body["tools"],
                "{wire:?}"
            );
        }
        // The first request after the compaction rewrites the history anyway.
        if let Err(costly) = growth_only(wire, &exchanges, Some(8)) {
            panic!("{costly}");
        }
    }
}
