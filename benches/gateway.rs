//! The gateway under load (`cargo bench --bench gateway`):
//! 1. 100 clients on 100 sessions running scripted turns at once: for every event, the time
//!    from an in-process front end getting it to the gateway client getting it (the latency
//!    the gateway adds), p50 and p99.
//! 2. 1,000 idle sessions held by one `mnemo serve`: its resident memory.
//! 3. 300 connections to one `mnemo serve` that never send a token, each sending 1 MiB without
//!    a newline: its resident memory, and how long the owner then takes to get in.
//!    Prints figures with their targets.

mod support;

use std::collections::HashMap;
use std::error::Error;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use mnemo::config::{CliOverrides, Dirs};
use mnemo::gateway::client::GatewayClient;
use mnemo::gateway::{self, GatewayOptions, Listen};
use mnemo::host::{Delivery, SessionHost};
use mnemo::protocol::{Event, Op};
use serde_json::json;
use support::{Daemon, percentile};
use tokio::io::AsyncWriteExt;
use tokio_util::sync::CancellationToken;

type BenchResult<T = ()> = Result<T, Box<dyn Error>>;

const SESSIONS: usize = 100;
const CHUNKS: usize = 50;
const IDLE_SESSIONS: usize = 1000;
const SILENT_CONNECTIONS: usize = 300;

type Seen = Arc<Mutex<HashMap<(String, u64), Instant>>>;

async fn latency() -> BenchResult {
    let dir = tempfile::tempdir()?;
    let (cfg, data) = (dir.path().join("cfg"), dir.path().join("data"));
    std::fs::create_dir_all(&data)?;
    let chunks: Vec<String> = (0..CHUNKS).map(|i| format!("word{i} ")).collect();
    let script = dir.path().join("script.json");
    std::fs::write(
        &script,
        json!({"turns": [{"chunks": chunks, "delay_ms": 20}]}).to_string(),
    )?;
    let cli = CliOverrides {
        model: Some(format!("scripted:{}", script.display())),
        ..Default::default()
    };
    let dirs = Dirs {
        config: Some(cfg),
        data: Some(data.clone()),
    };
    let loaded = Arc::new(mnemo::host::load_config_from(&dirs, dir.path(), &cli)?);
    let host = SessionHost::new();
    let socket = dir.path().join("gw.sock");
    let options = GatewayOptions {
        listen: vec![Listen::Unix(socket.clone())],
        tls: None,
        jobs_changed: None,
        searcher: None,
        telegram_paired: None,
    };
    let cancel = CancellationToken::new();
    let _running = gateway::start(host.clone(), loaded, cli, &options, cancel.clone()).await?;
    let token = data.join("gateway-token");

    let (local, remote): (Seen, Seen) = (Arc::default(), Arc::default());
    let mut clients = Vec::new();
    let mut readers = Vec::new();
    for _ in 0..SESSIONS {
        let client = GatewayClient::connect_unix(&socket, &token).await?;
        let mut attached = client.create(dir.path(), None).await?;
        let mut inside = host
            .attach(&attached.session, Delivery::Wait)
            .ok_or("not live")?;
        let seen = local.clone();
        readers.push(tokio::spawn(async move {
            while let Some(event) = inside.events.recv().await {
                let done = matches!(event.event, Event::TurnFinished { .. });
                if let Ok(mut seen) = seen.lock() {
                    seen.insert((event.session.clone(), event.seq), Instant::now());
                }
                if done {
                    return;
                }
            }
        }));
        let seen = remote.clone();
        let ops = attached.ops.clone();
        readers.push(tokio::spawn(async move {
            while let Some(event) = attached.events.recv().await {
                let done = matches!(event.event, Event::TurnFinished { .. });
                if let Ok(mut seen) = seen.lock() {
                    seen.insert((event.session.clone(), event.seq), Instant::now());
                }
                if done {
                    return;
                }
            }
        }));
        clients.push((client, ops));
    }
    let started = Instant::now();
    for (_, ops) in &clients {
        ops.send(Op::user_input("go")).await?;
    }
    for reader in readers {
        tokio::time::timeout(Duration::from_secs(120), reader).await??;
    }
    let elapsed = started.elapsed();
    let (local, remote) = (
        local.lock().map_err(|_| "poisoned")?.clone(),
        remote.lock().map_err(|_| "poisoned")?.clone(),
    );
    let mut added: Vec<Duration> = remote
        .iter()
        .filter_map(|(key, at)| {
            local
                .get(key)
                .map(|inside| at.saturating_duration_since(*inside))
        })
        .collect();
    added.sort();
    println!(
        "gateway, {SESSIONS} clients on {SESSIONS} sessions, {} events in {:.1} s: added latency p50 {:.2} ms, p99 {:.2} ms (target p99 < 5 ms)",
        added.len(),
        elapsed.as_secs_f64(),
        percentile(&added, 0.5).as_secs_f64() * 1000.0,
        percentile(&added, 0.99).as_secs_f64() * 1000.0
    );
    cancel.cancel();
    Ok(())
}

async fn idle_sessions() -> BenchResult {
    let dir = tempfile::tempdir()?;
    let daemon = Daemon::start(dir.path(), "", &json!({"turns": []}), &[]).await?;
    let data = daemon.data.clone();
    let client = GatewayClient::connect(&data, Default::default()).await?;
    let before = daemon.rss_mib()?;
    let started = Instant::now();
    let mut held = Vec::new();
    for _ in 0..IDLE_SESSIONS {
        held.push(client.create(dir.path(), None).await?);
    }
    let took = started.elapsed();
    tokio::time::sleep(Duration::from_secs(1)).await;
    let after = daemon.rss_mib()?;
    println!(
        "mnemo serve holding {IDLE_SESSIONS} idle sessions: resident {after:.1} MiB (target < 200; {before:.1} MiB before), created in {:.1} s",
        took.as_secs_f64()
    );
    daemon.stop()
}

async fn silent_connections() -> BenchResult {
    let dir = tempfile::tempdir()?;
    let daemon = Daemon::start(dir.path(), "", &json!({"turns": []}), &[]).await?;
    let socket = daemon.data.join("gateway.sock");
    let before = daemon.rss_mib()?;
    let mut held = Vec::new();
    let junk = vec![b'a'; 1024 * 1024];
    for _ in 0..SILENT_CONNECTIONS {
        let mut stream = tokio::net::UnixStream::connect(&socket).await?;
        // The gateway may close it before all is sent: that is what is measured.
        let _ = tokio::time::timeout(Duration::from_secs(2), stream.write_all(&junk)).await;
        held.push(stream);
    }
    tokio::time::sleep(Duration::from_secs(1)).await;
    let after = daemon.rss_mib()?;
    let started = Instant::now();
    let client = GatewayClient::connect(&daemon.data, Default::default()).await?;
    let owner_in = started.elapsed();
    println!(
        "mnemo serve with {SILENT_CONNECTIONS} connections that send 1 MiB and no token: resident {after:.1} MiB, {:.1} MiB added (target <= 20); the owner got in after {:.1} ms",
        after - before,
        owner_in.as_secs_f64() * 1000.0
    );
    drop((client, held));
    daemon.stop()
}

fn main() -> BenchResult {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?;
    runtime.block_on(latency())?;
    runtime.block_on(idle_sessions())?;
    runtime.block_on(silent_connections())?;
    Ok(())
}
