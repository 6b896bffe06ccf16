//! The Telegram channel against an in-test Bot API server on the loopback that speaks the
//! real wire format (and refuses bad HTML as Telegram does): pairing, a streamed reply edited
//! in place, long replies, approvals with buttons, /stop and injected messages, a restart
//! between two updates, a 429 and a revoked token.

mod common;
mod jobs_support;
mod telegram_support;

use std::sync::Arc;
use std::time::Duration;

use jobs_support::SharedBuffer;
use mnemo::config::{CliOverrides, Dirs};
use mnemo::host::SessionHost;
use mnemo::jobs::delivery::Log;
use mnemo::launch::Loaded;
use serde_json::{Value, json};
use telegram_support::BotServer;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

type TestResult = Result<(), Box<dyn std::error::Error>>;
type AnyResult<T> = Result<T, Box<dyn std::error::Error>>;

const TOKEN: &str = "123456:test-token";
const ADA: i64 = 4242;
const WAIT: Duration = Duration::from_secs(20);

/// A data directory, config and script that outlive channel restarts.
struct Setup {
    dir: tempfile::TempDir,
    cli: CliOverrides,
    dirs: Dirs,
}

impl Setup {
    /// `config` goes at the top of the config file, `telegram` into its `[telegram]`.
    fn new(server: &BotServer, script: Value, config: &str, telegram: &str) -> AnyResult<Setup> {
        let dir = tempfile::tempdir()?;
        let (cfg, data, ws) = (
            dir.path().join("cfg"),
            dir.path().join("data"),
            dir.path().join("ws"),
        );
        for d in [&cfg, &data, &ws] {
            std::fs::create_dir_all(d)?;
        }
        let config = format!(
            "{config}\n[telegram]\nenabled = true\nbase_url = \"{}\"\npoll_timeout_secs = 5\n{telegram}",
            server.base_url()
        );
        std::fs::write(cfg.join("config.toml"), config)?;
        let script_path = dir.path().join("script.json");
        std::fs::write(&script_path, script.to_string())?;
        let cli = CliOverrides {
            model: Some(format!("scripted:{}", script_path.display())),
            ..Default::default()
        };
        let dirs = Dirs {
            config: Some(cfg),
            data: Some(data),
        };
        Ok(Setup { dir, cli, dirs })
    }

    fn workspace(&self) -> std::path::PathBuf {
        self.dir.path().join("ws")
    }

    fn loaded(&self) -> AnyResult<Loaded> {
        Ok(mnemo::launch::load_config_from(
            &self.dirs,
            &self.workspace(),
            &self.cli,
        )?)
    }

    /// Starts the channel as `mnemo serve` would.
    fn start(&self) -> AnyResult<Running> {
        let loaded = Arc::new(self.loaded()?);
        let host = SessionHost::new();
        let cancel = CancellationToken::new();
        let log = SharedBuffer::default();
        let ctx = mnemo::channels::telegram::Ctx::with_token(
            loaded.clone(),
            host.clone(),
            self.cli.clone(),
            Arc::new(Log::new(log.clone())),
            cancel.clone(),
            TOKEN,
        )?;
        let task = tokio::spawn(mnemo::channels::telegram::run(Arc::new(ctx)));
        Ok(Running {
            loaded,
            host,
            cancel,
            log,
            task: Some(task),
        })
    }

    /// `mnemo telegram pair CODE` (a blocking command, as the binary runs it).
    async fn pair(&self, code: &str) -> AnyResult<String> {
        let (dirs, workspace, cli) = (self.dirs.clone(), self.workspace(), self.cli.clone());
        let code = code.to_string();
        let paired = tokio::task::spawn_blocking(move || {
            let loaded = mnemo::launch::load_config_from(&dirs, &workspace, &cli)
                .map_err(|e| e.to_string())?;
            let mut out = Vec::new();
            mnemo::commands::telegram::pair(&loaded, &code, &mut out).map_err(|e| e.to_string())?;
            String::from_utf8(out).map_err(|e| e.to_string())
        })
        .await?;
        Ok(paired?)
    }
}

