//! Store benchmarks for the memory issue, printed as figures with their targets
//! (`cargo bench --bench memory`): archive search over 100,000 entries (keyword and hybrid),
//! resume of a 10,000-message session, batched message insert throughput and database size.

use mnemo::memory::recall::RecallScope;
use std::error::Error;
use std::path::Path;
use std::time::{Duration, Instant};

use mnemo::llm::{ContentBlock, Message, Role, Usage};
use mnemo::memory::piece_index::Source;
use mnemo::memory::{Db, NewArchiveEntry, NewSession, Scope, TurnRecord};
use mnemo::protocol::TurnStatus;
use serde_json::json;

type BenchResult<T = ()> = Result<T, Box<dyn Error>>;

const ARCHIVE_ENTRIES: usize = 100_000;
const ENTRIES_PER_SESSION: usize = 100;
const BUILD_BATCH: usize = 1_000;
const DIM: usize = 384;
const MODEL: &str = "bench:random";
const QUERIES: usize = 300;
const RESUME_MESSAGES: i64 = 10_000;
const RESUME_ACTIVE: i64 = 200;
const RESUME_ENTRY_MESSAGES: i64 = 50;
const INSERT_MESSAGES: i64 = 20_000;
const INSERT_BATCH: usize = 100;

fn main() -> BenchResult {
    println!("mnemo memory benchmarks");
    let dir = tempfile::tempdir()?;
    let words = Words::new();
    archive_search(&dir.path().join("archive.db"), &words)?;
    resume(&dir.path().join("resume.db"), &words)?;
    insert_throughput(&dir.path().join("insert.db"), &words)?;
    Ok(())
}

/// SplitMix64: small, fast and reproducible.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    fn unit(&mut self) -> f64 {
        (self.next() >> 11) as f64 / (1u64 << 53) as f64
    }

    fn range(&mut self, low: usize, high: usize) -> usize {
        low + (self.next() % (high - low + 1) as u64) as usize
    }
}

/// A vocabulary of 4,000 words (English function words, common technical words, then
/// synthetic ones) drawn with a Zipf distribution (s = 1), like words in real text.
struct Words {
    words: Vec<String>,
    cumulative: Vec<f64>,
}

const COMMON: &str = "the of and to a in is it that for on with as was this be at by not \
    are from or have an but we you they which one all were there can if will so what about \
    when would my into has more no some out them than then its only also just how could now";

const TECHNICAL: &str = "file error build test config server deploy docker nginx database \
    migration index query cache redis postgres sqlite schema table column user session token \
    request response header status timeout retry network port socket thread async runtime \
    memory leak crash panic log trace debug release version branch commit merge rebase diff \
    patch review pipeline workflow runner artifact package crate module function method struct \
    enum trait macro closure iterator vector string buffer stream channel lock mutex queue \
    worker cluster node pod service ingress volume secret certificate tls proxy upstream route \
    handler middleware auth password permission sandbox shell command script terminal cursor \
    render widget layout theme font color scroll input output parser lexer token grammar ast \
    compiler linker binary target profile benchmark latency throughput metric alert dashboard \
    backup restore snapshot replica shard partition compaction archive embedding vector search \
    ranking summary topic importance prompt model provider api key quota billing invoice";

impl Words {
    fn new() -> Words {
        let mut words: Vec<String> = COMMON.split_whitespace().map(str::to_owned).collect();
        words.extend(TECHNICAL.split_whitespace().map(str::to_owned));
        let syllables = [
            "ka", "lo", "mi", "ren", "tu", "sa", "vor", "pe", "dri", "no", "gal", "xi",
        ];
        let mut rng = Rng(7);
        while words.len() < 4_000 {
            let parts = rng.range(2, 4);
            let word: String = (0..parts)
                .map(|_| syllables[rng.range(0, syllables.len() - 1)])
                .collect();
            if !words.contains(&word) {
                words.push(word);
            }
        }
        let mut total = 0.0;
        let cumulative = (1..=words.len())
            .map(|rank| {
                total += 1.0 / rank as f64;
                total
            })
            .collect();
        Words { words, cumulative }
    }

    fn pick(&self, rng: &mut Rng) -> &str {
        let total = self.cumulative.last().copied().unwrap_or(1.0);
        let target = rng.unit() * total;
        let index = self.cumulative.partition_point(|&c| c < target);
        &self.words[index.min(self.words.len() - 1)]
    }

    /// Between `low` and `high` words, with a sentence break now and then.
    fn text(&self, rng: &mut Rng, low: usize, high: usize) -> String {
        let count = rng.range(low, high);
        let mut out = String::new();
        for i in 0..count {
            if i > 0 {
                out.push_str(if i % 13 == 0 { ". " } else { " " });
            }
            out.push_str(self.pick(rng));
        }
        out
    }
}

fn unit_vector(rng: &mut Rng) -> Vec<f32> {
    let mut v: Vec<f32> = (0..DIM).map(|_| (rng.unit() * 2.0 - 1.0) as f32).collect();
    let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt();
    v.iter_mut().for_each(|x| *x /= norm);
    v
}

