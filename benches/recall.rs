//! Recall through the whole process (`cargo bench --bench recall`): `mnemo memory search`
//! over 20,000 archive entries of three embedded pieces each, with the built-in model (the
//! query embedded in-process, the model loaded by the process), by keyword only, and answered
//! by a `mnemo serve` running on the same data directory (its model loaded already), with the
//! daemon's resident memory around its first search; the cost of asking whether a daemon
//! runs; and the memory the piece index of 100,000 pieces takes. Prints figures with their
//! targets.

#[path = "../tests/suite/embed_support/mod.rs"]
mod embed_support;
mod support;

use std::error::Error;
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use mnemo::llm::{ContentBlock, Message};
use mnemo::memory::piece_index::{PieceIndex, Source};
use mnemo::memory::vectors::normalize;
use mnemo::memory::{Db, NewArchiveEntry, NewSession};

type BenchResult<T = ()> = Result<T, Box<dyn Error>>;

const ENTRIES: usize = 20_000;
const PIECES_PER_ENTRY: usize = 3;
const DIM: usize = 384;
const RUNS: usize = 15;
const MODEL: &str = "local:all-MiniLM-L6-v2";

struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    fn unit_vector(&mut self) -> Vec<f32> {
        let mut v: Vec<f32> = (0..DIM)
            .map(|_| (self.next() % 2000) as f32 / 1000.0 - 1.0)
            .collect();
        normalize(&mut v);
        v
    }
}

fn main() -> BenchResult {
    let dir = tempfile::tempdir()?;
    let data = dir.path().join("data");
    build(&data.join("mnemo.db"))?;
    let keyword = time_search(dir.path(), &data)?;
    let models = data.join("models");
    std::fs::create_dir_all(&models)?;
    mnemo::memory::local_embed::install_from(
        &embed_support::model_dir()?,
        &models.join("all-MiniLM-L6-v2"),
    )?;
    let meaning = time_search(dir.path(), &data)?;
    println!(
        "mnemo memory search, whole process, {ENTRIES} entries x {PIECES_PER_ENTRY} pieces: \
         keyword only p50 {:.1} ms; with the built-in model (loaded by the process, query \
         embedded, pieces loaded) p50 {:.1} ms (target < 20 ms)",
        ms(keyword.0),
        ms(meaning.0)
    );
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?;
    let served = runtime.block_on(through_the_daemon(dir.path(), &data))?;
    if served.1 != meaning.1 {
        return Err(format!(
            "the daemon answered otherwise:\n{}\n---\n{}",
            served.1, meaning.1
        )
        .into());
    }
    println!(
        "mnemo memory search with mnemo serve running (its model loaded), whole process: \
         p50 {:.1} ms (target < 20 ms)",
        ms(served.0)
    );
    asking_costs(&data);
    index_memory();
    Ok(())
}

/// `time_search` with `mnemo serve` running on `data`, warmed by one search; prints the
/// daemon's resident memory before and after its first search.
async fn through_the_daemon(dir: &Path, data: &Path) -> BenchResult<(Duration, String)> {
    let daemon = support::Daemon::start(dir, "", &serde_json::json!({"turns": []}), &[]).await?;
    if daemon.data != data {
        return Err("the daemon runs on another data directory".into());
    }
    // Its start embeds what has no vectors, with a model loaded for that round only, and 5 s
    // later it hands back what start-up touched (`serve::idle`).
    tokio::time::sleep(Duration::from_secs(7)).await;
    let idle = daemon.rss_mib()?;
    let (dir, data_dir) = (dir.to_path_buf(), data.to_path_buf());
    let timed = tokio::task::spawn_blocking(move || -> Result<_, String> {
        let warm = search_once(&dir, &data_dir).map_err(|e| e.to_string())?;
        Ok((
            warm,
            time_search(&dir, &data_dir).map_err(|e| e.to_string())?,
        ))
    });
    let (warm_out, timed) = timed.await??;
    let searched = daemon.rss_mib()?;
    daemon.stop()?;
    if warm_out != timed.1 {
        return Err("the warming search printed otherwise".into());
    }
    println!(
        "mnemo serve resident: {idle:.1} MiB idle before its first search, {searched:.1} MiB \
         with the model and the piece index loaded after {} searches",
        RUNS + 3
    );
    Ok(timed)
}

