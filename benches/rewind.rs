//! Rewind of a turn that changed 100 files of 10 KB (`cargo bench --bench rewind`): the time
//! to check the turn, write the 100 files back and forget the turn (what `Op::Rewind` and
//! `mnemo sessions rewind` do besides deleting the conversation's rows), target under 100 ms;
//! and, beside it, what keeping the 100 files cost the turn as the agent wrote them. Median
//! of 20 runs, each on a fresh session after a warm-up.

use std::error::Error;
use std::path::Path;
use std::time::{Duration, Instant};

use mnemo::protocol::RewindWhat;
use mnemo::rewind::{Keeper, Limits, apply};

type BenchResult<T = ()> = Result<T, Box<dyn Error>>;

const RUNS: usize = 20;
const WARM_UP: usize = 3;
const FILES: usize = 100;
const FILE_BYTES: usize = 10 * 1024;
const TARGET_MS: f64 = 100.0;

fn main() -> BenchResult {
    let data = tempfile::tempdir()?;
    let ws = tempfile::tempdir()?;
    let workspace = ws.path().canonicalize()?;
    std::fs::create_dir_all(workspace.join("src"))?;
    let original: String = "original content line\n".repeat(FILE_BYTES / 22 + 1);
    let changed: String = "changed by the agent!\n".repeat(FILE_BYTES / 22 + 1);
    let (mut rewinds, mut keeps) = (Vec::new(), Vec::new());
    for run in 0..WARM_UP + RUNS {
        for i in 0..FILES {
            std::fs::write(file(&workspace, i), &original[..FILE_BYTES])?;
        }
        let keeper = Keeper::new(
            data.path().join("rewind"),
            &format!("s{run}"),
            Limits::default(),
        );
        keeper.begin_turn(1, "change a hundred files", 0, 0)?;
        let mut keep = Duration::ZERO;
        for i in 0..FILES {
            let relative = format!("src/f{i:03}.txt");
            let started = Instant::now();
            keeper.keep(1, &workspace, Path::new(&relative))?;
            keep += started.elapsed();
            std::fs::write(file(&workspace, i), &changed[..FILE_BYTES])?;
        }
        let started = Instant::now();
        let planned = apply::plan(&keeper, 1, RewindWhat::Both, Some(0))?;
        let mut report = apply::restore(&keeper, &workspace, &planned, RewindWhat::Both)?;
        apply::finish(&keeper, planned, &mut report)?;
        let rewind = started.elapsed();
        if report.restored.len() != FILES
            || std::fs::read_to_string(file(&workspace, 7))? != original[..FILE_BYTES]
        {
            return Err(format!("the rewind did not restore the files: {report:?}").into());
        }
        if run >= WARM_UP {
            rewinds.push(rewind);
            keeps.push(keep);
        }
    }
    let (rewind, keep) = (median(&mut rewinds), median(&mut keeps));
    let verdict = if rewind < TARGET_MS { "ok" } else { "OVER" };
    println!(
        "rewind of a turn that changed {FILES} files of 10 KB: {rewind:.2} ms (target < \
         {TARGET_MS} ms) [{verdict}]; keeping them before the turn wrote them: {keep:.2} ms in \
         all"
    );
    Ok(())
}

fn file(workspace: &Path, i: usize) -> std::path::PathBuf {
    workspace.join(format!("src/f{i:03}.txt"))
}

fn median(times: &mut [Duration]) -> f64 {
    times.sort();
    times[times.len() / 2].as_secs_f64() * 1000.0
}