fn session(id: &str) -> NewSession {
    NewSession {
        id: id.to_owned(),
        parent_id: None,
        cwd: "/work/project".to_owned(),
        model: "bench-model".to_owned(),
        title: format!("session {id}"),
    }
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    let index = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted.get(index).copied().unwrap_or_default()
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

fn archive_search(path: &Path, words: &Words) -> BenchResult {
    let mut rng = Rng(42);
    let mut db = Db::open(path)?;
    let start = Instant::now();
    let mut written = 0;
    while written < ARCHIVE_ENTRIES {
        let batch: Vec<NewArchiveEntry> = (written..written + BUILD_BATCH)
            .map(|i| {
                let session_id = format!("s{}", i / ENTRIES_PER_SESSION);
                let topic = words.text(&mut rng, 4, 10);
                let summary = words.text(&mut rng, 15, 35);
                let body = words.text(&mut rng, 150, 350);
                let token_count = body.len() as u64 / 4;
                let seq = (i % ENTRIES_PER_SESSION) as i64 * 50;
                NewArchiveEntry {
                    session_id,
                    topic: topic.clone(),
                    summary,
                    messages: vec![
                        Message::user_text(topic),
                        Message::assistant(vec![ContentBlock::Text { text: body }]),
                    ],
                    token_count,
                    importance: 0.5 + rng.unit() * 0.5,
                    first_seq: seq,
                    last_seq: seq + 49,
                    started_at: i as i64 * 1000,
                    ended_at: i as i64 * 1000 + 500,
                }
            })
            .collect();
        if written % (ENTRIES_PER_SESSION * 10) == 0 {
            for s in written / ENTRIES_PER_SESSION..(written + BUILD_BATCH) / ENTRIES_PER_SESSION {
                db.create_session(session(&format!("s{s}")))?;
            }
        }
        let ids = db.archive_many(&batch)?;
        for id in ids {
            let pieces = [unit_vector(&mut rng)];
            db.store_pieces(MODEL, (Source::Archive, id), &pieces)?;
        }
        written += BUILD_BATCH;
    }
    db.checkpoint()?;
    let size = std::fs::metadata(path)?.len();
    println!(
        "archive build: {ARCHIVE_ENTRIES} entries (bodies 150-350 words, {DIM}-dim embeddings) \
         in {:.1} s, file {:.0} MB",
        start.elapsed().as_secs_f64(),
        size as f64 / 1e6
    );
    drop(db);

    let mut db = Db::open(path)?;
    let queries: Vec<String> = (0..QUERIES).map(|_| words.text(&mut rng, 1, 3)).collect();
    let mut keyword = Vec::with_capacity(QUERIES);
    let mut empty = 0;
    for query in &queries {
        let start = Instant::now();
        let hits = db.recall(query, None, &RecallScope::everywhere(), 10)?;
        keyword.push(start.elapsed());
        empty += usize::from(hits.is_empty());
    }
    keyword.sort();
    println!(
        "keyword search ({QUERIES} queries of 1-3 words, {empty} without hits): \
         p50 {:.2} ms (target < 5), p99 {:.2} ms (target < 20), max {:.2} ms",
        ms(percentile(&keyword, 0.5)),
        ms(percentile(&keyword, 0.99)),
        ms(percentile(&keyword, 1.0))
    );

    let first_query = unit_vector(&mut rng);
    let start = Instant::now();
    db.recall(
        &queries[0],
        Some((MODEL, &first_query)),
        &RecallScope::everywhere(),
        10,
    )?;
    println!(
        "first hybrid search (loads {ARCHIVE_ENTRIES} pieces' vectors into memory): {:.0} ms; \
         they take {:.1} MiB (target < 100 MiB for 100,000 pieces)",
        ms(start.elapsed()),
        db.piece_index_bytes() as f64 / (1024.0 * 1024.0)
    );
    let mut hybrid = Vec::with_capacity(QUERIES);
    for query in &queries {
        let embedding = unit_vector(&mut rng);
        let start = Instant::now();
        db.recall(
            query,
            Some((MODEL, &embedding)),
            &RecallScope::everywhere(),
            10,
        )?;
        hybrid.push(start.elapsed());
    }
    hybrid.sort();
    println!(
        "hybrid search ({DIM} dims): p50 {:.2} ms (target < 30), p99 {:.2} ms",
        ms(percentile(&hybrid, 0.5)),
        ms(percentile(&hybrid, 0.99))
    );
    Ok(())
}

/// One message of a realistic working session: requests, tool calls, tool output, answers.
fn session_message(words: &Words, rng: &mut Rng, seq: i64) -> Message {
    match seq % 4 {
        0 => Message::user_text(words.text(rng, 10, 60)),
        1 => Message::assistant(vec![
            ContentBlock::Text {
                text: words.text(rng, 10, 40),
            },
            ContentBlock::ToolUse {
                id: format!("call_{seq}"),
                name: "fs_read".to_owned(),
                input: json!({"path": format!("src/{}.rs", words.pick(rng))}),
            },
        ]),
        2 => Message {
            role: Role::User,
            content: vec![ContentBlock::ToolResult {
                tool_use_id: format!("call_{}", seq - 1),
                content: words.text(rng, 100, 400),
                is_error: false,
            }],
        },
        _ => Message::assistant(vec![ContentBlock::Text {
            text: words.text(rng, 30, 150),
        }]),
    }
}

fn resume(path: &Path, words: &Words) -> BenchResult {
    let mut rng = Rng(9);
    {
        let mut db = Db::open(path)?;
        db.create_session(session("resume"))?;
        let messages: Vec<Message> = (1..=RESUME_MESSAGES)
            .map(|seq| session_message(words, &mut rng, seq))
            .collect();
        for (chunk_index, chunk) in messages.chunks(INSERT_BATCH).enumerate() {
            let first = chunk_index as i64 * INSERT_BATCH as i64 + 1;
            let batch: Vec<(i64, &Message, u32)> =
                (first..).zip(chunk).map(|(seq, m)| (seq, m, 100)).collect();
            db.append_messages("resume", &batch)?;
        }
        let archived = RESUME_MESSAGES - RESUME_ACTIVE;
        for first in (1..=archived).step_by(RESUME_ENTRY_MESSAGES as usize) {
            let last = (first + RESUME_ENTRY_MESSAGES - 1).min(archived);
            let stretch = &messages[(first - 1) as usize..last as usize];
            let (topic, summary) = mnemo::memory::mechanical_summary(stretch);
            let topic = topic.unwrap_or_else(|| "untitled stretch".to_owned());
            db.archive_messages(NewArchiveEntry {
                session_id: "resume".to_owned(),
                topic,
                summary,
                messages: stretch.to_vec(),
                token_count: 5_000,
                importance: mnemo::memory::importance(stretch),
                first_seq: first,
                last_seq: last,
                started_at: first,
                ended_at: last,
            })?;
        }
        for turn in 1..=RESUME_MESSAGES as u64 / 4 {
            db.finish_turn(&TurnRecord {
                session_id: "resume".to_owned(),
                turn,
                status: TurnStatus::Completed,
                started_at: 0,
                finished_at: 1,
                usage: Usage {
                    input_tokens: 5_000,
                    output_tokens: 300,
                    cache_read_tokens: 4_000,
                    cache_write_tokens: 100,
                },
                cost_usd: 0.01,
                report: Some(json!({"topic": "bench", "summary": "a turn"})),
            })?;
        }
        for i in 0..30 {
            let scope = if i % 2 == 0 {
                Scope::Global
            } else {
                Scope::Project("/work/project".to_owned())
            };
            db.remember(&words.text(&mut rng, 8, 16), &scope, "user")?;
        }
        db.checkpoint()?;
    }
    let mut times = Vec::new();
    let mut active = 0;
    for _ in 0..30 {
        let start = Instant::now();
        let mut db = Db::open(path)?;
        let row = db.session("resume")?;
        db.mark_running_turns_killed(&row.id)?;
        active = db.active_messages(&row.id)?.len();
        let _totals = db.session_totals(&row.id)?;
        let _max = db.max_seq(&row.id)?;
        let _experiences = db.experiences(Some("/work/project"))?;
        times.push(start.elapsed());
    }
    times.sort();
    println!(
        "resume of a {RESUME_MESSAGES}-message session ({active} active, the rest in entries of \
         {RESUME_ENTRY_MESSAGES}): median {:.2} ms (target < 100), max {:.2} ms",
        ms(percentile(&times, 0.5)),
        ms(percentile(&times, 1.0))
    );
    Ok(())
}

fn insert_throughput(path: &Path, words: &Words) -> BenchResult {
    let mut rng = Rng(11);
    let messages: Vec<Message> = (1..=INSERT_MESSAGES)
        .map(|seq| session_message(words, &mut rng, seq))
        .collect();
    let bytes: usize = messages
        .iter()
        .map(|m| serde_json::to_string(&m.content).map_or(0, |s| s.len()))
        .sum();
    let mut db = Db::open(path)?;
    db.create_session(session("insert"))?;
    let start = Instant::now();
    for (chunk_index, chunk) in messages.chunks(INSERT_BATCH).enumerate() {
        let first = chunk_index as i64 * INSERT_BATCH as i64 + 1;
        let batch: Vec<(i64, &Message, u32)> =
            (first..).zip(chunk).map(|(seq, m)| (seq, m, 100)).collect();
        db.append_messages("insert", &batch)?;
    }
    let elapsed = start.elapsed();
    db.checkpoint()?;
    let size = std::fs::metadata(path)?.len();
    println!(
        "batched insert ({INSERT_MESSAGES} messages in batches of {INSERT_BATCH}, mean {} bytes \
         of JSON each): {:.0} messages/s (target > 20,000)",
        bytes / INSERT_MESSAGES as usize,
        INSERT_MESSAGES as f64 / elapsed.as_secs_f64()
    );
    println!(
        "database size: {:.0} KB per 1,000 messages",
        size as f64 / 1024.0 / (INSERT_MESSAGES as f64 / 1000.0)
    );
    Ok(())
}
