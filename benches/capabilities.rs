//! Capability store benchmarks, printed as figures with their targets
//! (`cargo bench --bench capabilities`): building 10,000 capabilities (some with several
//! versions), then search by keywords and hybrid (keywords and embeddings), the answer to a
//! query without words and the full list. Each figure is one small function of `main`.

use std::error::Error;
use std::path::Path;
use std::time::{Duration, Instant};

use fastrand::Rng;
use mnemo::memory::{Db, NewCapability};
use serde_json::json;

type BenchResult<T = ()> = Result<T, Box<dyn Error>>;

const CAPABILITIES: usize = 10_000;
const QUERIES: usize = 200;
const LIMIT: usize = 10;
const DIM: usize = 384;

const VERBS: &[&str] = &[
    "convert",
    "hash",
    "parse",
    "fetch",
    "resize",
    "compress",
    "extract",
    "validate",
    "format",
    "lint",
    "count",
    "list",
    "search",
    "deploy",
    "backup",
    "restore",
    "sync",
    "download",
    "upload",
    "render",
    "encode",
    "decode",
    "encrypt",
    "sign",
    "diff",
    "merge",
    "split",
    "sort",
    "filter",
    "summarize",
    "check",
    "scan",
    "watch",
    "notify",
    "benchmark",
    "profile",
    "migrate",
    "generate",
    "clean",
    "rotate",
];

const OBJECTS: &[&str] = &[
    "csv",
    "json",
    "yaml",
    "toml",
    "xml",
    "image",
    "pdf",
    "log",
    "commit",
    "branch",
    "file",
    "directory",
    "archive",
    "url",
    "page",
    "table",
    "database",
    "schema",
    "container",
    "pod",
    "certificate",
    "secret",
    "token",
    "config",
    "package",
    "dependency",
    "test",
    "coverage",
    "metric",
    "alert",
    "email",
    "calendar",
    "invoice",
    "report",
    "markdown",
    "html",
    "video",
    "audio",
    "font",
    "icon",
    "sitemap",
    "snapshot",
    "queue",
    "cron",
    "dns",
    "port",
    "process",
    "memory",
    "disk",
    "network",
    "user",
    "permission",
    "changelog",
    "release",
    "tag",
    "issue",
    "sha256",
    "thumbnail",
    "migration",
    "index",
];

const QUALIFIERS: &[&str] = &[
    "fast",
    "recursive",
    "incremental",
    "parallel",
    "remote",
    "local",
    "batch",
    "streaming",
    "git",
    "s3",
    "ssh",
    "http",
    "docker",
    "kubernetes",
    "postgres",
    "sqlite",
    "redis",
    "nginx",
    "utf8",
    "gzip",
];

const FILLER: &[&str] = &[
    "the", "a", "to", "and", "of", "with", "for", "in", "from", "into", "each", "every", "only",
    "when", "output", "input", "path", "name", "result", "error", "prints", "returns", "writes",
    "reads", "keeps", "skips", "lines", "rows", "bytes", "size", "header", "keys", "values",
    "latest", "old", "new", "missing", "changed", "summary", "count", "list", "hex", "digest",
];

fn main() -> BenchResult {
    println!("mnemo capability benchmarks");
    let dir = tempfile::tempdir()?;
    let mut rng = Rng::with_seed(42);
    let path = dir.path().join("capabilities.db");
    build(&path, &mut rng)?;
    let db = Db::open(&path)?;
    let queries: Vec<String> = (0..QUERIES).map(|i| query(&mut rng, i)).collect();
    keyword_search(&db, &queries)?;
    hybrid_search(&db, &queries, &mut rng)?;
    blank_search(&db)?;
    list_all(&db)?;
    Ok(())
}

fn pick<'a>(rng: &mut Rng, words: &[&'a str]) -> &'a str {
    words[rng.usize(..words.len())]
}

