//! `mnemo serve` at rest (`cargo bench --bench serve`): the daemon with 50 heartbeats and
//! schedules due later, measured over 60 s (`MNEMO_BENCH_IDLE_SECS` to change): the CPU time
//! it used between deadlines and its resident memory. Prints figures with their targets.

use std::error::Error;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use mnemo::memory::schedules::{NewSchedule, StoredWhen};

type BenchResult<T = ()> = Result<T, Box<dyn Error>>;

const JOBS: usize = 50;

/// utime + stime of `pid`, in clock ticks.
fn cpu_ticks(pid: u32) -> BenchResult<u64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat"))?;
    let rest = &stat[stat.rfind(')').ok_or("bad stat")? + 1..];
    let fields: Vec<&str> = rest.split_whitespace().collect();
    Ok(fields[11].parse::<u64>()? + fields[12].parse::<u64>()?)
}

/// A `/proc/PID/status` figure in KiB (`VmRSS`, `RssAnon`, `RssFile`).
fn status_kib(pid: u32, key: &str) -> BenchResult<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status"))?;
    let line = status
        .lines()
        .find(|l| l.starts_with(key))
        .ok_or(format!("no {key}"))?;
    Ok(line
        .split_whitespace()
        .nth(1)
        .ok_or("bad status line")?
        .parse()?)
}

/// Heartbeat files on cron lines of the early morning for half of the jobs, schedules the
/// agent made (intervals first due in hours, one-shots tomorrow) for the other half.
fn write_jobs(config: &Path, data: &Path, workspace: &Path) -> BenchResult {
    let dir = config.join("heartbeat");
    std::fs::create_dir_all(&dir)?;
    std::fs::create_dir_all(data)?;
    let mut db = mnemo::memory::Db::open(&data.join("mnemo.db"))?;
    let now_ms = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)?
        .as_millis() as i64;
    for i in 0..JOBS / 2 {
        let when = match i % 2 {
            0 => StoredWhen::Every {
                secs: 3600 * (3 + i as u64 % 5),
                first: now_ms + 3_600_000 * 3,
            },
            _ => StoredWhen::Once(now_ms + 86_400_000),
        };
        db.create_schedule(&NewSchedule {
            session_id: None,
            workspace: workspace.display().to_string(),
            when,
            prompt: format!("reminder {i}"),
            deliver: Vec::new(),
            rights: Default::default(),
        })?;
    }
    for i in 0..JOBS / 2 {
        let rule = format!("cron: \"{} 4 * * *\"", i % 60);
        let body = format!(
            "---\nname: check-{i}\n{rule}\n---\nCheck item {i}; reply HEARTBEAT_OK when fine.\n"
        );
        std::fs::write(dir.join(format!("check-{i}.md")), body)?;
    }
    Ok(())
}

fn main() -> BenchResult {
    let idle_secs: u64 = std::env::var("MNEMO_BENCH_IDLE_SECS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(60);
    let root = tempfile::tempdir()?;
    let (config, data) = (root.path().join("cfg"), root.path().join("data"));
    write_jobs(&config, &data, root.path())?;
    let mut daemon = Command::new(env!("CARGO_BIN_EXE_mnemo"))
        .arg("serve")
        .current_dir(root.path())
        .env("MNEMO_CONFIG_DIR", &config)
        .env("MNEMO_DATA_DIR", &data)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()?;
    let pid = daemon.id();
    let started = Instant::now();
    while !std::fs::read_to_string(data.join("serve.log")).is_ok_and(|l| l.contains("started")) {
        if started.elapsed() > Duration::from_secs(20) {
            return Err("mnemo serve did not start".into());
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    // Start-up work (loading jobs) is done, and 5 s later the daemon hands back what it
    // touched (`serve::idle`); from here on it should only sleep.
    std::thread::sleep(Duration::from_secs(8));
    let before = cpu_ticks(pid)?;
    std::thread::sleep(Duration::from_secs(idle_secs));
    let used = cpu_ticks(pid)? - before;
    let mib = |key: &str| status_kib(pid, key).map(|kib| kib as f64 / 1024.0);
    let (rss, anon, file) = (mib("VmRSS:")?, mib("RssAnon:")?, mib("RssFile:")?);
    // SAFETY: stops the daemon this bench started.
    unsafe { libc::kill(pid as libc::pid_t, libc::SIGTERM) };
    daemon.wait()?;
    let log = std::fs::read_to_string(data.join("serve.log"))?;
    // SAFETY: sysconf only reads a constant of the system.
    let ticks_per_second = unsafe { libc::sysconf(libc::_SC_CLK_TCK) }.max(1) as u64;
    let tick_ms = 1000 / ticks_per_second;
    println!(
        "serve idle, {JOBS} jobs, {idle_secs} s: CPU {} ms ({} ticks; target 0), resident {rss:.1} MiB (target < 15; {anon:.1} anonymous, {file:.1} file pages)",
        used * tick_ms,
        used,
    );
    let problems: Vec<&str> = log
        .lines()
        .filter(|l| l.contains('✗') || l.contains("failed"))
        .collect();
    println!("log problems: {problems:?}");
    Ok(())
}
