//! The Telegram channel when things go wrong: a restart between two updates, a 429 and a
//! revoked token, reports to paired chats, a reply Telegram cannot parse, a crowd of unpaired
//! chats, and a model stream cut and retried.

use crate::common;
use crate::jobs_support;
use crate::telegram_channel;
use crate::telegram_support;

use std::sync::Arc;
use std::time::Duration;

use jobs_support::SharedBuffer;
use mnemo::jobs::delivery::Log;
use serde_json::json;
use telegram_channel::*;
use telegram_support::BotServer;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn after_a_restart_the_next_update_is_handled_exactly_once() -> TestResult {
    let server = BotServer::start(TOKEN).await?;
    let script = json!({"turns": [
        {"when": "first", "text": "One done."},
        {"when": "second", "text": "Two done."}
    ]});
    let setup = Setup::new(&server, script, "", "")?;
    let running = setup.start()?;
    paired(&server, &setup, ADA).await?;
    let first = server.send_text(ADA, "first thing");
    shown(&server, ADA, "One done.").await?;
    running.stop().await?;

    let second = server.send_text(ADA, "second thing");
    let running = setup.start()?;
    shown(&server, ADA, "Two done.").await?;
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert_eq!(
        running.user_messages(ADA).await?,
        ["first thing", "second thing"],
        "each message reached the agent once"
    );
    let offsets: Vec<i64> = server
        .calls()
        .into_iter()
        .filter(|c| c.method == "getUpdates")
        .filter_map(|c| c.body["offset"].as_i64())
        .collect();
    assert!(offsets.contains(&(first + 1)), "{offsets:?}");
    assert!(offsets.contains(&(second + 1)), "{offsets:?}");
    let replies = server
        .messages(ADA)
        .iter()
        .filter(|m| m.text.contains("done."))
        .count();
    assert_eq!(replies, 2);
    running.stop().await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_429_is_waited_out_and_a_revoked_token_stops_the_channel() -> TestResult {
    let server = BotServer::start(TOKEN).await?;
    server.fail_next(
        "getUpdates",
        429,
        "Too Many Requests: retry after 2",
        Some(2),
    );
    let setup = Setup::new(&server, json!({"turns": []}), "", "")?;
    let mut running = setup.start()?;
    let polls = server
        .wait_until(WAIT, |s| {
            let polls: Vec<_> = s
                .calls()
                .into_iter()
                .filter(|c| c.method == "getUpdates")
                .collect();
            (polls.len() >= 2).then_some(polls)
        })
        .await
        .ok_or("no second poll")?;
    assert_eq!(polls[0].status, Some(429));
    let waited = polls[1].at.duration_since(polls[0].at);
    assert!(
        waited >= Duration::from_secs(2),
        "polled again after {waited:?}"
    );

    server.revoke_token();
    let task = running.task.take().ok_or("no task")?;
    tokio::time::timeout(WAIT, task).await??;
    let log = running.log.text();
    let stopped: Vec<&str> = log.lines().filter(|l| l.contains("401")).collect();
    assert_eq!(stopped.len(), 1, "one clear line: {log}");
    assert!(!log.contains(TOKEN), "the token is never logged");
    let mut status = Vec::new();
    mnemo::commands::status::status(&setup.loaded()?, &mut status).await?;
    let status = String::from_utf8(status)?;
    assert!(
        status.contains("telegram: stopped: Telegram refused the bot token"),
        "{status}"
    );
    running.stop().await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reports_go_to_every_paired_chat_or_the_one_named() -> TestResult {
    use mnemo::jobs::delivery::{Channel, Channels, Report};
    let server = BotServer::start(TOKEN).await?;
    let setup = Setup::new(&server, json!({"turns": []}), "", "")?;
    let running = setup.start()?;
    paired(&server, &setup, ADA).await?;
    paired(&server, &setup, 77).await?;
    let loaded = setup.loaded()?;
    let out = mnemo::channels::telegram::deliver::TelegramDelivery::new(
        mnemo::channels::telegram::api::BotApi::new(&server.base_url(), TOKEN),
        loaded.store()?,
    );
    let channels =
        Channels::new(Arc::new(Log::new(SharedBuffer::default()))).with_telegram(Arc::new(out));
    let report = |text: &str| Report {
        job: "heartbeat inbox".into(),
        session_id: "s1".into(),
        text: text.into(),
    };
    channels
        .deliver(Channel::parse("telegram")?, &report("3 new mails <urgent>"))
        .await?;
    channels
        .deliver(
            Channel::parse(&format!("telegram:{ADA}"))?,
            &report("only for Ada"),
        )
        .await?;
    for chat in [ADA, 77] {
        shown(&server, chat, "heartbeat inbox\n\n3 new mails <urgent>").await?;
    }
    shown(&server, ADA, "only for Ada").await?;
    assert!(
        !server
            .messages(77)
            .iter()
            .any(|m| m.text.contains("only for Ada"))
    );
    let unpaired = channels
        .deliver(Channel::parse("telegram:999")?, &report("nobody"))
        .await;
    assert!(unpaired.is_err_and(|e| e.to_string().contains("not paired")));
    running.stop().await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reply_telegram_cannot_parse_goes_out_as_plain_text() -> TestResult {
    let server = BotServer::start(TOKEN).await?;
    let script = json!({"turns": [{"when": "quote", "chunks": ["> **quoted** `code` & more"]}]});
    let setup = Setup::new(&server, script, "", "")?;
    let running = setup.start()?;
    paired(&server, &setup, ADA).await?;
    server.fail_next(
        "sendMessage",
        400,
        "Bad Request: can't parse entities: unsupported start tag \"pre\"",
        None,
    );
    server.send_text(ADA, "quote me");
    let reply = shown(&server, ADA, "quoted code & more").await?;
    assert_eq!(reply.parse_mode, None, "sent again without formatting");
    let refused = server
        .calls_of("sendMessage")
        .into_iter()
        .filter(|c| c.status == Some(400))
        .count();
    assert_eq!(refused, 1);
    running.stop().await
}

/// Strangers' chats, more than may wait at once, cannot keep the owner from pairing: the
/// owner's chat still gets a code, the oldest stranger's code gave way, and the store holds
/// no more codes than the bound.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_crowd_of_unpaired_chats_cannot_keep_the_owner_from_pairing() -> TestResult {
    let server = BotServer::start(TOKEN).await?;
    let setup = Setup::new(&server, json!({"turns": []}), "", "")?;
    let running = setup.start()?;
    let strangers: Vec<i64> = (0..80).map(|i| 90_000 + i).collect();
    for &chat in &strangers {
        server.send_text(chat, "let me in");
    }
    let first = pairing_code(&server, strangers[0]).await?;
    for &chat in &strangers[1..] {
        pairing_code(&server, chat).await?;
    }

    server.send_text(ADA, "hello, it is me");
    let code = pairing_code(&server, ADA).await?;
    let said = setup.pair(&code).await?;
    assert!(said.contains(&format!("chat {ADA}")), "{said}");
    assert!(
        setup.pair(&first).await.is_err(),
        "the oldest stranger's code gave way"
    );
    let waiting = running
        .loaded
        .store()?
        .call(|db| {
            let codes = (0..80)
                .filter_map(|i| db.telegram_pairing(90_000 + i).transpose())
                .collect::<Result<Vec<_>, _>>()?;
            Ok(codes.len())
        })
        .await?;
    assert!(
        waiting < mnemo::channels::telegram::pairing::MAX_WAITING,
        "{waiting} codes wait"
    );
    running.stop().await?;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stream_cut_and_retried_shows_the_reply_once() -> TestResult {
    let server = BotServer::start(TOKEN).await?;
    let model = common::flaky_server().await?;
    // The retry waits long enough for the broken first attempt to reach the chat.
    let config = "[retry]\nbase_delay_secs = 1.5\nmax_delay_secs = 2.0\n";
    let mut setup = Setup::new(&server, json!({"turns": []}), config, "")?;
    setup.cli.model = Some("local-coder".into());
    setup.cli.provider = Some(mnemo::config::ProviderKind::OpenAi);
    setup.cli.base_url = Some(format!("{}/v1", model.base_url));
    let running = setup.start()?;
    paired(&server, &setup, ADA).await?;

    server.send_text(ADA, "say hello");
    let reply = shown(&server, ADA, "flaky mock").await?;
    assert_eq!(reply.text.trim(), common::FLAKY_ANSWER);
    assert_eq!(model.requests().len(), 2, "the cut stream was asked again");
    let texts: Vec<String> = server.messages(ADA).into_iter().map(|m| m.text).collect();
    assert!(
        texts.iter().all(|t| !t.contains("Hello from Hello")),
        "the broken attempt's text stayed: {texts:?}"
    );
    running.stop().await
}
