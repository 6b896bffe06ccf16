//! Prompt-cache figures (`cargo bench --bench prompt_cache`): the 30-step scripted session of
//! `tests/prompt_cache.rs` through the real binary, on the Anthropic and OpenAI wires, plain,
//! with a working checkpoint set, and with a capability created mid-session; for each, the
//! share of input read from the cache, the tokens written to it, and the cost at Sonnet
//! prices. Then the size of the first request of a default install. It prints the figures; it
//! does not fail on them.

#[path = "../tests/cache_support/mod.rs"]
mod cache_support;

use cache_support::session::{plain_step, project, run};
use cache_support::{Answer, Script, Totals, Wire};
use serde_json::json;

/// Where the growing variants do their extra step.
const GROWTH_STEP: usize = 13;

fn variant(name: &str) -> Script {
    let grow = match name {
        "checkpoint set" => Some(Answer::tool(
            "update_working_checkpoint",
            json!({"key_info": "Task: make every part's value public. Done: parts 0-3 read; \
                next: count lines, then edit each part."}),
        )),
        "capability made" => Some(Answer::tool(
            "capability_create",
            json!({"name": "count-lines", "description": "Count the lines of a text",
                "input_schema": {"type": "object", "properties": {"text": {"type": "string"}},
                    "required": ["text"]},
                "language": "python3",
                "code": "import json,sys\nprint(len(json.load(sys.stdin)['text'].splitlines()))"}),
        )),
        _ => None,
    };
    Box::new(move |step, _| match (&grow, step) {
        (Some(answer), GROWTH_STEP) => answer.clone(),
        (Some(_), step) if step > GROWTH_STEP => plain_step(step - 1),
        _ => plain_step(step),
    })
}

fn main() {
    println!(
        "mnemo prompt-cache benchmarks (Sonnet prices: input $3/M, write $3.75/M, read $0.30/M)"
    );
    for wire in [Wire::Anthropic, Wire::OpenAi] {
        let mut plain = None;
        for name in ["plain", "checkpoint set", "capability made"] {
            let project = project();
            let exchanges = run(wire, project.path(), variant(name));
            let totals = Totals::of(&exchanges);
            let base = *plain.get_or_insert(totals.cost);
            println!(
                "{wire:?} {name:>16}: {:>2} requests, {:5.1} % read from cache, {:>6} written, \
                 {:>6} uncached, ${:.4} ({:+.1} %)",
                totals.requests,
                totals.read_share() * 100.0,
                totals.usage.write,
                totals.usage.input,
                totals.cost,
                (totals.cost / base - 1.0) * 100.0
            );
            if name == "plain"
                && let Some(first) = exchanges.first()
            {
                let bytes = first.body.to_string().len();
                let tools = first.body["tools"].as_array().map_or(0, Vec::len);
                println!(
                    "{wire:?} first request: {} tokens, {bytes} bytes, {tools} tools",
                    first.usage.total()
                );
            }
        }
    }
}
