//! Recall through the whole process (`cargo bench --bench recall`): `mnemo memory search`
//! over 20,000 archive entries of three embedded pieces each, with the built-in model (the
//! query embedded in-process, the model loaded by the process) and by keyword only; and the
//! memory the piece index of 100,000 pieces takes. Prints figures with their targets.

#[path = "../tests/embed_support/mod.rs"]
mod embed_support;

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
        ms(keyword),
        ms(meaning)
    );
    index_memory();
    Ok(())
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

/// The median wall time of `mnemo memory search` in `cwd` with the data directory `data`.
fn time_search(cwd: &Path, data: &Path) -> BenchResult<Duration> {
    let mut times = Vec::with_capacity(RUNS);
    for run in 0..RUNS + 2 {
        let started = Instant::now();
        let out = Command::new(env!("CARGO_BIN_EXE_mnemo"))
            .args([
                "memory", "search", "which", "service", "handles", "table", "t7",
            ])
            .current_dir(cwd)
            .env("MNEMO_DATA_DIR", data)
            .env("MNEMO_CONFIG_DIR", cwd.join("config"))
            .output()?;
        if !out.status.success() {
            return Err(String::from_utf8_lossy(&out.stderr).into_owned().into());
        }
        if run >= 2 {
            times.push(started.elapsed());
        }
    }
    times.sort();
    Ok(times[times.len() / 2])
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
        ms(times[RUNS / 2])
    );
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}
