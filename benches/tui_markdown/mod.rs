//! A reply in markdown with tables and code blocks, cut into model tokens, for the streaming
//! benchmarks: the real binary in a pseudo-terminal at 100 tokens per second and unpaced, and
//! the same tokens drawn in-process one frame each.

use std::path::Path;
use std::time::{Duration, Instant};

use serde_json::json;

use crate::tui_pty::{Pty, Result, cpu_ticks};

/// Tokens in the streamed reply.
pub const TOKENS: usize = 1000;
/// Milliseconds between tokens: 100 tokens per second.
const TOKEN_INTERVAL_MS: u64 = 10;

/// One step of the reply: a heading, prose, a table, a code block.
fn section(step: usize) -> String {
    format!(
        "## Step {step}\n\n\
         The build of module {step} needs a look at these numbers first:\n\n\
         | Crate | Lines | Warnings | Status |\n\
         |:--|--:|--:|:-:|\n\
         | core | {} | 3 | ok |\n\
         | tui | 5800 | 0 | ok |\n\
         | agent | 2900 | {} | check |\n\n\
         ```rust\n\
         fn step_{step}() -> Result<()> {{\n    \
             let report = build(\"module_{step}\")?;\n    \
             println!(\"{{report}}\");\n    \
             Ok(())\n\
         }}\n\
         ```\n\n\
         Then it runs **the tests** and reports back with `cargo test`.\n\n",
        1200 + step,
        step % 9
    )
}

/// The reply cut into `count` tokens: a word with the spaces or newlines after it.
pub fn tokens(count: usize) -> Vec<String> {
    let mut tokens = Vec::with_capacity(count);
    let mut step = 1;
    while tokens.len() < count {
        let text = section(step);
        let mut token = String::new();
        for c in text.chars() {
            if !c.is_whitespace() && token.ends_with(char::is_whitespace) {
                tokens.push(std::mem::take(&mut token));
            }
            token.push(c);
        }
        tokens.push(token);
        step += 1;
    }
    tokens.truncate(count);
    tokens
}

/// Runs of each streaming figure; the median is reported, since other work on the machine
/// makes single runs noisy.
const RUNS: usize = 5;

/// CPU time of the whole process (agent, provider and drawing) while the reply streams at 100
/// tokens per second.
pub fn streaming_cpu(dir: &Path) -> Result<()> {
    let (used, wall, all) = median_of_runs(dir, TOKENS, TOKEN_INTERVAL_MS)?;
    println!(
        "streaming a {TOKENS}-token reply with tables and framed code at 100 tokens/s: \
         median {used:.2} CPU-s over {wall:.1} s (runs: {all}; target < 0.25 CPU-s)"
    );
    Ok(())
}

/// Tokens of the reply streamed without pauses.
const UNPACED_TOKENS: usize = 4000;

/// CPU time of the whole process while a 4,000-token reply arrives as fast as the scripted
/// model sends it.
pub fn unpaced_cpu(dir: &Path) -> Result<()> {
    let (used, wall, all) = median_of_runs(dir, UNPACED_TOKENS, 0)?;
    println!(
        "streaming a {UNPACED_TOKENS}-token reply with tables and framed code unpaced: \
         median {used:.3} CPU-s over {wall:.2} s (runs: {all}; target < 0.08 CPU-s)"
    );
    Ok(())
}

/// The median run (CPU-seconds, wall seconds) of `RUNS`, and every run's CPU-seconds.
fn median_of_runs(dir: &Path, count: usize, interval_ms: u64) -> Result<(f64, f64, String)> {
    let mut runs = Vec::new();
    for _ in 0..RUNS {
        runs.push(one_stream(dir, count, interval_ms)?);
    }
    runs.sort_by(|a, b| a.0.total_cmp(&b.0));
    let (used, wall) = runs[RUNS / 2];
    let all: Vec<String> = runs.iter().map(|(cpu, _)| format!("{cpu:.2}")).collect();
    Ok((used, wall, all.join(", ")))
}

/// The end of every streamed reply, after its tokens.
const LAST_LINE: &str = "That was the whole reply.";

/// One streamed reply of `count` tokens, `interval_ms` apart: CPU-seconds used and wall
/// seconds taken.
fn one_stream(dir: &Path, count: usize, interval_ms: u64) -> Result<(f64, f64)> {
    let mut chunks = tokens(count);
    // A reply streamed unpaced can be over before any frame shows it responding.
    chunks.push(format!("\n\n{LAST_LINE}"));
    let script = json!({"turns": [{"chunks": chunks, "delay_ms": interval_ms}]}).to_string();
    let pty = Pty::spawn(dir, &script, &[])?;
    pty.wait_for("● idle", Duration::from_secs(10))?;
    let pid = pty.pid()?;
    let ticks = cpu_ticks(pid)?;
    let start = Instant::now();
    pty.send("stream a reply with tables\r")?;
    pty.wait_for(LAST_LINE, Duration::from_secs(60))?;
    pty.wait_for("● idle", Duration::from_secs(10))?;
    let wall = start.elapsed().as_secs_f64();
    let used = (cpu_ticks(pid)? - ticks) as f64 / 100.0;
    Ok((used, wall))
}
