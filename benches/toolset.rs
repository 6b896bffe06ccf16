//! Figures for the tool list as a function of the history (`cargo bench --bench toolset`):
//! keeping the capability references of a 10,000-message history that names 200 capabilities
//! and deriving the tool list from them at each step; the overhead of a `cap_*` call beyond
//! its script's own run (the same script run through the same sandbox directly); and the size
//! of the static tool list every request carries. It prints the figures with their targets;
//! it does not fail on them.

use std::error::Error;
use std::sync::Arc;
use std::time::{Duration, Instant};

use mnemo::capabilities::{CREATE, CapabilityRefs, QUERY, derive, item_json};
use mnemo::llm::{ContentBlock, Message, Role, ToolSpec};
use mnemo::memory::Store;
use mnemo::memory::capabilities::NewCapability;
use mnemo::tools::capability_run::{CapabilityRunner, CapabilityTool, script};
use mnemo::tools::process::SandboxSlot;
use mnemo::tools::{Tool, ToolContext, ToolRegistry};
use serde_json::json;
use tokio_util::sync::CancellationToken;

type BenchResult<T = ()> = Result<T, Box<dyn Error>>;

/// The static tool list's size before capabilities (builtin, memory and sub-agent tools).
const STATIC_BYTES_BEFORE: usize = 10_178;

fn main() -> BenchResult {
    let store = Store::open_in_memory()?;
    let statics = static_tools(&store);
    tool_list_per_step(&statics);
    static_size(
        &statics,
        "static tool list of issue 15 (built-in, memory, sub-agent, capability)",
    );
    let dir = tempfile::tempdir()?;
    let library = mnemo::tools::skills::SkillLibrary::empty(dir.path().into(), dir.path().into());
    let mut registry = ToolRegistry::new();
    registry.register(mnemo::tools::turn_report::TurnReport);
    mnemo::tools::skills::register(&mut registry, Arc::new(library), &store);
    let mut everything = statics.clone();
    everything.extend(registry.specs().iter().cloned());
    static_size(&everything, "with turn_report and the four skill tools");
    call_overhead(&store)?;
    Ok(())
}

