//! Recall quality on a held-out set (`cargo bench --bench recall_quality`): the facts of
//! `tests/fixtures/recall/eval.json`, each told in a session of its own among unrelated
//! requests beside a near-duplicate distractor, archived as compaction archives them, then
//! asked with a shared rare word (keyword), in two paraphrases without a shared content word,
//! and with questions nothing answers. Only the test half is reported (`RECALL_SPLIT=tune`
//! prints the half meant for tuning), at 40 facts and at 2,000 archive entries, for mnemo's
//! ranking and for each signal alone, with the real all-MiniLM-L6-v2.

#[path = "../tests/suite/embed_support/mod.rs"]
mod embed_support;
#[path = "../tests/suite/recall_support/mod.rs"]
mod recall_support;

use std::error::Error;
use std::path::Path;

use mnemo::memory::embed::backfill::embed_pending;
use mnemo::memory::recall::RecallScope;
use mnemo::memory::{EmbeddingClient, Store, search_archive};
use recall_support::{archive_session, turn};
use serde::Deserialize;

type BenchResult<T = ()> = Result<T, Box<dyn Error>>;

#[derive(Deserialize)]
struct Set {
    facts: Vec<Fact>,
    no_answer: Vec<String>,
}

#[derive(Deserialize)]
struct Fact {
    said: String,
    keyword: String,
    paraphrases: Vec<String>,
    distractor: String,
    split: String,
}

/// How a question is ranked.
#[derive(Clone, Copy, PartialEq)]
enum Ranking {
    Mnemo,
    KeywordAlone,
    MeaningAlone,
}

const LARGE: usize = 2_000;

const SUBJECTS: [&str; 10] = [
    "the login form",
    "the billing page",
    "the search box",
    "the upload dialog",
    "the settings panel",
    "the export job",
    "the audit log",
    "the onboarding flow",
    "the chart widget",
    "the invite email",
];
const CHANGES: [&str; 10] = [
    "Make {} load faster",
    "Fix the layout of {} on small screens",
    "Add keyboard shortcuts to {}",
    "Translate {} into German",
    "Write unit tests for {}",
    "Remove the dead code around {}",
    "Log errors from {} more clearly",
    "Rename the functions behind {}",
    "Add a loading spinner to {}",
    "Refactor {} into smaller components",
];
const REPLIES: [&str; 4] = [
    "Done, the change is in place.",
    "Changed and checked by hand.",
    "Updated; the tests pass.",
    "Finished, nothing else was touched.",
];

/// An unrelated request, different for each `n` below 100 (and repeating its wording after).
fn filler(n: usize) -> (String, &'static str) {
    let subject = SUBJECTS[n % SUBJECTS.len()];
    let change = CHANGES[(n / SUBJECTS.len()) % CHANGES.len()];
    (change.replace("{}", subject), REPLIES[n % REPLIES.len()])
}

/// Archives one session of `said` between two unrelated requests; its entry id.
async fn plant_one(store: &Store, n: usize, said: Option<&str>) -> BenchResult<i64> {
    let mut messages = Vec::new();
    let (before, reply) = filler(n);
    messages.extend(turn(&before, reply));
    if let Some(said) = said {
        messages.extend(turn(
            &format!("Note for later: {said}"),
            "Noted, I will keep that in mind.",
        ));
    }
    let (after, reply) = filler(n + 37);
    messages.extend(turn(&after, reply));
    archive_session(store, n, messages).await
}

/// Plants `facts` (each with its distractor beside it) and unrelated sessions up to `total`
/// entries; the entry id of each fact.
async fn plant(store: &Store, facts: &[&Fact], total: usize) -> BenchResult<Vec<i64>> {
    let mut ids = Vec::with_capacity(facts.len());
    let mut n = 0;
    for fact in facts {
        ids.push(plant_one(store, n, Some(&fact.said)).await?);
        plant_one(store, n + 1, Some(&fact.distractor)).await?;
        n += 2;
    }
    while n < total {
        plant_one(store, n, None).await?;
        n += 1;
    }
    Ok(ids)
}

