//! Context benchmarks (`cargo bench --bench context`), printed as figures: token estimation
//! throughput over ~20 MB of mixed realistic text (the crate's own code, its prose, tool-call
//! JSON), cold and warm, against exact tiktoken, with the estimate's error.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use mnemo::llm::tokens::{estimate_text, wait_ready, warm_up};
use serde_json::json;

const TARGET_BYTES: usize = 20 << 20;
const EXACT_BYTES: usize = 4 << 20;

#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    Code,
    Prose,
    Json,
}

struct Document {
    kind: Kind,
    text: String,
}

fn main() {
    println!("mnemo context benchmarks");
    let started = Instant::now();
    warm_up();
    let ready = wait_ready();
    println!(
        "  tokenizer load (background thread): {:.0} ms{}",
        ms(started.elapsed()),
        if ready {
            ""
        } else {
            " — FAILED, heuristic only"
        }
    );

    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let (unique, corpus) = corpus(root);
    let bytes: usize = corpus.iter().map(|d| d.text.len()).sum();
    println!(
        "  corpus: {:.1} MB in {} documents ({:.1} MB unique)",
        mb(bytes),
        corpus.len(),
        mb(unique.iter().map(|d| d.text.len()).sum())
    );

    let (cold, tokens) = pass(&corpus);
    println!(
        "  estimate_text, cold first pass (empty cache): {:.1} MB/s ({} tokens)",
        mb(bytes) / cold.as_secs_f64(),
        tokens
    );
    let warm = (0..3).map(|_| pass(&corpus).0).min().unwrap_or(cold);
    println!(
        "  estimate_text, warm: {:.1} MB/s (target > 50 MB/s)",
        mb(bytes) / warm.as_secs_f64()
    );

    let Ok(bpe) = tiktoken_rs::o200k_base() else {
        println!("  exact tiktoken: could not load o200k_base");
        return;
    };
    let mut exact_bytes = 0;
    let start = Instant::now();
    for document in &corpus {
        if exact_bytes >= EXACT_BYTES {
            break;
        }
        std::hint::black_box(bpe.encode_ordinary(&document.text).len());
        exact_bytes += document.text.len();
    }
    println!(
        "  exact tiktoken encode_ordinary: {:.1} MB/s",
        mb(exact_bytes) / start.elapsed().as_secs_f64()
    );

    for (label, kind) in [
        ("all", None),
        ("code", Some(Kind::Code)),
        ("prose", Some(Kind::Prose)),
        ("json", Some(Kind::Json)),
    ] {
        let documents: Vec<&Document> = unique
            .iter()
            .filter(|d| kind.is_none_or(|k| d.kind == k))
            .collect();
        let mut sum_error = 0.0;
        let mut worst: f64 = 0.0;
        let (mut estimated, mut exact) = (0u64, 0u64);
        for document in &documents {
            let e = u64::from(estimate_text(&document.text));
            let x = bpe.encode_ordinary(&document.text).len() as u64;
            let error = e.abs_diff(x) as f64 / x.max(1) as f64;
            sum_error += error;
            worst = worst.max(error);
            estimated += e;
            exact += x;
        }
        println!(
            "  error vs exact, {label} ({} documents): mean {:.2} %, worst {:.2} %, total {:+.3} %",
            documents.len(),
            100.0 * sum_error / documents.len().max(1) as f64,
            100.0 * worst,
            100.0 * (estimated as f64 - exact as f64) / exact.max(1) as f64
        );
    }
}

/// Estimates every document once; the time taken and the tokens counted.
fn pass(corpus: &[Document]) -> (Duration, u64) {
    let start = Instant::now();
    let tokens = corpus
        .iter()
        .map(|d| u64::from(estimate_text(std::hint::black_box(&d.text))))
        .sum();
    (start.elapsed(), tokens)
}

