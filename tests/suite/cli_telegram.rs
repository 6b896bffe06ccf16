//! `mnemo telegram pair|list|unpair` through the real binary, and a schedule the agent makes
//! that reports to Telegram.

use crate::cli_support;
use crate::telegram_support;

use cli_support::{Workspace, text};
use mnemo::config::Dirs;
use mnemo::memory::telegram::Pairing;
use serde_json::json;
use telegram_support::BotServer;

type TestResult = Result<(), Box<dyn std::error::Error>>;

fn store(ws: &Workspace) -> Result<mnemo::memory::Store, Box<dyn std::error::Error>> {
    let dirs = Dirs {
        config: Some(ws.path().join(".cfg")),
        data: Some(ws.path().join(".data")),
    };
    let loaded = mnemo::host::load_config_from(&dirs, ws.path(), &Default::default())?;
    Ok(loaded.store()?)
}

/// What the channel stores when it sends chat `chat` a code.
fn code_sent(ws: &Workspace, chat: i64, code: &str, age_ms: i64) -> TestResult {
    let now = chrono::Utc::now().timestamp_millis() - age_ms;
    let pairing = Pairing {
        chat_id: chat,
        code: code.into(),
        name: "Ada (@ada)".into(),
        created_at: now,
        sent_at: now,
    };
    store(ws)?.call_blocking(move |db| db.put_telegram_pairing(&pairing, 0, 20))?;
    Ok(())
}

#[test]
fn a_chat_is_paired_with_its_code_listed_and_unpaired() -> TestResult {
    let ws = Workspace::new();
    code_sent(&ws, 4242, "ABCD2345", 0)?;
    code_sent(&ws, 77, "OLDC0DE9", 2 * 3_600_000)?;

    let out = ws.mnemo(&["telegram", "pair", "wrong123"], None);
    assert_eq!(out.status.code(), Some(1));
    assert!(text(&out.stderr).contains("no chat waits with that code"));
    let out = ws.mnemo(&["telegram", "pair", "OLDC0DE9"], None);
    assert_eq!(out.status.code(), Some(1), "an expired code does not pair");

    let out = ws.mnemo(&["telegram", "pair", "abcd2345"], None);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let said = text(&out.stdout);
    assert!(said.starts_with("Paired Ada (@ada) (chat 4242)."), "{said}");
    assert!(said.contains("[telegram] enabled is false"), "{said}");
    let again = ws.mnemo(&["telegram", "pair", "ABCD2345"], None);
    assert_eq!(again.status.code(), Some(1), "a code works once");

    let listed = text(&ws.mnemo(&["telegram", "list"], None).stdout);
    assert!(
        listed.contains("4242") && listed.contains("Ada (@ada)"),
        "{listed}"
    );
    assert!(listed.contains("no session yet"), "{listed}");
    assert!(!listed.contains("77 "), "{listed}");
    assert!(
        listed.contains("channel: disabled (has not run)"),
        "{listed}"
    );

    let out = ws.mnemo(&["telegram", "unpair", "4242"], None);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let out = ws.mnemo(&["telegram", "unpair", "4242"], None);
    assert_eq!(out.status.code(), Some(1));
    let listed = text(&ws.mnemo(&["telegram", "list"], None).stdout);
    assert!(listed.starts_with("No paired chats."), "{listed}");

    let status = text(&ws.mnemo(&["status"], None).stdout);
    assert!(status.contains("telegram: disabled"), "{status}");
    Ok(())
}

