//! Sub-agent overhead, printed as figures (`cargo bench --bench subagents`): what a blocking
//! `spawn_agent` costs beyond the model (the child session created in the store, its turn run
//! on its own task, its answer returned), and how fast an interrupt reaches three levels.

use std::time::Instant;

use mnemo::agent::{Session, SessionSettings};
use mnemo::config::Config;
use mnemo::llm::scripted::Script;
use mnemo::memory::Store;
use mnemo::protocol::{AgentActivity, AgentStatus, Event, Op};
use mnemo::tools::ToolRegistry;
use serde_json::{Value, json};

mod scripted;

const SPAWNS: usize = 200;

fn main() {
    println!("mnemo sub-agent benchmarks");
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap_or_else(|e| panic!("{e}"));
    runtime.block_on(async {
        for file in [false, true] {
            spawn_round_trip(file).await;
        }
        cancel_three_levels().await;
    });
}

fn when(key: &str, mut turn: Value) -> Value {
    turn["when"] = json!(key);
    turn
}

async fn session(turns: Vec<Value>, store: Store) -> mnemo::agent::AgentHandle {
    let script: Script =
        serde_json::from_value(json!({ "turns": turns })).unwrap_or_else(|e| panic!("{e}"));
    let chain = scripted::chain(script, 100_000);
    let settings = SessionSettings {
        max_steps: 1000,
        repeat_limit: 1000,
        max_active_messages: 100_000,
        compact_threshold: 0.99,
        ..SessionSettings::from_config(std::env::temp_dir(), "bench".into(), &Config::default())
    };
    let session = Session::create(settings, chain, ToolRegistry::new(), store, None)
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    mnemo::agent::spawn(session)
}

async fn spawn_round_trip(file: bool) {
    let mut turns = Vec::new();
    for n in 0..SPAWNS {
        let prompt = format!("CHILD{n}: answer");
        turns.push(when(
            &format!("PARENT{n}:"),
            json!({"tool_calls": [{"name": "spawn_agent", "arguments": {"prompt": prompt}}]}),
        ));
        turns.push(when(&format!("CHILD{n}:"), json!({"text": "child answer"})));
        turns.push(when(&format!("PARENT{n}:"), json!({"text": "ok"})));
    }
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let store = match file {
        true => Store::open(&dir.path().join("bench.db")),
        false => Store::open_in_memory(),
    }
    .unwrap_or_else(|e| panic!("{e}"));
    let mut handle = session(turns, store).await;
    let start = Instant::now();
    for n in 0..SPAWNS {
        let text = format!("PARENT{n}: delegate");
        assert!(handle.ops.send(Op::user_input(text)).await.is_ok());
        while let Some(event) = handle.events.recv().await {
            if matches!(event, Event::TurnFinished { .. }) {
                break;
            }
        }
    }
    let per_turn = start.elapsed().as_secs_f64() * 1e3 / SPAWNS as f64;
    let store = if file { "file" } else { "in-memory" };
    println!(
        "  a parent turn with one blocking sub-agent ({store} store; 3 model calls, 6 messages \
         persisted, a child session created): {per_turn:.2} ms per turn over {SPAWNS} turns"
    );
}

async fn cancel_three_levels() {
    let mut times = Vec::new();
    for _ in 0..20 {
        let spawn =
            |p: &str| json!({"tool_calls": [{"name": "spawn_agent", "arguments": {"prompt": p}}]});
        let words: Vec<String> = (0..100).map(|i| format!("w{i} ")).collect();
        let turns = vec![
            when("ROOT", spawn("ONE")),
            when("ONE", spawn("TWO")),
            when("TWO", spawn("THREE")),
            when("THREE", json!({"chunks": words, "delay_ms": 100})),
        ];
        let store = Store::open_in_memory().unwrap_or_else(|e| panic!("{e}"));
        let mut handle = session(turns, store).await;
        let text = "ROOT".to_string();
        assert!(handle.ops.send(Op::user_input(text)).await.is_ok());
        while let Some(event) = handle.events.recv().await {
            if matches!(&event, Event::AgentActivity { run_id, activity } if run_id == "a1.a1.a1" && *activity == AgentActivity::Responding)
            {
                break;
            }
        }
        let start = Instant::now();
        assert!(handle.ops.send(Op::Interrupt).await.is_ok());
        let mut cancelled = 0;
        while let Some(event) = handle.events.recv().await {
            if matches!(
                event,
                Event::AgentFinished {
                    status: AgentStatus::Cancelled,
                    ..
                }
            ) {
                cancelled += 1;
                if cancelled == 3 {
                    break;
                }
            }
        }
        times.push(start.elapsed());
        let _ = handle.ops.send(Op::Shutdown).await;
    }
    times.sort();
    println!(
        "  interrupt to all three levels of sub-agents cancelled: median {:.2} ms, max {:.2} ms \
         (target < 200 ms)",
        times[times.len() / 2].as_secs_f64() * 1e3,
        times[times.len() - 1].as_secs_f64() * 1e3
    );
}