struct Running {
    loaded: Arc<Loaded>,
    host: SessionHost,
    cancel: CancellationToken,
    log: SharedBuffer,
    task: Option<JoinHandle<()>>,
}

impl Running {
    async fn stop(mut self) -> AnyResult<()> {
        self.cancel.cancel();
        if let Some(task) = self.task.take() {
            tokio::time::timeout(WAIT, task).await??;
        }
        self.host.stop_all(Duration::from_secs(5)).await;
        Ok(())
    }

    /// The user messages stored in the chat's current session.
    async fn user_messages(&self, chat: i64) -> AnyResult<Vec<String>> {
        let store = self.loaded.store()?;
        let texts = store
            .call(move |db| {
                let Some(session) = db.paired_chat(chat)?.and_then(|c| c.session_id) else {
                    return Ok(Vec::new());
                };
                let messages = db.all_messages(&session)?;
                Ok(messages
                    .into_iter()
                    .filter(|m| m.message.role == mnemo::llm::Role::User)
                    .map(|m| m.message.text())
                    .filter(|text| !text.is_empty())
                    .collect())
            })
            .await?;
        Ok(texts)
    }
}

/// The code in the pairing message the bot sent `chat`.
async fn pairing_code(server: &BotServer, chat: i64) -> AnyResult<String> {
    let message = server
        .wait_until(WAIT, |s| {
            s.messages(chat)
                .into_iter()
                .find(|m| m.text.contains("mnemo telegram pair"))
        })
        .await
        .ok_or("no pairing code was sent")?;
    let code = message
        .text
        .split("mnemo telegram pair ")
        .nth(1)
        .and_then(|rest| rest.split_whitespace().next())
        .ok_or("no code in the message")?;
    Ok(code.to_string())
}

/// Pairs `chat` through the bot and the terminal command.
async fn paired(server: &BotServer, setup: &Setup, chat: i64) -> AnyResult<()> {
    server.send_text(chat, "hi");
    let code = pairing_code(server, chat).await?;
    setup.pair(&code).await?;
    Ok(())
}