#[test]
fn a_schedule_can_report_to_telegram_and_a_bad_channel_is_refused() -> TestResult {
    let ws = Workspace::new();
    let call = |arguments: serde_json::Value| json!({"tool_calls": [{"name": "schedule_create", "arguments": arguments}]});
    let model = ws.script(json!({"turns": [
        call(json!({"when": "in 2h", "prompt": "check the deploy", "deliver": ["telegram:4242"]})),
        call(json!({"when": "in 2h", "prompt": "x", "deliver": ["pigeon"]})),
        {"text": "Done."}
    ]}));
    let out = ws.mnemo(
        &[
            "--model",
            &model,
            "--approval",
            "auto",
            "run",
            "--json",
            "remind me",
        ],
        None,
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    let stdout = text(&out.stdout);
    assert!(stdout.contains("created schedule #1"), "{stdout}");
    assert!(
        stdout.contains("unknown delivery channel `pigeon`"),
        "{stdout}"
    );
    let rows = store(&ws)?.call_blocking(|db| db.list_schedules())?;
    let deliver: Vec<Vec<String>> = rows.into_iter().map(|r| r.deliver).collect();
    assert_eq!(deliver, [vec!["telegram:4242".to_string()]]);
    Ok(())
}

#[test]
fn with_the_channel_off_list_and_pair_say_how_to_turn_it_on() -> TestResult {
    let ws = Workspace::new();
    let listed = text(&ws.mnemo(&["telegram", "list"], None).stdout);
    assert!(listed.starts_with("No paired chats."), "{listed}");
    assert!(!listed.contains("Message the bot"), "{listed}");
    for how in [
        "enabled = true",
        "[telegram]",
        "$TELEGRAM_BOT_TOKEN",
        "mnemo serve",
    ] {
        assert!(listed.contains(how), "{how}: {listed}");
    }
    assert!(
        listed.contains(".cfg/config.toml"),
        "names the file: {listed}"
    );

    let out = ws.mnemo(&["telegram", "pair", "ABCD2345"], None);
    assert_eq!(out.status.code(), Some(1));
    let said = text(&out.stderr);
    assert!(said.contains("no chat waits with that code"), "{said}");
    assert!(!said.contains("send the bot a message"), "{said}");
    assert!(
        said.contains("enabled = true") && said.contains("$TELEGRAM_BOT_TOKEN"),
        "{said}"
    );
    Ok(())
}

#[test]
fn after_pairing_the_bot_tells_the_chat() -> TestResult {
    const TOKEN: &str = "123:pairing-test";
    let runtime = tokio::runtime::Runtime::new()?;
    let server = runtime.block_on(BotServer::start(TOKEN))?;
    let ws = Workspace::new();
    std::fs::create_dir_all(ws.path().join(".cfg"))?;
    ws.write(
        ".cfg/config.toml",
        &format!(
            "[telegram]\nenabled = true\nbase_url = \"{}\"\n",
            server.base_url()
        ),
    );
    code_sent(&ws, 4242, "ABCD2345", 0)?;
    let out = ws.mnemo_with(
        &["telegram", "pair", "ABCD2345"],
        None,
        &[("TELEGRAM_BOT_TOKEN", TOKEN)],
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    let said = text(&out.stdout);
    assert!(
        said.contains("The bot told the chat it is paired."),
        "{said}"
    );
    let told: Vec<String> = server.messages(4242).into_iter().map(|m| m.text).collect();
    assert_eq!(told.len(), 1, "{told:?}");
    assert!(told[0].starts_with("Paired with mnemo on "), "{told:?}");
    assert!(told[0].contains("mnemo serve"), "{told:?}");
    Ok(())
}

#[test]
fn a_terminal_without_the_token_has_the_daemon_tell_the_chat() -> TestResult {
    const TOKEN: &str = "123:daemon-test";
    let runtime = tokio::runtime::Runtime::new()?;
    let server = runtime.block_on(BotServer::start(TOKEN))?;
    let ws = Workspace::new();
    std::fs::create_dir_all(ws.path().join(".cfg"))?;
    ws.write(
        ".cfg/config.toml",
        &format!(
            "[telegram]\nenabled = true\nbase_url = \"{}\"\npoll_timeout_secs = 1\n",
            server.base_url()
        ),
    );
    let mut daemon = ws
        .command(&["serve"])
        .env("TELEGRAM_BOT_TOKEN", TOKEN)
        .spawn()?;
    let log = ws.path().join(".data/serve.log");
    cli_support::wait_for("the channel polling", || {
        std::fs::read_to_string(&log).is_ok_and(|l| l.contains("polling for messages"))
    })?;
    code_sent(&ws, 4242, "ABCD2345", 0)?;
    let out = ws
        .command(&["telegram", "pair", "ABCD2345"])
        .env_remove("TELEGRAM_BOT_TOKEN")
        .output()?;
    // SAFETY: stops the daemon this test started.
    unsafe { libc::kill(daemon.id() as libc::pid_t, libc::SIGTERM) };
    daemon.wait()?;
    assert!(out.status.success(), "{}", text(&out.stderr));
    let said = text(&out.stdout);
    assert!(
        said.contains("The bot told the chat it is paired."),
        "{said}"
    );
    let told: Vec<String> = server.messages(4242).into_iter().map(|m| m.text).collect();
    assert!(
        told.iter().any(|t| t.starts_with("Paired with mnemo on ")),
        "{told:?}"
    );
    Ok(())
}
