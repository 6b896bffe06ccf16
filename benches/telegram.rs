//! The Telegram channel (`cargo bench --bench telegram`), against the in-test Bot API server:
//! 1. Time from an update reaching the Bot API server to its message reaching the agent (its
//!    turn starting) and to the message being stored (`UserMessage`): p50 and p99 over 200
//!    messages to a live chat.
//! 2. Memory `mnemo serve` adds for the channel: with 100 paired chats, and once all 100 have
//!    talked (each then holds a live session; the sessions' share is measured apart).
//!    Prints figures with their targets.

mod support;

#[path = "../tests/suite/telegram_support/mod.rs"]
mod telegram_support;

use std::error::Error;
use std::sync::Arc;
use std::time::{Duration, Instant};

use mnemo::config::{CliOverrides, Dirs};
use mnemo::host::{Delivery, SessionHost};
use mnemo::jobs::delivery::Log;
use mnemo::protocol::Event;
use serde_json::json;
use support::{Daemon, percentile};
use telegram_support::BotServer;
use tokio_util::sync::CancellationToken;

type BenchResult<T = ()> = Result<T, Box<dyn Error>>;

const TOKEN: &str = "123456:bench-token";
const MESSAGES: usize = 200;
const CHATS: i64 = 100;
const WAIT: Duration = Duration::from_secs(30);

fn config(server: &BotServer) -> String {
    format!(
        "[telegram]\nenabled = true\nbase_url = \"{}\"\nbot_token_env = \"MNEMO_BENCH_BOT_TOKEN\"\n",
        server.base_url()
    )
}

async fn latency() -> BenchResult {
    let server = BotServer::start(TOKEN).await?;
    let dir = tempfile::tempdir()?;
    let (cfg, data) = (dir.path().join("cfg"), dir.path().join("data"));
    std::fs::create_dir_all(&cfg)?;
    std::fs::create_dir_all(&data)?;
    std::fs::write(cfg.join("config.toml"), config(&server))?;
    let turns: Vec<_> = (0..=MESSAGES).map(|_| json!({"text": "ok"})).collect();
    let script = dir.path().join("script.json");
    std::fs::write(&script, json!({ "turns": turns }).to_string())?;
    let cli = CliOverrides {
        model: Some(format!("scripted:{}", script.display())),
        ..Default::default()
    };
    let dirs = Dirs {
        config: Some(cfg),
        data: Some(data),
    };
    let loaded = Arc::new(mnemo::host::load_config_from(&dirs, dir.path(), &cli)?);
    let host = SessionHost::new();
    let cancel = CancellationToken::new();
    let ctx = mnemo::channels::telegram::Ctx::with_token(
        loaded.clone(),
        host.clone(),
        cli,
        Arc::new(Log::new(std::io::sink())),
        cancel.clone(),
        TOKEN,
    )?;
    tokio::spawn(mnemo::channels::telegram::run(Arc::new(ctx)));
    pair(&server, &loaded, &[1]).await?;

    server.send_text(1, "warm up");
    let session = wait_for(|| host.live().into_iter().next()).await?;
    let mut events = host
        .attach(&session, Delivery::Wait)
        .ok_or("the session ended")?
        .events;
    // To the agent taking it (its turn starts) and to the message stored (`UserMessage`).
    let (mut taken, mut stored) = (Vec::new(), Vec::new());
    for i in 0..MESSAGES {
        // The previous turn ends first, so each message starts a turn of its own.
        tokio::time::sleep(Duration::from_millis(100)).await;
        let text = format!("message {i}");
        let sent = Instant::now();
        server.send_text(1, &text);
        loop {
            let event = tokio::time::timeout(WAIT, events.recv())
                .await?
                .ok_or("the session ended")?;
            match &event.event {
                Event::TurnStarted { .. } => taken.push(sent.elapsed()),
                Event::UserMessage { text: t, .. } if *t == text => {
                    stored.push(sent.elapsed());
                    break;
                }
                _ => {}
            }
        }
    }
    let ms = |d: Duration| d.as_secs_f64() * 1000.0;
    for (what, took) in [
        ("taken by the agent", &mut taken),
        ("stored as a user message", &mut stored),
    ] {
        took.sort();
        println!(
            "update to {what}, {MESSAGES} messages: p50 {:.2} ms, p99 {:.2} ms, max {:.2} ms{}",
            ms(percentile(took, 0.5)),
            ms(percentile(took, 0.99)),
            ms(took.last().copied().unwrap_or_default()),
            if what.starts_with("taken") {
                " (target < 5)"
            } else {
                ""
            }
        );
    }
    cancel.cancel();
    host.stop_all(Duration::from_secs(5)).await;
    Ok(())
}

