//! What opening through directory handles costs `write_file` (`cargo bench --bench
//! file_tools`): the tool writing a new 1 MB file beneath the workspace's handles, against the
//! tool as it was before, by path (decode the arguments, check the path, then read, create the
//! parent and write by name). Interleaved runs, median of 200 each, after a warm-up. Also the
//! time to replace a 400,000-line file, whose diff used to grow quadratically.

use std::error::Error;
use std::path::Path;
use std::time::{Duration, Instant};

use mnemo::sandbox::{Confinement, SandboxPolicy, path_guard};
use mnemo::tools::fs_write::{WriteFile, WriteFileArgs};
use mnemo::tools::{Tool, ToolContext};
use serde_json::json;
use tokio_util::sync::CancellationToken;

type BenchResult<T = ()> = Result<T, Box<dyn Error>>;

const RUNS: usize = 200;
const WARM_UP: usize = 10;
/// At most this much slower than writing by path.
const TARGET_RATIO: f64 = 1.10;

fn main() -> BenchResult {
    let dir = tempfile::tempdir()?;
    let workspace = dir.path().canonicalize()?;
    std::fs::create_dir_all(workspace.join("src/deep/er"))?;
    let content: String = (0..20_000)
        .map(|i| format!("line {i:>6} of a one megabyte file, padded out\n"))
        .collect();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    let ctx = ToolContext::new(
        workspace.clone(),
        "bench",
        "call",
        CancellationToken::new(),
        Duration::from_secs(30),
        None,
        mnemo::tools::approvals::detached(),
    );
    let mut handles = Vec::with_capacity(RUNS);
    let mut by_path = Vec::with_capacity(RUNS);
    let target = workspace.join("src/deep/er/big.txt");
    for run in 0..WARM_UP + RUNS {
        let _ = std::fs::remove_file(&target);
        let started = Instant::now();
        let input = json!({"path": "src/deep/er/big.txt", "content": content});
        runtime.block_on(WriteFile.call(input, &ctx))?;
        let handle_time = started.elapsed();
        let _ = std::fs::remove_file(&target);
        let started = Instant::now();
        let input = json!({"path": "src/deep/er/big.txt", "content": content});
        runtime.block_on(write_by_path(&workspace, input))?;
        let path_time = started.elapsed();
        if run >= WARM_UP {
            handles.push(handle_time);
            by_path.push(path_time);
        }
    }
    rewrite_of_a_huge_file(&runtime, &ctx, &workspace)?;
    let (handles, by_path) = (median(&mut handles), median(&mut by_path));
    let ratio = handles / by_path;
    let verdict = if ratio <= TARGET_RATIO { "ok" } else { "OVER" };
    println!(
        "write_file of a new 1 MB file: {handles:.3} ms through handles, {by_path:.3} ms by \
         path; ratio {ratio:.3} (target <= {TARGET_RATIO:.2}) [{verdict}]"
    );
    Ok(())
}

/// `write_file` replacing a 400,000-line file with other content: the diff is bounded, so the
/// call stays well under the 2 s target. Median of five.
fn rewrite_of_a_huge_file(
    runtime: &tokio::runtime::Runtime,
    ctx: &ToolContext,
    workspace: &Path,
) -> BenchResult {
    const TARGET_SECS: f64 = 2.0;
    let old: String = (0..400_000)
        .map(|i| format!("let old_{i} = {i};\n"))
        .collect();
    let new: String = (0..400_000)
        .map(|i| format!("let new_{i} = {i} + 1;\n"))
        .collect();
    let mut times = Vec::new();
    for _ in 0..5 {
        std::fs::write(workspace.join("huge.rs"), &old)?;
        let input = json!({"path": "huge.rs", "content": new});
        let started = Instant::now();
        let report = runtime.block_on(WriteFile.call(input, ctx))?;
        times.push(started.elapsed());
        if !report.contains("+400000 -400000") {
            return Err(format!("unexpected report: {}", &report[..report.len().min(200)]).into());
        }
    }
    let secs = median(&mut times) / 1000.0;
    let verdict = if secs < TARGET_SECS { "ok" } else { "OVER" };
    println!(
        "write_file replacing a 400,000-line file: {secs:.3} s (target < {TARGET_SECS:.0}) \
         [{verdict}]"
    );
    Ok(())
}

/// The former tool: arguments decoded, the path checked, then read, its parent created and
/// written by name.
async fn write_by_path(workspace: &Path, input: serde_json::Value) -> BenchResult<String> {
    let args: WriteFileArgs = serde_json::from_value(input)?;
    let confinement = Confinement::default();
    let policy = SandboxPolicy::WorkspaceWrite;
    let path = path_guard::resolve_for_write(workspace, &args.path, policy, &confinement)?;
    let previous = tokio::fs::read(&path).await.ok();
    if let Some(parent) = path.parent() {
        tokio::fs::create_dir_all(parent).await?;
    }
    tokio::fs::write(&path, &args.content).await?;
    let lines = args.content.lines().count();
    Ok(format!(
        "created ({lines} lines, existed: {})",
        previous.is_some()
    ))
}

fn median(times: &mut [Duration]) -> f64 {
    times.sort();
    times
        .get(times.len() / 2)
        .map_or(0.0, |d| d.as_secs_f64() * 1000.0)
}
