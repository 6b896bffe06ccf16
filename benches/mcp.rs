//! Figures for MCP (`cargo bench --bench mcp`), against server-everything from npm (installed
//! into target/npm-mcp on first use): the time one tool call adds beyond the server's own
//! (an echo through the agent's MCP tool, against the same echo sent by a bare JSON-RPC client
//! over the same kind of pipe), the memory mnemo adds per connected server (its servers'
//! processes excluded), and rebuilding a step's MCP tools with a deferred server. It prints
//! the figures with their targets; it does not fail on them.

#[path = "../tests/suite/mcp_support/mod.rs"]
mod mcp_support;

use std::io::{BufRead, BufReader, Write};
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use mcp_support::{everything, manager, ready};
use mnemo::mcp::McpTool;
use mnemo::tools::mcp::{McpCall, McpOffer};
use mnemo::tools::{Tool, ToolContext};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

type Result<T> = std::result::Result<T, Box<dyn std::error::Error>>;

const CALLS: usize = 500;

fn main() -> Result<()> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?;
    runtime.block_on(async {
        call_overhead().await?;
        memory_per_server().await?;
        Ok::<_, Box<dyn std::error::Error>>(())
    })?;
    offer_rebuild();
    Ok(())
}

fn median(mut times: Vec<Duration>) -> Duration {
    times.sort();
    times[times.len() / 2]
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

/// Echo calls through `McpCall` (approval check, manager, rmcp, result to text) against the
/// same calls by a bare client writing JSON-RPC lines to another server-everything.
async fn call_overhead() -> Result<()> {
    let logs = tempfile::tempdir()?;
    let mcp = manager(vec![("e", everything()?)], logs.path());
    ready(&mcp).await;
    let echo = mcp
        .tools()
        .into_iter()
        .find(|t| t.name == "mcp__e__echo")
        .ok_or("no echo tool")?;
    let tool = McpCall::new(Arc::new(echo), mcp.clone());
    let ctx = ToolContext::new(
        logs.path().to_path_buf(),
        "bench",
        "call",
        CancellationToken::new(),
        Duration::from_secs(60),
        None,
        mnemo::tools::approvals::detached(),
    );
    let mut through_mnemo = Vec::with_capacity(CALLS);
    for i in 0..CALLS + 50 {
        let input = json!({"message": format!("message {i}")});
        let started = Instant::now();
        ctx.approvals.check(&tool, &input, &ctx).await?;
        let text = tool.call(input, &ctx).await?;
        if i >= 50 {
            through_mnemo.push(started.elapsed());
        }
        assert_eq!(text, format!("Echo: message {i}"));
    }
    let bare = bare_echo_times()?;
    let (mnemo, bare) = (median(through_mnemo), median(bare));
    println!(
        "MCP echo round trip: through mnemo median {:.3} ms, bare JSON-RPC client median {:.3} ms: \
         overhead {:.3} ms per call (target < 2 ms)",
        ms(mnemo),
        ms(bare),
        ms(mnemo.saturating_sub(bare))
    );
    Ok(())
}

/// The same echo calls by a client that writes JSON-RPC lines and reads the answer.
fn bare_echo_times() -> Result<Vec<Duration>> {
    let script = mcp_support::script("server-everything")?;
    let mut child = Command::new("node")
        .arg(script)
        .arg("stdio")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()?;
    let mut input = child.stdin.take().ok_or("no stdin")?;
    let mut output = BufReader::new(child.stdout.take().ok_or("no stdout")?);
    let mut answer = |id: u64| -> Result<Value> {
        let mut line = String::new();
        loop {
            line.clear();
            if output.read_line(&mut line)? == 0 {
                return Err("the server closed its output".into());
            }
            let message: Value = serde_json::from_str(&line)?;
            if message["id"] == id {
                return Ok(message);
            }
        }
    };
    let mut send = |message: Value| -> Result<()> {
        writeln!(input, "{message}")?;
        input.flush()?;
        Ok(())
    };
    send(
        json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {},
        "clientInfo": {"name": "bench", "version": "0"}}}),
    )?;
    answer(0)?;
    send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}))?;
    let mut times = Vec::with_capacity(CALLS);
    for i in 0..CALLS + 50 {
        let id = i as u64 + 1;
        let started = Instant::now();
        send(
            json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {
            "name": "echo", "arguments": {"message": format!("message {i}")}}}),
        )?;
        let reply = answer(id)?;
        if i >= 50 {
            times.push(started.elapsed());
        }
        assert!(reply["result"]["content"][0]["text"].is_string(), "{reply}");
    }
    let _ = child.kill();
    let _ = child.wait();
    Ok(times)
}

fn rss_kib() -> Result<u64> {
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

/// This process's resident set from one connected server to six (each called once).
async fn memory_per_server() -> Result<()> {
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
    let mut servers = Vec::new();
    for i in 0..count {
        servers.push((format!("s{i}"), everything()?));
    }
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
    let per_server = after.saturating_sub(before) as f64 / f64::from(count) / 1024.0;
    println!(
        "memory mnemo adds per connected MCP server: {per_server:.2} MiB ({before} KiB with one \
         server, {after} KiB with six; target < 2 MiB)"
    );
    Ok(())
}

/// A step's MCP tools built again (as when the history changes) from a listed server of 20
/// tools and a deferred one of 200, with its search index.
fn offer_rebuild() {
    let tool = |server: &str, i: usize| McpTool {
        name: format!("mcp__{server}__tool_{i}"),
        server: server.to_string(),
        tool: format!("tool_{i}"),
        description: format!("Does thing number {i} to a file, a repository or an issue"),
        input_schema: json!({"type": "object", "properties": {"path": {"type": "string"}}}),
        read_only: i.is_multiple_of(2),
    };
    let mut tools: Vec<McpTool> = (0..20).map(|i| tool("small", i)).collect();
    tools.extend((0..200).map(|i| tool("large", i)));
    let found = ["mcp__large__tool_7", "mcp__large__tool_42"];
    let mut times = Vec::new();
    for _ in 0..50 {
        let started = Instant::now();
        let offer = McpOffer::build(&tools, found, 3000);
        times.push(started.elapsed());
        assert_eq!(offer.specs.len(), 1 + 20 + 2);
    }
    println!(
        "MCP tools of a step rebuilt (20 listed, 200 deferred with their index): median {:.3} ms",
        ms(median(times))
    );
}
