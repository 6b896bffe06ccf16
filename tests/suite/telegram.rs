//! The Telegram channel against an in-test Bot API server on the loopback that speaks the
//! real wire format (and refuses bad HTML as Telegram does): pairing, a streamed reply edited
//! in place, long replies, approvals with buttons, /stop and injected messages, /sessions and
//! /resume.

use crate::telegram_channel;
use crate::telegram_support;

use std::time::Duration;

use serde_json::json;
use telegram_channel::*;
use telegram_support::BotServer;

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
async fn sessions_lists_the_chats_sessions_and_resume_finds_one_by_its_short_id() -> TestResult {
    let server = BotServer::start(TOKEN).await?;
    let script = json!({"turns": [
        {"when": "first", "text": "answer one"},
        {"when": "second", "text": "answer two"}
    ]});
    let setup = Setup::new(&server, script, "", "")?;
    let running = setup.start()?;
    paired(&server, &setup, ADA).await?;
    server.send_text(ADA, "first question");
    shown(&server, ADA, "answer one").await?;
    server.send_text(ADA, "/new");
    let started = shown(&server, ADA, "New session").await?;
    server.send_text(ADA, "second question");
    shown(&server, ADA, "answer two").await?;

    server.send_text(ADA, "/sessions");
    let listed = shown(&server, ADA, "Sessions of this chat").await?;
    let rows: Vec<&str> = listed
        .text
        .lines()
        .filter(|l| l.starts_with("• "))
        .collect();
    assert_eq!(rows.len(), 2, "{}", listed.text);
    assert!(
        rows[0].contains("second question ← current") && rows[1].contains("first question"),
        "{}",
        listed.text
    );
    let first: String = rows[1].trim_start_matches("• ").chars().take(8).collect();
    assert!(
        !started.text.contains(&first),
        "the older one is listed second"
    );

    server.send_text(ADA, "/resume nosuchid");
    shown(&server, ADA, "No session nosuchid").await?;
    server.send_text(ADA, &format!("/resume {first}"));
    let resumed = shown(&server, ADA, &format!("Resumed session {first}")).await?;
    assert!(resumed.text.contains("first question"), "{}", resumed.text);
    running.stop().await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_agents_plan_shows_in_the_reply() -> TestResult {
    let server = BotServer::start(TOKEN).await?;
    let script = json!({"turns": [
        {"when": "fix", "tool_calls": [{"name": "todo", "arguments": {"items": [
            {"step": "read the parser", "status": "done"},
            {"step": "fix the bug", "status": "in_progress"}]}}]},
        {"when": "fix", "text": "fixing it"},
    ]});
    let setup = Setup::new(&server, script, "", "")?;
    let running = setup.start()?;
    paired(&server, &setup, ADA).await?;

    server.send_text(ADA, "fix the parser");
    let reply = shown(&server, ADA, "fixing it").await?;
    for line in [
        "☰ Plan · 1 of 2 done",
        "[x] read the parser",
        "[>] fix the bug",
    ] {
        assert!(
            reply.text.contains(line),
            "{line:?} is missing: {}",
            reply.text
        );
    }
    running.stop().await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_agents_question_is_answered_with_a_button() -> TestResult {
    let server = BotServer::start(TOKEN).await?;
    let script = json!({"turns": [
        {"when": "colour", "tool_calls": [{"name": "ask_user", "arguments": {
            "question": "Which colour should the banner be?", "choices": ["red", "blue"]}}]},
        {"when": "colour", "text": "Banner colour noted."},
    ]});
    let setup = Setup::new(&server, script, "", "")?;
    let running = setup.start()?;
    paired(&server, &setup, ADA).await?;

    server.send_text(ADA, "pick a colour for the banner");
    let asked = shown(&server, ADA, "Which colour should the banner be?").await?;
    let buttons: Vec<String> = asked.reply_markup["inline_keyboard"]
        .as_array()
        .into_iter()
        .flatten()
        .flat_map(|row| row.as_array().cloned().unwrap_or_default())
        .filter_map(|b| b["text"].as_str().map(str::to_string))
        .collect();
    assert_eq!(buttons, ["red", "blue"]);
    let blue = asked.reply_markup["inline_keyboard"][1][0]["callback_data"]
        .as_str()
        .ok_or("no button data")?
        .to_string();
    server.press_button(ADA, asked.message_id, &blue);

    shown(&server, ADA, "Banner colour noted.").await?;
    let closed = server
        .messages(ADA)
        .into_iter()
        .find(|m| m.message_id == asked.message_id)
        .ok_or("the question is gone")?;
    assert!(closed.text.contains("blue"), "{}", closed.text);
    assert_eq!(closed.reply_markup["inline_keyboard"], json!([]));
    running.stop().await
}
