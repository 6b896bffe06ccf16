//! Compaction frequency (`cargo bench --bench compaction`): a 200-step scripted session in a
//! 16k-token window, each step reading a small file (call and result about 400 tokens), the
//! model counting 1.3 tokens for each one mnemo estimates (as real providers' tokenizers differ). Prints how many
//! compactions (each one compressor call) the session needed, per 10 steps, against the target
//! of at most one, and what each left of the budget.

mod scripted;

use std::error::Error;
use std::sync::Arc;
use std::time::Instant;

use mnemo::agent::{Session, SessionSettings};
use mnemo::config::Config;
use mnemo::llm::Price;
use mnemo::llm::fallback::ChainModel;
use mnemo::llm::scripted::{Script, ScriptedProvider};
use mnemo::memory::Store;
use mnemo::protocol::{Event, Op};
use serde_json::{Value, json};

type BenchResult<T = ()> = Result<T, Box<dyn Error>>;

const STEPS: usize = 200;
const WINDOW: u64 = 16_000;

fn main() -> BenchResult {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?;
    runtime.block_on(session())
}

async fn session() -> BenchResult {
    let dir = tempfile::tempdir()?;
    let ws = dir.path().canonicalize()?;
    let mut turns: Vec<Value> = Vec::with_capacity(STEPS + 1);
    for i in 0..STEPS {
        std::fs::write(
            ws.join(format!("notes{i}.txt")),
            format!("notes {i}: ").repeat(80),
        )?;
        turns.push(json!({"tool_calls": [{"name": "read_file", "arguments": {"path": format!("notes{i}.txt")}}]}));
    }
    turns.push(json!({"text": "done"}));
    let script: Script =
        serde_json::from_value(json!({"turns": turns, "prompt_token_factor": 1.3}))?;
    let chain = scripted::chain(script, WINDOW);
    let summary =
        json!({"text": "{\"goal\": \"read the notes\", \"current_status\": \"reading\"}"});
    let compressor: Script = serde_json::from_value(json!({"turns": vec![summary; STEPS]}))?;
    let settings = SessionSettings {
        max_steps: u32::try_from(STEPS)? + 5,
        repeat_limit: 1000,
        ..SessionSettings::from_config(ws.clone(), "bench".into(), &Config::default())
    };
    let mut session = Session::create(
        settings,
        chain,
        mnemo::tools::builtin::builtin_tools(),
        Store::open_in_memory()?,
        None,
    )
    .await?;
    session.set_compressor(Some(ChainModel {
        name: "compressor".into(),
        provider: Arc::new(ScriptedProvider::new(compressor)),
        context_window: WINDOW,
        max_output_tokens: 1024,
        price: Price::default(),
    }));
    let mut handle = mnemo::agent::spawn(session);
    let started = Instant::now();
    handle
        .ops
        .send(Op::user_input("read every notes file"))
        .await?;
    let mut compactions = Vec::new();
    while let Some(event) = handle.events.recv().await {
        match event {
            Event::Compacted {
                tokens_before,
                tokens_after,
                ..
            } => compactions.push((tokens_before, tokens_after)),
            Event::TurnFinished { .. } => break,
            _ => {}
        }
    }
    let budget = WINDOW - 1024 - 2000;
    let per_ten = compactions.len() as f64 * 10.0 / STEPS as f64;
    let verdict = if per_ten <= 1.0 { "ok" } else { "OVER" };
    let worst = compactions.iter().map(|c| c.1).max().unwrap_or(0);
    // What a step adds, from how much the context grew between two compactions.
    let grown: Vec<u64> = compactions
        .windows(2)
        .map(|pair| pair[1].0.saturating_sub(pair[0].1))
        .collect();
    let per_step = match grown.is_empty() {
        true => 0,
        false => {
            grown.iter().sum::<u64>() / grown.len() as u64 * compactions.len() as u64 / STEPS as u64
        }
    };
    println!(
        "compactions in a {STEPS}-step session with a 16k window: {} ({per_ten:.2} per 10 steps, \
         target <= 1) [{verdict}]; each left at most {worst} of a {budget}-token budget; about \
         {per_step} tokens per step; {:.0} ms in all",
        compactions.len(),
        started.elapsed().as_secs_f64() * 1000.0
    );
    Ok(())
}