/// One copy of every document, and the documents repeated (JSON regenerated with fresh ids and
/// numbers each round) up to the target size.
fn corpus(root: &Path) -> (Vec<Document>, Vec<Document>) {
    let mut files = Vec::new();
    for dir in ["src", "tests", "benches"] {
        rust_files(&root.join(dir), &mut files);
    }
    files.sort();
    let sources: Vec<(String, String)> = files
        .iter()
        .filter_map(|path| {
            let text = std::fs::read_to_string(path).ok()?;
            let name = path
                .strip_prefix(root)
                .unwrap_or(path)
                .display()
                .to_string();
            Some((name, text))
        })
        .collect();

    let mut unique: Vec<Document> = Vec::new();
    for (_, text) in &sources {
        unique.push(Document {
            kind: Kind::Code,
            text: text.clone(),
        });
        let prose = doc_comments(text);
        if !prose.is_empty() {
            unique.push(Document {
                kind: Kind::Prose,
                text: prose,
            });
        }
    }
    for name in [
        "README.md",
        "assets/compressor.md",
        "assets/constitution.md",
    ] {
        if let Ok(text) = std::fs::read_to_string(root.join(name)) {
            unique.push(Document {
                kind: Kind::Prose,
                text,
            });
        }
    }
    let mut rng = fastrand::Rng::with_seed(7);
    unique.extend(json_documents(&sources, &mut rng));

    let mut corpus: Vec<Document> = Vec::new();
    let mut size = 0;
    while size < TARGET_BYTES {
        let round = if corpus.is_empty() {
            unique
                .iter()
                .map(|d| Document {
                    kind: d.kind,
                    text: d.text.clone(),
                })
                .collect()
        } else {
            let mut round: Vec<Document> = unique
                .iter()
                .filter(|d| d.kind != Kind::Json)
                .map(|d| Document {
                    kind: d.kind,
                    text: d.text.clone(),
                })
                .collect();
            round.extend(json_documents(&sources, &mut rng));
            round
        };
        size += round.iter().map(|d| d.text.len()).sum::<usize>();
        corpus.extend(round);
    }
    (unique, corpus)
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// The English in a source file: its doc comments, as paragraphs.
fn doc_comments(source: &str) -> String {
    let mut prose = String::new();
    for line in source.lines() {
        let line = line.trim_start();
        match line
            .strip_prefix("//!")
            .or_else(|| line.strip_prefix("///"))
        {
            Some(text) => {
                prose.push_str(text.trim());
                prose.push(' ');
            }
            None if prose.ends_with(' ') => {
                prose.pop();
                prose.push_str("\n\n");
            }
            None => {}
        }
    }
    prose
}

/// Tool calls and results as a model sees them: reads, searches and shell runs, with ids,
/// hashes and numbers that differ every time.
fn json_documents(sources: &[(String, String)], rng: &mut fastrand::Rng) -> Vec<Document> {
    let mut documents = Vec::new();
    for (name, text) in sources {
        let lines: Vec<&str> = text.lines().collect();
        let from = rng.usize(..lines.len().max(1));
        let to = (from + 40).min(lines.len());
        let excerpt = lines.get(from..to).unwrap_or_default().join("\n");
        let id: String = (0..24).map(|_| rng.alphanumeric()).collect();
        let sha: String = (0..40)
            .map(|_| char::from_digit(rng.u32(..16), 16).unwrap_or('0'))
            .collect();
        let call = json!({
            "type": "tool_use",
            "id": format!("toolu_{id}"),
            "name": "read_file",
            "input": { "path": name, "offset": from, "limit": 40 },
        });
        let result = json!({
            "type": "tool_result",
            "tool_use_id": format!("toolu_{id}"),
            "content": { "path": name, "sha": sha, "lines": [from + 1, to], "text": excerpt },
        });
        let matches: Vec<_> = lines
            .iter()
            .enumerate()
            .filter(|(_, line)| line.contains("fn "))
            .take(12)
            .map(|(number, line)| json!({ "line": number + 1, "text": line.trim() }))
            .collect();
        let search = json!({
            "tool": "grep",
            "pattern": "fn ",
            "elapsed_ms": rng.u32(1..500),
            "matches": [{ "path": name, "hits": matches }],
            "exit": { "code": 0, "duration": rng.f64() * 3.0 },
        });
        for value in [call, result, search] {
            let text = if rng.bool() {
                serde_json::to_string_pretty(&value)
            } else {
                serde_json::to_string(&value)
            };
            if let Ok(text) = text {
                documents.push(Document {
                    kind: Kind::Json,
                    text,
                });
            }
        }
    }
    documents
}

fn mb(bytes: usize) -> f64 {
    bytes as f64 / (1 << 20) as f64
}

fn ms(duration: Duration) -> f64 {
    duration.as_secs_f64() * 1000.0
}
