//! Growth across turns in one session, on both wires, accounted by the in-test cache server:
//! a fact remembered in one turn must not rewrite the cached prompt of the next.

use crate::cache_support;

use std::sync::Arc;

use cache_support::{Answer, CacheServer, Exchange, Wire, growth_only};
use mnemo::agent::{Session, SessionSettings, SkillSettings, prepare_skills};
use mnemo::config::Config;
use mnemo::llm::Price;
use mnemo::llm::fallback::{ChainModel, FallbackChain, RetryPolicy};
use mnemo::memory::Store;
use mnemo::protocol::{Event, Op};
use mnemo::sandbox::{ApprovalMode, Confinement};
use mnemo::tools::Approvals;
use serde_json::{Value, json};

/// What the session can grow besides experiences.
#[derive(Clone, Copy, PartialEq)]
enum Grows {
    Facts,
    /// Skills too: a library under a config dir of its own, and writes allowed.
    Skills,
}

/// Runs `turns` in one session against a cache-accounting server playing `script`.
async fn session(
    wire: Wire,
    grows: Grows,
    turns: &[&str],
    script: cache_support::Script,
) -> Vec<Exchange> {
    let server = CacheServer::start(wire, script)
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    let provider = server.provider();
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
    let config = Config::default();
    let mut settings = SessionSettings::from_config(ws.clone(), "You are mnemo.".into(), &config);
    if grows == Grows::Skills {
        settings.approvals = Arc::new(Approvals::confined(
            config.sandbox.config(),
            ApprovalMode::Full,
            Arc::new(Confinement::from_section(&config.sandbox)),
        ));
    }
    let mut session = Session::create(settings, chain, tools, store.clone(), None)
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    if grows == Grows::Skills {
        let skills = dir.path().join("config");
        std::fs::create_dir_all(skills.join("skills")).unwrap_or_else(|e| panic!("{e}"));
        let (library, _) = prepare_skills(&store, ws.clone(), skills)
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        session.set_skills(
            library,
            SkillSettings {
                catalog_tokens: None,
                learn_after_steps: 0,
            },
        );
    }
    let mut handle = mnemo::agent::spawn(session);
    for turn in turns {
        handle
            .ops
            .send(Op::user_input(turn.to_string()))
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
        let turns = ["remember how to build", "how do I build?"];
        let exchanges = session(wire, Grows::Facts, &turns, script).await;
        assert_eq!(exchanges.len(), 5, "{wire:?}");
        check_growth_only(wire, &exchanges);
    }
}

/// The system prompt stayed byte-identical into the second turn (request 3), and each request
/// cost at most what it added (plus the allowance) outside the cache.
fn check_growth_only(wire: Wire, exchanges: &[Exchange]) {
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
    if let Err(costly) = growth_only(wire, exchanges, None) {
        panic!("{costly}");
    }
}

#[tokio::test]
async fn a_skill_learned_in_one_turn_leaves_the_next_turns_prompt_cached() {
    for wire in [Wire::Anthropic, Wire::OpenAi] {
        let script = Box::new(|step, _: &Value| match step {
            0 => Answer::tool("read_file", json!({"path": "notes.txt"})),
            1 => Answer::tool(
                "skill_write",
                json!({"name": "build-with-db", "description": "Build after make db",
                    "body": "Run `make db`, then the build.\n", "scope": "user"}),
            ),
            2 => Answer::Text("Written down.".into()),
            3 => Answer::tool("read_file", json!({"path": "notes.txt"})),
            _ => Answer::Text("Run make db, then the build.".into()),
        });
        let turns = ["write down how to build", "how do I build?"];
        let exchanges = session(wire, Grows::Skills, &turns, script).await;
        assert_eq!(exchanges.len(), 5, "{wire:?}");
        let written = exchanges[2].body.to_string();
        assert!(
            written.contains("build-with-db"),
            "{wire:?}: no skill was written"
        );
        check_growth_only(wire, &exchanges);
    }
}