/// The bot's last message in `chat` once it contains `text`.
async fn shown(
    server: &BotServer,
    chat: i64,
    text: &str,
) -> AnyResult<telegram_support::BotMessage> {
    let found = server
        .wait_until(WAIT, |s| {
            s.messages(chat)
                .into_iter()
                .rev()
                .find(|m| m.text.contains(text))
        })
        .await;
    Ok(found.ok_or_else(|| {
        format!(
            "no message with {text:?}; the chat shows {:?}",
            server
                .messages(chat)
                .iter()
                .map(|m| m.text.clone())
                .collect::<Vec<_>>()
        )
    })?)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stranger_gets_only_a_code_and_once_paired_gets_a_reply_edited_in_place() -> TestResult {
    let server = BotServer::start(TOKEN).await?;
    let words: Vec<String> = (0..30).map(|i| format!("word{i} ")).collect();
    let script = json!({"turns": [{"when": "what is up", "chunks": words, "delay_ms": 100}]});
    let setup = Setup::new(&server, script, "", "")?;
    let running = setup.start()?;

    server.send_text(ADA, "what is up?");
    let code = pairing_code(&server, ADA).await?;
    server.send_text(ADA, "hello? anyone?");
    server
        .wait_until(WAIT, |s| (s.pending_updates() == 0).then_some(()))
        .await
        .ok_or("the updates were not taken")?;
    tokio::time::sleep(Duration::from_millis(300)).await;
    let before = server.messages(ADA);
    assert_eq!(
        before.len(),
        1,
        "a stranger gets one code and nothing else: {before:?}"
    );
    assert!(running.host.live().is_empty(), "no session for a stranger");
    assert!(running.user_messages(ADA).await?.is_empty());

    let said = setup.pair(&code).await?;
    assert!(said.contains(&format!("chat {ADA}")), "{said}");
    assert!(setup.pair(&code).await.is_err(), "a code works once");

    server.send_text(ADA, "what is up now?");
    let reply = shown(&server, ADA, "word29").await?;
    let full: String = (0..30).map(|i| format!("word{i} ")).collect();
    assert_eq!(reply.text.trim(), full.trim());
    assert!(reply.edits >= 1, "the reply grew by edits: {reply:?}");
    let messages = server.messages(ADA);
    assert_eq!(
        messages.len(),
        2,
        "one code, then one reply message: {messages:?}"
    );
    for pair in reply.edit_times.windows(2) {
        let gap = pair[1].duration_since(pair[0]);
        assert!(gap >= Duration::from_millis(990), "edits {gap:?} apart");
    }
    assert_eq!(
        running.user_messages(ADA).await?,
        ["what is up now?"],
        "only the paired chat's message reached the agent"
    );
    running.stop().await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_long_reply_with_code_and_characters_to_escape_arrives_whole() -> TestResult {
    let server = BotServer::start(TOKEN).await?;
    let mut reply = String::from("Here is what <b>I</b> found & fixed: a_b*c `x < y`.\n\n");
    let mut lines = Vec::new();
    for block in 0..6 {
        reply.push_str(&format!(
            "Step {block}: if a < b && c > d then _go_ *on*.\n\n```rust\n"
        ));
        for line in 0..12 {
            let code = format!("let v{block}_{line} = a < b && c > \"d\"; // <tag> & more");
            reply.push_str(&code);
            reply.push('\n');
            lines.push(code);
        }
        reply.push_str("```\n\n");
    }
    while reply.chars().count() < 6000 {
        reply.push_str("Padding with **bold** and [a link](https://example.com/?a=1&b=2).\n\n");
    }
    let script = json!({"turns": [{"when": "long", "text": reply}]});
    let setup = Setup::new(&server, script, "", "")?;
    let running = setup.start()?;
    paired(&server, &setup, ADA).await?;

    server.send_text(ADA, "a long one please");
    let last = shown(&server, ADA, "Padding with").await?;
    // Let the final edits land.
    tokio::time::sleep(Duration::from_millis(1500)).await;
    let messages = server.messages(ADA);
    let reply_messages: Vec<_> = messages.iter().skip(1).collect();
    assert!(
        reply_messages.len() >= 2,
        "6,000 characters need two messages"
    );
    assert!(
        reply_messages
            .iter()
            .all(|m| m.parse_mode.as_deref() == Some("HTML"))
    );
    let shown_text: String = reply_messages.iter().map(|m| m.text.as_str()).collect();
    for line in &lines {
        assert!(shown_text.contains(line.as_str()), "missing {line:?}");
    }
    assert!(shown_text.contains("Here is what <b>I</b> found & fixed: a_b*c x < y."));
    assert!(last.raw.len() <= 4096 * 2);
    running.stop().await
}

/// Waits for the question's message and returns its buttons' data.
async fn question(server: &BotServer, chat: i64) -> AnyResult<(i64, Vec<String>)> {
    let message = shown(server, chat, "wants to").await?;
    let buttons: Vec<String> = message.reply_markup["inline_keyboard"]
        .as_array()
        .into_iter()
        .flatten()
        .flat_map(|row| row.as_array().cloned().unwrap_or_default())
        .filter_map(|b| b["callback_data"].as_str().map(str::to_string))
        .collect();
    Ok((message.message_id, buttons))
}

fn write_script() -> Value {
    json!({"turns": [
        {"when": "write", "tool_calls": [{"name": "write_file",
            "arguments": {"path": "note.txt", "content": "from the phone"}}]},
        {"text": "Done with the file."}
    ]})
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_approval_is_answered_with_a_button() -> TestResult {
    let server = BotServer::start(TOKEN).await?;
    let setup = Setup::new(&server, write_script(), "approval = \"ask\"\n", "")?;
    let running = setup.start()?;
    paired(&server, &setup, ADA).await?;

    server.send_text(ADA, "write the note");
    let tool = shown(&server, ADA, "write_file").await?;
    assert!(
        tool.text.contains("note.txt"),
        "the tool line: {}",
        tool.text
    );
    let (question_id, buttons) = question(&server, ADA).await?;
    assert_eq!(
        buttons.len(),
        3,
        "allow once, for the session, deny: {buttons:?}"
    );
    let allow = buttons
        .iter()
        .find(|b| b.starts_with("o:"))
        .ok_or("no allow-once button")?;
    let (_, query) = server.press_button(ADA, question_id, allow);

    shown(&server, ADA, "Done with the file.").await?;
    let written = std::fs::read_to_string(setup.workspace().join("note.txt"))?;
    assert_eq!(written, "from the phone");
    let asked = server
        .messages(ADA)
        .into_iter()
        .find(|m| m.message_id == question_id)
        .ok_or("the question is gone")?;
    assert!(asked.text.contains("Allowed once"), "{}", asked.text);
    assert_eq!(
        asked.reply_markup["inline_keyboard"],
        json!([]),
        "buttons removed"
    );
    let answered = server
        .calls()
        .into_iter()
        .any(|c| c.method == "answerCallbackQuery" && c.body["callback_query_id"] == json!(query));
    assert!(answered, "the button's spinner was stopped");
    running.stop().await
}

/// The ten-minute default is tested on a paused clock in `telegram::questions`; here a short
/// timeout goes through the whole channel on the real one.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unanswered_approval_is_denied_after_the_timeout() -> TestResult {
    let server = BotServer::start(TOKEN).await?;
    let ask = "approval = \"ask\"\n";
    let setup = Setup::new(&server, write_script(), ask, "approval_timeout_secs = 2\n")?;
    let running = setup.start()?;
    paired(&server, &setup, ADA).await?;

    server.send_text(ADA, "write the note");
    let (question_id, _) = question(&server, ADA).await?;
    let asked_at = std::time::Instant::now();
    let denied = shown(&server, ADA, "Denied: no answer within 2 s.").await?;
    assert_eq!(
        denied.message_id, question_id,
        "the question says how it ended"
    );
    // The deadline was set as the question went out, a little before the test saw it.
    assert!(
        asked_at.elapsed() >= Duration::from_millis(1800),
        "denied only after the timeout"
    );
    shown(&server, ADA, "Done with the file.").await?;
    assert!(
        !setup.workspace().join("note.txt").exists(),
        "a denial writes nothing"
    );
    assert_eq!(
        denied.reply_markup["inline_keyboard"],
        json!([]),
        "buttons removed"
    );
    running.stop().await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stop_interrupts_and_a_message_while_busy_joins_the_turn() -> TestResult {
    let server = BotServer::start(TOKEN).await?;
    let slow: Vec<String> = (0..100).map(|i| format!("slow{i} ")).collect();
    let script = json!({"turns": [
        {"when": "begin", "chunks": ["starting ", "the ", "work "], "delay_ms": 700},
        {"when": "also check", "text": "Checked the logs too."},
        {"when": "long story", "chunks": slow, "delay_ms": 200}
    ]});
    let setup = Setup::new(&server, script, "", "")?;
    let running = setup.start()?;
    paired(&server, &setup, ADA).await?;

    server.send_text(ADA, "begin please");
    shown(&server, ADA, "starting").await?;
    server.send_text(ADA, "also check the logs");
    shown(&server, ADA, "Checked the logs too.").await?;
    let kinds = running.user_messages(ADA).await?;
    assert_eq!(kinds, ["begin please", "also check the logs"]);

    server.send_text(ADA, "tell me a long story");
    shown(&server, ADA, "slow1").await?;
    server.send_text(ADA, "/stop");
    let stopped = shown(&server, ADA, "Stopped.").await?;
    assert!(!stopped.text.contains("slow99"), "the turn ended early");
    running.stop().await
}

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