fn static_tools(store: &Store) -> Vec<ToolSpec> {
    let mut registry = mnemo::tools::builtin::builtin_tools();
    mnemo::tools::memory::register(&mut registry, store, None);
    mnemo::agent::subagents::register(&mut registry);
    let runner = Arc::new(CapabilityRunner::new(store.clone()));
    mnemo::tools::capability::register(&mut registry, store, None, runner);
    registry.specs().to_vec()
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

fn median(mut samples: Vec<Duration>) -> Duration {
    samples.sort();
    samples[samples.len() / 2]
}

/// A 10,000-message history: every 50th message answers a capability query or create naming
/// one of 200 capabilities (some named again later), the rest are ordinary tool results.
fn history() -> Vec<Message> {
    let schema = json!({"type": "object", "properties": {"text": {"type": "string"}}});
    let mut messages = Vec::with_capacity(10_000);
    for n in 0..5_000 {
        let id = format!("c{n}");
        let (tool, result) = if n % 25 == 0 {
            let cap = format!("cap-number-{}", (n / 25) % 200);
            let item = item_json(&cap, 1, "Does one thing well", "bash", &[], &schema);
            match n % 2 {
                0 => (QUERY, json!({"capabilities": [item]}).to_string()),
                _ => (CREATE, json!({"created": item}).to_string()),
            }
        } else {
            ("shell", format!("line {n}\nexit code: 0"))
        };
        messages.push(Message::assistant(vec![ContentBlock::ToolUse {
            id: id.clone(),
            name: tool.into(),
            input: json!({}),
        }]));
        messages.push(Message {
            role: Role::User,
            content: vec![ContentBlock::ToolResult {
                tool_use_id: id,
                content: result,
                is_error: false,
            }],
        });
    }
    messages
}

fn tool_list_per_step(statics: &[ToolSpec]) {
    let messages = history();
    let mut refs = CapabilityRefs::new();
    let started = Instant::now();
    for (seq, message) in messages.iter().enumerate() {
        let previous = seq.checked_sub(1).map(|at| &messages[at]);
        refs.observe(seq as i64, message, previous);
    }
    let per_message = started.elapsed() / messages.len() as u32;
    // A step after a change: the list is derived again from the references.
    let mut derives = Vec::new();
    for _ in 0..200 {
        let started = Instant::now();
        let set = derive(statics, &[], &[], &refs, 4000);
        std::hint::black_box(&set);
        derives.push(started.elapsed());
    }
    let set = derive(statics, &[], &[], &refs, u32::MAX);
    let offered = set.specs.len() - set.static_count;
    let budgeted = derive(statics, &[], &[], &refs, 4000);
    println!(
        "tool list for a 10,000-message history naming {offered} capabilities: indexing {:.2} µs \
         per appended message; deriving the list {:.3} ms per step after a change, nothing \
         when none (target < 1 ms per step); {} capabilities fit the 4000-token budget",
        per_message.as_secs_f64() * 1e6,
        ms(median(derives)),
        budgeted.specs.len() - budgeted.static_count,
    );
}

fn static_size(statics: &[ToolSpec], what: &str) {
    let bytes: usize = statics
        .iter()
        .map(|spec| serde_json::to_string(spec).map_or(0, |s| s.len()))
        .sum();
    println!(
        "{what}: {} tools, {bytes} bytes of JSON, {:+.1} % against {STATIC_BYTES_BEFORE} \
         before capabilities (target within 10 %)",
        statics.len(),
        (bytes as f64 / STATIC_BYTES_BEFORE as f64 - 1.0) * 100.0
    );
}

/// A `cap_*` call against the same script run through the same sandbox directly, interleaved.
fn call_overhead(store: &Store) -> BenchResult {
    let dir = tempfile::tempdir()?;
    let workspace = dir.path().canonicalize()?;
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    let code = "read -r args; printf '%s' \"$args\" | wc -c";
    let stored = store.call_blocking(move |db| {
        db.create_capability(NewCapability {
            name: "count-bytes".into(),
            description: "Counts the bytes of its arguments".into(),
            input_schema: json!({"type": "object"}),
            language: "bash".into(),
            code: code.into(),
            ..NewCapability::default()
        })
    })?;
    let runner = Arc::new(CapabilityRunner::new(store.clone()));
    let tool = CapabilityTool::new("cap_count_bytes", "count-bytes", stored.version, runner);
    let ctx = ToolContext::new(
        workspace,
        "bench",
        "call",
        CancellationToken::new(),
        Duration::from_secs(30),
        None,
        mnemo::tools::approvals::detached(),
    );
    let slot = SandboxSlot::default();
    let sandbox = slot.get(&ctx, None)?;
    let line = script("bash", code);
    let input = json!({"text": "hello world"});
    let (mut through_tool, mut direct) = (Vec::new(), Vec::new());
    for run in 0..60 {
        let started = Instant::now();
        runtime.block_on(tool.call(input.clone(), &ctx))?;
        let tool_time = started.elapsed();
        let started = Instant::now();
        let stdin = serde_json::to_vec(&input)?;
        let limit = Duration::from_secs(30);
        runtime.block_on(mnemo::tools::process::run(
            &sandbox,
            &line,
            Some(stdin),
            limit,
            &ctx,
        ))?;
        let direct_time = started.elapsed();
        if run >= 10 {
            through_tool.push(tool_time);
            direct.push(direct_time);
        }
    }
    let (tool, direct) = (median(through_tool), median(direct));
    println!(
        "cap_* call: median {:.2} ms, the script run directly in the same sandbox {:.2} ms: \
         overhead {:.2} ms (target < 15 ms)",
        ms(tool),
        ms(direct),
        ms(tool.saturating_sub(direct))
    );
    Ok(())
}
