//! Sandbox benchmark for the sandboxing issue, printed as figures with their target
//! (`cargo bench --bench sandbox`): the start-up cost that bubblewrap adds to a command, as the
//! shell tool pays it (`bash -c true` through `Sandbox::command`, sandboxed versus full access)
//! and bare (`bwrap … true` versus `true`). Median of 100 runs each, after a warm-up.

use std::error::Error;
use std::ffi::OsString;
use std::path::Path;
use std::process::Stdio;
use std::time::{Duration, Instant};

use std::sync::Arc;

use mnemo::sandbox::domains::{DomainList, DomainPattern};
use mnemo::sandbox::{Sandbox, SandboxConfig, SandboxPolicy, bwrap, egress};

type BenchResult<T = ()> = Result<T, Box<dyn Error>>;

const RUNS: usize = 100;
const WARM_UP: usize = 5;
/// What bubblewrap added before the confinement of the security work (about 4.5 ms on a quiet
/// machine) plus the 2 ms that work may cost.
const TARGET_MS: f64 = 6.5;

fn main() -> BenchResult {
    println!("mnemo sandbox benchmarks");
    if let Err(e) = std::process::Command::new(bwrap::BWRAP)
        .arg("--version")
        .output()
    {
        println!(
            "bwrap is not usable here ({e}); install it with `{}`",
            bwrap::INSTALL_HINT
        );
        return Ok(());
    }
    let dir = tempfile::tempdir()?;
    let workspace = dir.path().join("ws");
    std::fs::create_dir(&workspace)?;
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    runtime.block_on(through_the_shell_path(
        &workspace,
        &dir.path().join("scratch"),
    ))?;
    bare(&workspace)?;
    Ok(())
}

/// What the shell tool pays: `Sandbox::command` (environment scrub, masks) and the spawn.
async fn through_the_shell_path(workspace: &Path, scratch: &Path) -> BenchResult {
    let sandbox = |policy| {
        let config = SandboxConfig {
            policy,
            network: false,
        };
        Sandbox::new(config, workspace, scratch)
    };
    let plain = sandbox(SandboxPolicy::FullAccess)?;
    let sandboxed = sandbox(SandboxPolicy::WorkspaceWrite)?;
    let (mut plain_times, mut sandboxed_times) = interleaved(&plain, &sandboxed).await?;
    report(
        "shell path (bash -c true)",
        &mut plain_times,
        &mut sandboxed_times,
    );
    proxied(sandboxed).await
}

/// `bash -c true` through each sandbox, `RUNS` times after a warm-up. Interleaved, so drift in
/// machine load hits both sides alike.
async fn interleaved(a: &Sandbox, b: &Sandbox) -> BenchResult<(Vec<Duration>, Vec<Duration>)> {
    let mut times = (Vec::with_capacity(RUNS), Vec::with_capacity(RUNS));
    for run in 0..WARM_UP + RUNS {
        for (which, times) in [(a, &mut times.0), (b, &mut times.1)] {
            let started = Instant::now();
            let mut prepared = which.command("true").await?;
            let status = prepared.command.stdout(Stdio::null()).status().await?;
            if !status.success() {
                return Err(format!("`true` failed: {status}").into());
            }
            if run >= WARM_UP {
                times.push(started.elapsed());
            }
        }
    }
    Ok(times)
}

/// What a command pays when its network opens per domain: the shim (mnemo itself) starts first
/// and hands its listener over, against the same command without it.
async fn proxied(sandboxed: Sandbox) -> BenchResult {
    egress::use_shim_program(env!("CARGO_BIN_EXE_mnemo").into());
    let list = DomainList::new(vec![DomainPattern::parse("crates.io")?]);
    let gate = egress::ListGate {
        list: list.clone(),
        configured: list,
    };
    let proxied = sandboxed.clone().with_gate(Arc::new(gate));
    let (mut without, mut with) = interleaved(&sandboxed, &proxied).await?;
    let ((without, _), (with, _)) = (median_and_min(&mut without), median_and_min(&mut with));
    println!(
        "added by the per-domain proxy (shim and hand-over): {:.2} ms; median of {RUNS}: \
         proxied {with:.2} ms, sandboxed {without:.2} ms",
        with - without
    );
    Ok(())
}

/// The bare cost: `bwrap <the same options> true` against `true`.
fn bare(workspace: &Path) -> BenchResult {
    let config = SandboxConfig::default();
    let masks = bwrap::present_masks();
    let spec = bwrap::Spec {
        config: &config,
        workspace,
        scratch: workspace,
        masks: &masks,
        protected: &[],
        hidden: &[],
        seccomp_fd: None,
        shim: None,
        script: "true",
    };
    let mut args: Vec<OsString> = bwrap::args(&spec);
    // Run `true` itself rather than `bash -c true`.
    args.truncate(args.len() - 3);
    args.push("true".into());
    let mut plain_times = Vec::with_capacity(RUNS);
    let mut sandboxed_times = Vec::with_capacity(RUNS);
    for run in 0..WARM_UP + RUNS {
        let started = Instant::now();
        let plain = std::process::Command::new("true").status()?;
        let plain_elapsed = started.elapsed();
        let started = Instant::now();
        let sandboxed = std::process::Command::new(bwrap::BWRAP)
            .args(&args)
            .status()?;
        let sandboxed_elapsed = started.elapsed();
        if !plain.success() || !sandboxed.success() {
            return Err(format!("`true` failed: {plain} / {sandboxed}").into());
        }
        if run >= WARM_UP {
            plain_times.push(plain_elapsed);
            sandboxed_times.push(sandboxed_elapsed);
        }
    }
    report("bare (true)", &mut plain_times, &mut sandboxed_times);
    Ok(())
}

/// The median and the fastest run in milliseconds; the fastest shows the cost without
/// interference from other load on the machine.
fn median_and_min(times: &mut [Duration]) -> (f64, f64) {
    times.sort();
    let ms = |d: Option<&Duration>| d.map_or(0.0, |d| d.as_secs_f64() * 1000.0);
    (ms(times.get(times.len() / 2)), ms(times.first()))
}

fn report(label: &str, plain: &mut [Duration], sandboxed: &mut [Duration]) {
    let ((plain, plain_min), (sandboxed, sandboxed_min)) =
        (median_and_min(plain), median_and_min(sandboxed));
    let added = sandboxed - plain;
    let verdict = if added < TARGET_MS { "ok" } else { "OVER" };
    println!(
        "added start-up cost, {label}: {added:.2} ms (target < {TARGET_MS:.1}) [{verdict}]; \
         median of {RUNS}: sandboxed {sandboxed:.2} ms, plain {plain:.2} ms; fastest: \
         sandboxed {sandboxed_min:.2} ms, plain {plain_min:.2} ms"
    );
}