/// A word of `first` or of `second`, each list as likely.
fn pick_either<'a>(rng: &mut Rng, first: &[&'a str], second: &[&'a str]) -> &'a str {
    let words = if rng.bool() { first } else { second };
    pick(rng, words)
}

fn unit_vector(rng: &mut Rng) -> Vec<f32> {
    let mut v: Vec<f32> = (0..DIM).map(|_| rng.f32() * 2.0 - 1.0).collect();
    let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt();
    v.iter_mut().for_each(|x| *x /= norm);
    v
}

/// A sentence like a model writes one: "Compress a log file for remote backups, keeps ...".
fn description(rng: &mut Rng, verb: &str, object: &str) -> String {
    let mut text = format!("{verb} a {object} {}", pick(rng, QUALIFIERS));
    for _ in 0..rng.usize(6..=18) {
        text.push(' ');
        text.push_str(pick_either(rng, FILLER, OBJECTS));
    }
    text
}

/// Capability `index`: a `verb-object[-qualifier]` name made unique by the index when needed.
fn capability(rng: &mut Rng, index: usize) -> NewCapability {
    let (verb, object) = (pick(rng, VERBS), pick(rng, OBJECTS));
    let name = match index % 3 {
        0 => format!("{verb}-{object}-{index}"),
        1 => format!("{verb}-{object}-{}-{index}", pick(rng, QUALIFIERS)),
        _ => format!("{verb}_{object}_{index}"),
    };
    let tags = (0..rng.usize(1..=4))
        .map(|_| pick_either(rng, OBJECTS, QUALIFIERS).to_owned())
        .collect();
    let code_lines = rng.usize(5..=60);
    NewCapability {
        name,
        description: description(rng, verb, object),
        tags,
        input_schema: json!({"type": "object", "properties": {"path": {"type": "string"}}}),
        language: ["bash", "python3", "node"][index % 3].to_owned(),
        code: format!("# {verb} {object}\n").repeat(code_lines),
        examples: vec![
            json!({"input": {"path": format!("in.{object}")}, "output": pick(rng, FILLER)}),
        ],
        session_id: Some(format!("s{}", index / 50)),
        turn: Some(rng.u64(1..40)),
        embedding: Some(unit_vector(rng)),
    }
}

/// Stores every capability (one in ten gets one or two more versions) and some uses.
fn build(path: &Path, rng: &mut Rng) -> BenchResult {
    let mut db = Db::open(path)?;
    let start = Instant::now();
    let mut versions = 0;
    for index in 0..CAPABILITIES {
        let new = capability(rng, index);
        let extra = if index % 10 == 0 { rng.usize(1..=2) } else { 0 };
        for _ in 0..extra {
            db.create_capability(new.clone())?;
        }
        let name = new.name.clone();
        db.create_capability(new)?;
        versions += extra + 1;
        for _ in 0..rng.usize(0..3) {
            db.touch_capability(&name)?;
        }
    }
    let elapsed = start.elapsed();
    db.checkpoint()?;
    println!(
        "build: {CAPABILITIES} capabilities ({versions} versions, {DIM}-dim embeddings) in \
         {:.1} s ({:.0} µs a version), file {:.0} MB",
        elapsed.as_secs_f64(),
        elapsed.as_secs_f64() * 1e6 / versions as f64,
        std::fs::metadata(path)?.len() as f64 / 1e6
    );
    Ok(())
}

/// Query `index`: a few words, a sentence with function words, or a name-like phrase.
fn query(rng: &mut Rng, index: usize) -> String {
    let (verb, object) = (pick(rng, VERBS), pick(rng, OBJECTS));
    match index % 4 {
        0 => format!("{verb} {object}"),
        1 => format!("{verb} {object} {}", pick(rng, QUALIFIERS)),
        2 => format!(
            "{verb} the {object} {} to {}",
            pick(rng, FILLER),
            pick(rng, OBJECTS)
        ),
        _ => format!("{verb}-{object}"),
    }
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    let index = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted.get(index).copied().unwrap_or_default()
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

/// Runs `search` once per query and returns the sorted times and how many found nothing.
fn timed(
    queries: &[String],
    mut search: impl FnMut(&str) -> BenchResult<usize>,
) -> BenchResult<(Vec<Duration>, usize)> {
    let mut times = Vec::with_capacity(queries.len());
    let mut empty = 0;
    for query in queries {
        let start = Instant::now();
        empty += usize::from(search(query)? == 0);
        times.push(start.elapsed());
    }
    times.sort();
    Ok((times, empty))
}

fn keyword_search(db: &Db, queries: &[String]) -> BenchResult {
    let (times, empty) = timed(queries, |q| {
        Ok(db.search_capabilities(q, None, LIMIT)?.len())
    })?;
    println!(
        "keyword search ({QUERIES} queries of 1-6 words, {empty} without hits): \
         p50 {:.2} ms (target < 5), p99 {:.2} ms, max {:.2} ms",
        ms(percentile(&times, 0.5)),
        ms(percentile(&times, 0.99)),
        ms(percentile(&times, 1.0))
    );
    Ok(())
}

fn hybrid_search(db: &Db, queries: &[String], rng: &mut Rng) -> BenchResult {
    let vectors: Vec<Vec<f32>> = queries.iter().map(|_| unit_vector(rng)).collect();
    let mut next = vectors.iter();
    let (times, _) = timed(queries, |q| {
        let vector = next.next().map(Vec::as_slice);
        Ok(db.search_capabilities(q, vector, LIMIT)?.len())
    })?;
    println!(
        "hybrid search ({DIM} dims, every capability embedded): p50 {:.2} ms, p99 {:.2} ms",
        ms(percentile(&times, 0.5)),
        ms(percentile(&times, 0.99))
    );
    Ok(())
}

fn blank_search(db: &Db) -> BenchResult {
    let blank = vec![String::new(); 20];
    let (times, _) = timed(&blank, |q| {
        Ok(db.search_capabilities(q, None, LIMIT)?.len())
    })?;
    println!(
        "query without words (most used {LIMIT}): p50 {:.2} ms",
        ms(percentile(&times, 0.5))
    );
    Ok(())
}

fn list_all(db: &Db) -> BenchResult {
    let start = Instant::now();
    let listed = db.list_capabilities()?.len();
    println!(
        "list of all {listed} capabilities (latest versions): {:.1} ms",
        ms(start.elapsed())
    );
    Ok(())
}
