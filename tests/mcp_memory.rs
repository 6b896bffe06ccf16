//! Memory mnemo itself adds per connected MCP server (the servers' own processes excluded):
//! the growth of this process's resident set from one connected server-everything to six.
//! Ignored by default (a measurement, not a check); run with
//! `cargo test --release --test mcp_memory -- --ignored --nocapture --test-threads=1`.
//! Measured 2026-11-24 (release, server-everything 2026.8.31): 0.19 MiB per connected server;
//! echo round trip median 0.32 ms, p90 0.65 ms, the server's own time included.

mod mcp_support;

use mcp_support::{TestResult, everything, manager, ready};
use serde_json::json;
use tokio_util::sync::CancellationToken;

fn rss_kib() -> Result<u64, Box<dyn std::error::Error>> {
    let status = std::fs::read_to_string("/proc/self/status")?;
    let line = status
        .lines()
        .find(|l| l.starts_with("VmRSS:"))
        .ok_or("no VmRSS")?;
    Ok(line
        .split_whitespace()
        .nth(1)
        .ok_or("no VmRSS value")?
        .parse()?)
}

#[test]
#[ignore = "a measurement; run with --ignored --nocapture"]
fn memory_added_per_connected_server() -> TestResult {
    let runtime = tokio::runtime::Runtime::new()?;
    runtime.block_on(async {
        let logs = tempfile::tempdir()?;
        let warm = manager(vec![("warm", everything()?)], logs.path());
        ready(&warm).await;
        warm.call(
            "mcp__warm__echo",
            json!({"message": "x"}),
            CancellationToken::new(),
        )
        .await?;
        let before = rss_kib()?;
        let count = 5;
        let servers = (0..count)
            .map(|i| everything().map(|c| (format!("s{i}"), c)))
            .collect::<Result<Vec<_>, _>>()?;
        let mcp = manager(
            servers
                .iter()
                .map(|(n, c)| (n.as_str(), c.clone()))
                .collect(),
            logs.path(),
        );
        ready(&mcp).await;
        for (name, _) in &servers {
            mcp.call(
                &format!("mcp__{name}__echo"),
                json!({"message": "x"}),
                CancellationToken::new(),
            )
            .await?;
        }
        let after = rss_kib()?;
        let per_server = after.saturating_sub(before) as f64 / count as f64 / 1024.0;
        println!("RSS {before} KiB -> {after} KiB: {per_server:.2} MiB per connected server");
        Ok(())
    })
}

/// The time of one echo call through the manager, server included: an upper bound of what
/// the client adds.
#[test]
#[ignore = "a measurement; run with --ignored --nocapture"]
fn echo_round_trip_time() -> TestResult {
    let runtime = tokio::runtime::Runtime::new()?;
    runtime.block_on(async {
        let logs = tempfile::tempdir()?;
        let mcp = manager(vec![("e", everything()?)], logs.path());
        ready(&mcp).await;
        let mut times = Vec::new();
        for i in 0..300 {
            let started = std::time::Instant::now();
            mcp.call(
                "mcp__e__echo",
                json!({"message": i.to_string()}),
                CancellationToken::new(),
            )
            .await?;
            times.push(started.elapsed());
        }
        times.sort();
        println!(
            "echo round trip: median {:?}, p90 {:?} (300 calls, server time included)",
            times[times.len() / 2],
            times[times.len() * 9 / 10]
        );
        Ok(())
    })
}
