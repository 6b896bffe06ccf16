//! Skill benchmarks, printed as figures with their targets (`cargo bench --bench skills`):
//! what a session start pays to find 500 skills on disk (half the project's, half the
//! person's, each with a realistic SKILL.md and a resource) and build the catalogue for the
//! system prompt, within the budget of a 200k-token model (2 %) and a small one.

use std::error::Error;
use std::path::Path;
use std::time::{Duration, Instant};

use fastrand::Rng;
use mnemo::llm::tokens;
use mnemo::memory::skills::{SkillOrigin, SkillStats};
use mnemo::skills::{catalog, discover};

type BenchResult<T = ()> = Result<T, Box<dyn Error>>;

const SKILLS: usize = 500;
const RUNS: usize = 50;
/// 2 % of a 200k-token context window, the default budget.
const BUDGET: u32 = 4000;
/// A budget that fits only part of the catalogue.
const SMALL_BUDGET: u32 = 1000;

const VERBS: &[&str] = &[
    "deploy",
    "migrate",
    "release",
    "rotate",
    "backup",
    "restore",
    "profile",
    "lint",
    "bisect",
    "triage",
    "upgrade",
    "bootstrap",
    "package",
    "publish",
    "audit",
    "benchmark",
];
const OBJECTS: &[&str] = &[
    "staging",
    "database",
    "certificates",
    "logs",
    "containers",
    "changelog",
    "dependencies",
    "frontend",
    "api",
    "docs",
    "cluster",
    "fixtures",
    "schema",
    "cache",
    "queue",
    "secrets",
];
const WORDS: &[&str] = &[
    "with",
    "the",
    "project's",
    "scripts",
    "when",
    "asked",
    "to",
    "after",
    "a",
    "failed",
    "build",
    "using",
    "docker",
    "compose",
    "and",
    "checks",
    "that",
    "every",
    "step",
    "works",
];

fn pick<'a>(rng: &mut Rng, words: &[&'a str]) -> &'a str {
    words[rng.usize(..words.len())]
}

fn sentence(rng: &mut Rng, words: usize) -> String {
    let picked: Vec<&str> = (0..words).map(|_| pick(rng, WORDS)).collect();
    picked.join(" ")
}

/// `<root>/<name>/SKILL.md` of a typical size (frontmatter, a 40-line body) and a script.
fn write_skill(root: &Path, name: &str, rng: &mut Rng) -> BenchResult {
    let dir = root.join(name);
    std::fs::create_dir_all(dir.join("scripts"))?;
    let description = format!(
        "{} {}. Use when {}.",
        name.replace('-', " "),
        sentence(rng, 12),
        sentence(rng, 8)
    );
    let body: String = (1..=40)
        .map(|step| format!("{step}. {}\n", sentence(rng, 10)))
        .collect();
    std::fs::write(
        dir.join("SKILL.md"),
        format!(
            "---\nname: {name}\ndescription: {description}\nlicense: MIT\nmetadata:\n  \
             verify: scripts/check.sh\n  author: bench\n---\n\n# {name}\n\n{body}"
        ),
    )?;
    std::fs::write(dir.join("scripts/check.sh"), "#!/bin/sh\nexit 0\n")?;
    Ok(())
}

fn median(mut times: Vec<Duration>) -> Duration {
    times.sort();
    times[times.len() / 2]
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

fn main() -> BenchResult {
    println!("mnemo skill benchmarks");
    let dir = tempfile::tempdir()?;
    let workspace = dir.path().join("ws");
    let config = dir.path().join("config");
    let mut rng = Rng::with_seed(7);
    for index in 0..SKILLS {
        let name = format!(
            "{}-{}-{index}",
            pick(&mut rng, VERBS),
            pick(&mut rng, OBJECTS)
        );
        let root = match index % 2 {
            0 => workspace.join(".agents/skills"),
            _ => config.join("skills"),
        };
        write_skill(&root, &name, &mut rng)?;
    }
    let found = discover(&workspace, &config);
    if found.len() != SKILLS || !found.warnings().is_empty() {
        return Err(format!("found {} skills: {:?}", found.len(), found.warnings()).into());
    }
    let stats: Vec<SkillStats> = found
        .iter()
        .map(|skill| SkillStats {
            loads: rng.u64(0..20),
            last_used: Some(rng.i64(0..1_000_000)),
            pinned: rng.u8(..) < 8,
            suspect: rng.u8(..) < 8,
            stale: rng.u8(..) < 16,
            ..SkillStats::new(skill.name.clone(), SkillOrigin::Learned, 0)
        })
        .collect();
    // The tokenizer a session uses once loaded; the first estimates would use a heuristic.
    tokens::wait_ready();
    session_start(&workspace, &config, &stats, BUDGET)?;
    session_start(&workspace, &config, &stats, SMALL_BUDGET)?;
    Ok(())
}

/// Times discovery plus catalogue `RUNS` times and prints the medians.
fn session_start(
    workspace: &Path,
    config: &Path,
    stats: &[SkillStats],
    budget: u32,
) -> BenchResult {
    let mut totals = Vec::with_capacity(RUNS);
    let mut discovering = Vec::with_capacity(RUNS);
    let mut section = String::new();
    for _ in 0..RUNS {
        let start = Instant::now();
        let skills = discover(workspace, config);
        let found = start.elapsed();
        section = catalog(&skills, stats, budget, true);
        totals.push(start.elapsed());
        discovering.push(found);
    }
    let listed = section.lines().filter(|l| l.starts_with("- ")).count();
    println!(
        "discover {SKILLS} skills + catalogue within {budget} tokens ({listed} listed, {} \
         tokens): median {:.2} ms (target < 10), of which discovery {:.2} ms",
        tokens::estimate_text(&section),
        ms(median(totals)),
        ms(median(discovering)),
    );
    Ok(())
}
