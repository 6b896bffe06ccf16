//! The built-in all-MiniLM-L6-v2 embedder, printed as figures with their targets
//! (`cargo bench --bench embed`): model load time, one short query, one ~1,000-character
//! archived turn, and throughput for a batch of 32 turns.

#[path = "../tests/suite/embed_support/mod.rs"]
mod embed_support;

use std::error::Error;
use std::time::{Duration, Instant};

use mnemo::memory::local_embed::LocalEmbedder;

type BenchResult<T = ()> = Result<T, Box<dyn Error>>;

const QUERY: &str = "where did we configure the sqlite busy timeout";
const QUERY_RUNS: usize = 100;
const TURN_RUNS: usize = 30;
const BATCH: usize = 32;
const BATCH_RUNS: usize = 5;

/// A turn as the archive stores one: a request, some tool output and an answer.
const TURN: &str = "User asked why `cargo test` hangs on the session lock test after the \
    migration to schema version 7. I ran the test alone with --nocapture and saw that the \
    second process waits on flock() forever because the first one never drops its Store: the \
    test keeps the handle in a static OnceLock. Output:\n\
    running 1 test\ntest session_lock::second_process_sees_busy ... has been running for over \
    60 seconds\n\
    The fix moves the store into the test body so it is dropped before the child process \
    starts, and adds a timeout of five seconds to the busy check so a regression fails \
    instead of hanging CI; the schema itself needed no change. I also renamed `lock_or_wait` to `try_lock` because it never \
    waits. Changed files: src/memory/session_lock.rs (the timeout), \
    src/memory/sessions_tests.rs (the test). All 14 session tests pass now, in 0.8 s. Next \
    step: check whether the TUI shows the busy error in the status line, and whether \
    `mnemo sessions` lists the locked session with the pid of its holder.";

fn main() -> BenchResult {
    // As `mnemo` sets them (`local_embed::thread_env`); set either to compare.
    for (name, value) in mnemo::memory::local_embed::thread_env() {
        if std::env::var_os(name).is_none() {
            // SAFETY: no other thread has started yet.
            unsafe { std::env::set_var(name, value) };
        }
    }
    println!("mnemo local embedder benchmarks ({})", embed_support::WHEEL);
    let dir = embed_support::model_dir()?;

    let started = Instant::now();
    let embedder = LocalEmbedder::load(&dir)?;
    println!("load:                {:>8.1} ms", ms(started.elapsed()));

    let var = |name: &str| std::env::var(name).unwrap_or_else(|_| "unset".into());
    println!(
        "threads:             RAYON_NUM_THREADS {}, CANDLE_NUM_THREADS {}",
        var("RAYON_NUM_THREADS"),
        var("CANDLE_NUM_THREADS")
    );
    // The first call pays for the thread pool and page faults; do not count it.
    embedder.embed(&[QUERY, TURN])?;

    let query = median(QUERY_RUNS, || embedder.embed(&[QUERY]).map(|_| ()))?;
    println!(
        "one query:           {:>8.2} ms median (target < 15 ms; {} word pieces)",
        ms(query),
        embedder.token_count(QUERY)?
    );

    let turn = median(TURN_RUNS, || embedder.embed(&[TURN]).map(|_| ()))?;
    println!(
        "one turn:            {:>8.2} ms median (target < 100 ms; {} characters, {} word pieces)",
        ms(turn),
        TURN.chars().count(),
        embedder.token_count(TURN)?
    );

    let turns: Vec<String> = (0..BATCH).map(|i| format!("Turn {i}. {TURN}")).collect();
    let refs: Vec<&str> = turns.iter().map(String::as_str).collect();
    let batch = median(BATCH_RUNS, || embedder.embed(&refs).map(|_| ()))?;
    println!(
        "batch of {BATCH} turns:  {:>8.1} ms median, {:.1} turns/s",
        ms(batch),
        BATCH as f64 / batch.as_secs_f64()
    );
    Ok(())
}

fn median<E: Error + 'static>(
    runs: usize,
    mut f: impl FnMut() -> Result<(), E>,
) -> BenchResult<Duration> {
    let mut times = Vec::with_capacity(runs);
    for _ in 0..runs {
        let started = Instant::now();
        f()?;
        times.push(started.elapsed());
    }
    times.sort();
    Ok(times[runs / 2])
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}
