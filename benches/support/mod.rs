//! What several benches measure the same way.

use std::time::Duration;

/// The `p` quantile (0.0 to 1.0) of sorted durations.
pub fn percentile(sorted: &[Duration], p: f64) -> Duration {
    let index = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted.get(index).copied().unwrap_or_default()
}

/// The resident memory of process `pid`, in MiB.
pub fn rss_mib(pid: u32) -> Result<f64, Box<dyn std::error::Error>> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status"))?;
    let kib: f64 = status
        .lines()
        .find(|l| l.starts_with("VmRSS:"))
        .and_then(|l| l.split_whitespace().nth(1))
        .ok_or("no VmRSS")?
        .parse()?;
    Ok(kib / 1024.0)
}
