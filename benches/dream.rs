//! Dream bookkeeping without model time (`cargo bench --bench dream`): 1,000 new archive
//! entries read in batches of 30, both prompts built for each batch, a scripted model that
//! answers at once, and each batch's notes (about 1,000 words per file) written to the files
//! and stored as a version with its searchable paragraphs. Prints the median with its target.

#[path = "../tests/suite/dream_support/mod.rs"]
mod dream_support;

use std::error::Error;
use std::time::{Duration, Instant};

use dream_support::{add_entries, chain, editor_json, scripted};
use mnemo::jobs::Dreamer;
use mnemo::jobs::dream::BATCH_ENTRIES;
use mnemo::memory::{Db, Store};

type BenchResult<T = ()> = Result<T, Box<dyn Error>>;

const ENTRIES: usize = 1_000;
const RUNS: usize = 15;
const TARGET: Duration = Duration::from_millis(50);

/// A notes file of about `words` words in paragraphs of ten bullet points.
fn notes(label: &str, words: usize) -> String {
    let bullets: Vec<String> = (0..words / 8)
        .map(|n| format!("- {label} fact {n}: the service uses port {n}"))
        .collect();
    bullets
        .chunks(10)
        .map(|chunk| chunk.join("\n"))
        .collect::<Vec<_>>()
        .join("\n\n")
}

fn main() -> BenchResult {
    let batches = ENTRIES.div_ceil(BATCH_ENTRIES);
    let editor = editor_json(&notes("work", 1000), &notes("person", 1000));
    let mut answers = Vec::with_capacity(batches * 2);
    for n in 0..batches {
        answers.push(format!("Batch {n}: three new facts, one stale item."));
        answers.push(editor.clone());
    }
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?;
    let mut times = Vec::with_capacity(RUNS);
    for _ in 0..RUNS {
        let dir = tempfile::tempdir()?;
        let path = dir.path().join("mnemo.db");
        add_entries(&mut Db::open(&path)?, "service", ENTRIES)?;
        let store = Store::open(&path)?;
        let model = std::sync::Arc::new(scripted(&answers));
        let dreamer = Dreamer::new(store, dir.path().join("memory"), chain(model));
        let start = Instant::now();
        let report = runtime.block_on(dreamer.run())?;
        times.push(start.elapsed());
        assert_eq!((report.batches, report.entries), (batches, ENTRIES));
    }
    times.sort();
    let median = times[RUNS / 2];
    let all: Vec<String> = times
        .iter()
        .map(|t| format!("{:.0}", t.as_secs_f64() * 1e3))
        .collect();
    println!("runs (ms, sorted): {}", all.join(" "));
    println!(
        "dream bookkeeping, {ENTRIES} entries in {batches} batches (2 instant model calls, 2 files \
         and a version each): median {:.1} ms, best {:.1} ms (target < {} ms) {}",
        median.as_secs_f64() * 1e3,
        times[0].as_secs_f64() * 1e3,
        TARGET.as_millis(),
        if median < TARGET { "ok" } else { "OVER" }
    );
    Ok(())
}