/// What asking whether a daemon runs costs `mnemo memory search` when none does (the lock
/// file left by one that stopped).
fn asking_costs(data: &Path) {
    const CHECKS: u32 = 10_000;
    let started = Instant::now();
    for _ in 0..CHECKS {
        std::hint::black_box(mnemo::host::daemon::serve_running(data));
    }
    println!(
        "asking whether mnemo serve runs, none running: {:.1} us",
        started.elapsed().as_secs_f64() * 1e6 / f64::from(CHECKS)
    );
}

fn build(path: &Path) -> BenchResult {
    let mut rng = Rng(7);
    let mut db = Db::open(path)?;
    let started = Instant::now();
    for chunk in 0..ENTRIES / 1000 {
        let session = format!("s{chunk}");
        db.create_session(NewSession {
            id: session.clone(),
            parent_id: None,
            cwd: "/ws".into(),
            model: "m".into(),
            title: String::new(),
        })?;
        let entries: Vec<NewArchiveEntry> = (0..1000)
            .map(|i| {
                let n = chunk * 1000 + i;
                let text = format!("request {n} about service-{} and table t{}", n % 97, n % 13);
                NewArchiveEntry {
                    session_id: session.clone(),
                    topic: text.clone(),
                    summary: format!("Requests:\n- {text}"),
                    token_count: 100,
                    importance: 0.5,
                    first_seq: i as i64 * 2,
                    last_seq: i as i64 * 2 + 1,
                    started_at: n as i64,
                    ended_at: n as i64,
                    messages: vec![
                        Message::user_text(text),
                        Message::assistant(vec![ContentBlock::Text {
                            text: "Done.".into(),
                        }]),
                    ],
                }
            })
            .collect();
        for id in db.archive_many(&entries)? {
            let pieces: Vec<Vec<f32>> = (0..PIECES_PER_ENTRY).map(|_| rng.unit_vector()).collect();
            db.store_pieces(MODEL, (Source::Archive, id), &pieces)?;
        }
    }
    db.checkpoint()?;
    println!(
        "built {ENTRIES} entries with {} pieces in {:.1} s",
        ENTRIES * PIECES_PER_ENTRY,
        started.elapsed().as_secs_f64()
    );
    Ok(())
}

/// The median wall time of `mnemo memory search` in `cwd` with the data directory `data`,
/// and what it printed.
fn time_search(cwd: &Path, data: &Path) -> BenchResult<(Duration, String)> {
    let mut times = Vec::with_capacity(RUNS);
    let mut printed = String::new();
    for run in 0..RUNS + 2 {
        let started = Instant::now();
        printed = search_once(cwd, data)?;
        if run >= 2 {
            times.push(started.elapsed());
        }
    }
    times.sort();
    Ok((support::percentile(&times, 0.5), printed))
}

/// One `mnemo memory search` (the config in `cwd/cfg`, where the daemon has its own).
fn search_once(cwd: &Path, data: &Path) -> BenchResult<String> {
    let out = Command::new(env!("CARGO_BIN_EXE_mnemo"))
        .args([
            "memory", "search", "which", "service", "handles", "table", "t7",
        ])
        .current_dir(cwd)
        .env("MNEMO_DATA_DIR", data)
        .env("MNEMO_CONFIG_DIR", cwd.join("cfg"))
        .output()?;
    if !out.status.success() {
        return Err(String::from_utf8_lossy(&out.stderr).into_owned().into());
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// The piece index's own memory for 100,000 pieces of 384 dimensions.
fn index_memory() {
    let mut rng = Rng(11);
    let mut index = PieceIndex::new(MODEL, DIM);
    for row in 1..=100_000 {
        index.push(row, (Source::Archive, row / 3), &rng.unit_vector());
    }
    println!(
        "vectors of 100,000 pieces in memory: {:.1} MiB (target < 100 MiB)",
        index.memory_bytes() as f64 / (1024.0 * 1024.0)
    );
    let query = rng.unit_vector();
    let mut times: Vec<Duration> = (0..RUNS)
        .map(|_| {
            let started = Instant::now();
            std::hint::black_box(index.best(&query, 40));
            started.elapsed()
        })
        .collect();
    times.sort();
    println!(
        "scan of 100,000 pieces for the 40 best entries: p50 {:.2} ms",
        ms(support::percentile(&times, 0.5))
    );
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}
