//! Prompt-cache figures (`cargo bench --bench prompt_cache`): the 30-step scripted session of
//! `tests/suite/prompt_cache.rs` through the real binary, on the Anthropic and OpenAI wires, plain,
//! with a working checkpoint set, and with a capability created mid-session; for each, the
//! share of input read from the cache, the tokens written to it, and the cost at Sonnet
//! prices. Then the size of the first request of a default install. It prints the figures; it
//! does not fail on them.

#[path = "../tests/suite/cache_support/mod.rs"]
mod cache_support;

use cache_support::session::{Growth, project, run};
use cache_support::{Totals, Wire};

fn main() {
    println!(
        "mnemo prompt-cache benchmarks (Sonnet prices: input $3/M, write $3.75/M, read $0.30/M)"
    );
    for wire in [Wire::Anthropic, Wire::OpenAi] {
        let mut plain = None;
        for growth in Growth::ALL {
            let name = match growth {
                Growth::Nothing => "plain",
                Growth::Checkpoint => "checkpoint set",
                Growth::Capability => "capability made",
            };
            let project = project();
            let exchanges = run(wire, project.path(), growth.script());
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