async fn wait_for<T>(mut found: impl FnMut() -> Option<T>) -> BenchResult<T> {
    let deadline = Instant::now() + WAIT;
    loop {
        if let Some(found) = found() {
            return Ok(found);
        }
        if Instant::now() > deadline {
            return Err("timed out".into());
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

/// Pairs `chats` the way people do: each messages the bot and its code is paired, twenty
/// at a time (the most codes that wait at once).
async fn pair(server: &BotServer, loaded: &mnemo::host::Loaded, chats: &[i64]) -> BenchResult {
    let store = loaded.store()?;
    for batch in chats.chunks(20) {
        for chat in batch {
            server.send_text(*chat, "hi");
        }
        for chat in batch {
            let code = server
                .wait_until(WAIT, |s| {
                    s.messages(*chat).into_iter().find_map(|m| {
                        let rest = m.text.split("mnemo telegram pair ").nth(1)?;
                        rest.split_whitespace().next().map(str::to_string)
                    })
                })
                .await
                .ok_or("no pairing code")?;
            store
                .call(move |db| db.pair_telegram_chat(&code, 3_600_000))
                .await?
                .ok_or("the code did not pair")?;
        }
    }
    Ok(())
}

/// A `mnemo serve` on `dir` with `config`, given the bot token; its memory once settled.
async fn daemon(dir: &std::path::Path, config: &str) -> BenchResult<Daemon> {
    let turns: Vec<_> = (0..10).map(|_| json!({"text": "ok"})).collect();
    let env = [("MNEMO_BENCH_BOT_TOKEN", TOKEN)];
    Daemon::start(dir, config, &json!({ "turns": turns }), &env).await
}

async fn settled_rss(daemon: &Daemon) -> BenchResult<f64> {
    tokio::time::sleep(Duration::from_secs(2)).await;
    daemon.rss_mib()
}

async fn memory() -> BenchResult {
    let server = BotServer::start(TOKEN).await?;
    let plain_dir = tempfile::tempdir()?;
    let plain = daemon(plain_dir.path(), "").await?;
    let without = settled_rss(&plain).await?;
    plain.stop()?;

    let dir = tempfile::tempdir()?;
    let daemon = self::daemon(dir.path(), &config(&server)).await?;
    let polling = settled_rss(&daemon).await?;
    let dirs = Dirs {
        config: Some(dir.path().join("cfg")),
        data: Some(daemon.data.clone()),
    };
    let loaded = mnemo::host::load_config_from(&dirs, dir.path(), &CliOverrides::default())?;
    let chats: Vec<i64> = (1..=CHATS).collect();
    pair(&server, &loaded, &chats).await?;
    let paired = settled_rss(&daemon).await?;
    for chat in &chats {
        server.send_text(*chat, "hello");
    }
    for chat in &chats {
        server
            .wait_until(WAIT, |s| {
                s.messages(*chat)
                    .into_iter()
                    .find(|m| m.text == "ok")
                    .map(drop)
            })
            .await
            .ok_or("a chat got no reply")?;
    }
    let talking = settled_rss(&daemon).await?;
    // What 100 more sessions cost without the channel, through the gateway.
    let client =
        mnemo::gateway::client::GatewayClient::connect(&daemon.data, Default::default()).await?;
    let mut held = Vec::new();
    for _ in 0..CHATS {
        held.push(client.create(dir.path(), None).await?);
    }
    let with_sessions = settled_rss(&daemon).await?;
    let sessions = with_sessions - talking;
    println!(
        "mnemo serve without the channel {without:.1} MiB; with it, polling {polling:.1} MiB, \
         {CHATS} paired chats {paired:.1} MiB (added {:.1} MiB, target < 5)",
        paired - without
    );
    println!(
        "all {CHATS} chats talked: {talking:.1} MiB; {CHATS} sessions alone cost {sessions:.1} MiB, \
         so the channel's own share is {:.1} MiB",
        talking - paired - sessions
    );
    drop(held);
    daemon.stop()?;
    Ok(())
}

fn main() -> BenchResult {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?;
    runtime.block_on(latency())?;
    runtime.block_on(memory())?;
    Ok(())
}