/// The entry ids `question` finds, best first.
async fn ask(
    store: &Store,
    embedder: &EmbeddingClient,
    ranking: Ranking,
    question: &str,
    limit: usize,
) -> BenchResult<Vec<i64>> {
    let found = match ranking {
        Ranking::Mnemo => {
            search_archive(
                store,
                Some(embedder),
                question,
                RecallScope::everywhere(),
                limit,
            )
            .await?
        }
        Ranking::KeywordAlone => {
            search_archive(store, None, question, RecallScope::everywhere(), limit).await?
        }
        Ranking::MeaningAlone => {
            let vector = embedder
                .embed(&[question.to_string()])
                .await?
                .pop()
                .ok_or("no embedding")?;
            let model = embedder.model_id();
            let hits = store
                .call(move |db| {
                    // No query words: the keyword signal is empty, meaning ranks alone.
                    let none = db.keyword_signals("", limit)?;
                    db.recall_with(
                        none,
                        Some((model.as_str(), vector.as_slice())),
                        &RecallScope::everywhere(),
                        limit,
                    )
                })
                .await?;
            return Ok(hits.iter().map(|h| h.id).collect());
        }
    };
    Ok(found.hits.iter().map(|h| h.id).collect())
}

/// recall@1, @3 and @10 of `questions` (each with the entry it should find).
async fn recall_at(
    store: &Store,
    embedder: &EmbeddingClient,
    ranking: Ranking,
    questions: &[(&str, i64)],
) -> BenchResult<[f64; 3]> {
    let mut hits = [0usize; 3];
    for (question, wanted) in questions {
        let found = ask(store, embedder, ranking, question, 10).await?;
        for (slot, k) in [1, 3, 10].into_iter().enumerate() {
            hits[slot] += usize::from(found.iter().take(k).any(|id| id == wanted));
        }
    }
    let n = questions.len().max(1) as f64;
    Ok(hits.map(|h| h as f64 / n))
}

/// The share of `questions` for which nothing is found in the first three places.
async fn nothing_found(
    store: &Store,
    embedder: &EmbeddingClient,
    ranking: Ranking,
    questions: &[String],
) -> BenchResult<f64> {
    let mut empty = 0;
    for question in questions {
        empty += usize::from(ask(store, embedder, ranking, question, 3).await?.is_empty());
    }
    Ok(empty as f64 / questions.len().max(1) as f64)
}

async fn measure(
    set: &Set,
    facts: &[&Fact],
    total: usize,
    embedder: &EmbeddingClient,
) -> BenchResult {
    let dir = tempfile::tempdir()?;
    let store = Store::open(&dir.path().join("mnemo.db"))?;
    let ids = plant(&store, facts, total).await?;
    let entries = total.max(facts.len() * 2);
    embed_pending(&store, embedder, |_, _| {}).await?;
    let keyword: Vec<(&str, i64)> = facts
        .iter()
        .zip(&ids)
        .map(|(f, id)| (f.keyword.as_str(), *id))
        .collect();
    let paraphrase: Vec<(&str, i64)> = facts
        .iter()
        .zip(&ids)
        .flat_map(|(f, id)| f.paraphrases.iter().map(move |p| (p.as_str(), *id)))
        .collect();
    println!(
        "\n{} facts with their distractors, {entries} archive entries (recall@1 / @3 / @10; \
         no answer: share of {} questions finding nothing):",
        facts.len(),
        set.no_answer.len()
    );
    for (label, ranking) in [
        ("mnemo's ranking", Ranking::Mnemo),
        ("keyword alone  ", Ranking::KeywordAlone),
        ("meaning alone  ", Ranking::MeaningAlone),
    ] {
        let k = recall_at(&store, embedder, ranking, &keyword).await?;
        let p = recall_at(&store, embedder, ranking, &paraphrase).await?;
        let none = nothing_found(&store, embedder, ranking, &set.no_answer).await?;
        println!(
            "  {label}  keyword {:.2} / {:.2} / {:.2}   paraphrase {:.2} / {:.2} / {:.2}   \
             no answer {none:.2}",
            k[0], k[1], k[2], p[0], p[1], p[2]
        );
    }
    Ok(())
}

fn main() -> BenchResult {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/recall/eval.json");
    let set: Set = serde_json::from_str(&std::fs::read_to_string(&path)?)?;
    let split = std::env::var("RECALL_SPLIT").unwrap_or_else(|_| "test".into());
    let half: Vec<&Fact> = set.facts.iter().filter(|f| f.split == split).collect();
    println!(
        "recall quality on the {split} half: {} of {} facts, all-MiniLM-L6-v2",
        half.len(),
        set.facts.len()
    );
    let embedder = EmbeddingClient::local(embed_support::model_dir()?);
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?;
    // `RECALL_LARGE=0` leaves out the 2,000-entry half of the run (for quick tuning rounds).
    let large = std::env::var("RECALL_LARGE").map_or(true, |v| v != "0");
    runtime.block_on(async {
        measure(&set, &half[..half.len().min(40)], 0, &embedder).await?;
        match large {
            true => measure(&set, &half, LARGE, &embedder).await,
            false => Ok(()),
        }
    })
}
