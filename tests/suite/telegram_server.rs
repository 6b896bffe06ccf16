//! The in-test Telegram server behaves as the Bot API does where the channel depends on it:
//! long polling and offsets, HTML checking, limits, scripted failures and edits.

use crate::telegram_support;

use std::time::{Duration, Instant};

use mnemo::channels::telegram::format::{MESSAGE_LIMIT, render};
use serde_json::{Value, json};
use telegram_support::BotServer;

type TestResult = Result<(), Box<dyn std::error::Error>>;

const TOKEN: &str = "123456:test-token";

async fn post(
    server: &BotServer,
    method: &str,
    body: Value,
) -> Result<(u16, Value), reqwest::Error> {
    post_as(&reqwest::Client::new(), server, TOKEN, method, body).await
}

async fn post_as(
    client: &reqwest::Client,
    server: &BotServer,
    token: &str,
    method: &str,
    body: Value,
) -> Result<(u16, Value), reqwest::Error> {
    let url = format!("{}/bot{token}/{method}", server.base_url());
    let response = client.post(url).json(&body).send().await?;
    let status = response.status().as_u16();
    Ok((status, response.json().await?))
}

fn description(answer: &Value) -> &str {
    answer["description"].as_str().unwrap_or_default()
}

#[tokio::test]
async fn a_long_poll_is_held_and_answers_as_soon_as_an_update_arrives() -> TestResult {
    let server = BotServer::start(TOKEN).await?;
    let client = reqwest::Client::new();
    let started = Instant::now();
    let poll = {
        let client = client.clone();
        let url = format!("{}/bot{TOKEN}/getUpdates", server.base_url());
        tokio::spawn(async move { client.post(url).json(&json!({"timeout": 30})).send().await })
    };
    server
        .wait_until(Duration::from_secs(5), |s| {
            (!s.calls().is_empty()).then_some(())
        })
        .await
        .ok_or("the poll never arrived")?;

    // The held poll does not block other requests.
    let (status, _) = post_as(
        &client,
        &server,
        TOKEN,
        "sendChatAction",
        json!({"chat_id": 42, "action": "typing"}),
    )
    .await?;
    assert_eq!(status, 200);
    assert!(!poll.is_finished(), "the poll answered before any update");

    let update_id = server.send_text(42, "hello");
    let answer: Value = poll.await??.json().await?;
    assert!(started.elapsed() < Duration::from_secs(5));
    assert_eq!(answer["result"][0]["update_id"], update_id);
    assert_eq!(answer["result"][0]["message"]["text"], "hello");
    assert_eq!(answer["result"][0]["message"]["chat"]["id"], 42);

    // Connections are kept alive and reused.
    post_as(&client, &server, TOKEN, "getMe", json!({})).await?;
    assert_eq!(server.connections(), 2);
    Ok(())
}

#[tokio::test]
async fn an_offset_confirms_the_updates_before_it_for_good() -> TestResult {
    let server = BotServer::start(TOKEN).await?;
    server.send_text(7, "one");
    let last = server.send_text(7, "two");

    let (_, answer) = post(&server, "getUpdates", json!({})).await?;
    assert_eq!(answer["result"].as_array().map(Vec::len), Some(2));
    assert_eq!(
        server.pending_updates(),
        2,
        "nothing is confirmed without an offset"
    );

    let (_, answer) = post(&server, "getUpdates", json!({"offset": last, "timeout": 0})).await?;
    assert_eq!(answer["result"][0]["message"]["text"], "two");
    let (_, answer) = post(&server, "getUpdates", json!({"offset": last + 1})).await?;
    assert_eq!(answer["result"], json!([]));
    assert_eq!(server.pending_updates(), 0);
    Ok(())
}

#[tokio::test]
async fn html_is_checked_as_telegram_parses_it() -> TestResult {
    let server = BotServer::start(TOKEN).await?;
    for bad in [
        "<x>hi</x>",
        "fish & chips",
        "a < b",
        "<b>open",
        "<b><i>crossed</b></i>",
    ] {
        let (status, answer) = post(
            &server,
            "sendMessage",
            json!({"chat_id": 5, "text": bad, "parse_mode": "HTML"}),
        )
        .await?;
        assert_eq!(status, 400, "{bad}");
        assert!(
            description(&answer).starts_with("Bad Request: can't parse entities: "),
            "{answer}"
        );
    }
    let good = "<b>bold</b> &amp; <a href=\"https://e.com/?a=1&amp;b=&quot;2&quot;\">link</a> &lt;3\n<pre><code class=\"language-rust\">x &gt; 1</code></pre>";
    let (status, answer) = post(
        &server,
        "sendMessage",
        json!({"chat_id": 5, "text": good, "parse_mode": "HTML"}),
    )
    .await?;
    assert_eq!(status, 200, "{answer}");
    let messages = server.messages(5);
    assert_eq!(messages.len(), 1, "refused messages are not stored");
    assert_eq!(messages[0].text, "bold & link <3\nx > 1");
    assert_eq!(
        messages[0].entities[1].attr.as_deref(),
        Some("https://e.com/?a=1&b=\"2\"")
    );
    assert_eq!(answer["result"]["text"], "bold & link <3\nx > 1");
    Ok(())
}

#[tokio::test]
async fn empty_and_overlong_messages_are_refused() -> TestResult {
    let server = BotServer::start(TOKEN).await?;
    let (status, answer) = post(
        &server,
        "sendMessage",
        json!({"chat_id": 5, "text": "a".repeat(5000)}),
    )
    .await?;
    assert_eq!(
        (status, description(&answer)),
        (400, "Bad Request: message is too long")
    );
    // The limit counts what the chat shows, in UTF-16 units: tags are free, an emoji is two.
    let fits = format!("<b>{}</b>", "😀".repeat(MESSAGE_LIMIT / 2));
    let (status, _) = post(
        &server,
        "sendMessage",
        json!({"chat_id": 5, "text": fits, "parse_mode": "HTML"}),
    )
    .await?;
    assert_eq!(status, 200);
    let (status, _) = post(
        &server,
        "sendMessage",
        json!({"chat_id": 5, "text": format!("{fits}!"), "parse_mode": "HTML"}),
    )
    .await?;
    assert_eq!(status, 400);
    let (status, answer) = post(
        &server,
        "sendMessage",
        json!({"chat_id": 5, "text": " \n<b> </b>", "parse_mode": "HTML"}),
    )
    .await?;
    assert_eq!(
        (status, description(&answer)),
        (400, "Bad Request: message text is empty")
    );
    Ok(())
}

#[tokio::test]
async fn scripted_failures_and_a_revoked_token_answer_as_telegram_does() -> TestResult {
    let server = BotServer::start(TOKEN).await?;
    server.fail_next(
        "sendMessage",
        429,
        "Too Many Requests: retry after 3",
        Some(3),
    );
    let body = json!({"chat_id": 9, "text": "hi"});
    let (status, answer) = post(&server, "sendMessage", body.clone()).await?;
    assert_eq!(status, 429);
    assert_eq!(answer["parameters"]["retry_after"], 3);
    assert_eq!(answer["ok"], false);
    assert!(
        server.messages(9).is_empty(),
        "a refused call has no effect"
    );
    let (status, _) = post(&server, "sendMessage", body.clone()).await?;
    assert_eq!(status, 200, "only the next call fails");

    let (status, answer) = post_as(
        &reqwest::Client::new(),
        &server,
        "123456:wrong",
        "getMe",
        json!({}),
    )
    .await?;
    assert_eq!((status, description(&answer)), (404, "Not Found"));
    server.revoke_token();
    let (status, answer) = post(&server, "getMe", json!({})).await?;
    assert_eq!((status, description(&answer)), (401, "Unauthorized"));

    let statuses: Vec<Option<u16>> = server.calls().iter().map(|c| c.status).collect();
    assert_eq!(statuses, [Some(429), Some(200), Some(404), Some(401)]);
    Ok(())
}

#[tokio::test]
async fn editing_to_the_same_content_is_not_modified() -> TestResult {
    let server = BotServer::start(TOKEN).await?;
    let keyboard = json!({"inline_keyboard": [[{"text": "Allow", "callback_data": "allow:1"}]]});
    let (_, sent) = post(&server, "sendMessage", json!({"chat_id": 3, "text": "<b>Run it?</b>", "parse_mode": "HTML", "reply_markup": keyboard})).await?;
    let id = sent["result"]["message_id"]
        .as_i64()
        .ok_or("no message id")?;

    let same = json!({"chat_id": 3, "message_id": id, "text": "<strong>Run it?</strong>", "parse_mode": "HTML", "reply_markup": keyboard});
    let (status, answer) = post(&server, "editMessageText", same).await?;
    assert_eq!(status, 400);
    assert!(description(&answer).starts_with("Bad Request: message is not modified"));

    // Without reply_markup the keyboard goes, which is a change.
    let (status, _) = post(
        &server,
        "editMessageText",
        json!({"chat_id": 3, "message_id": id, "text": "<b>Run it?</b>", "parse_mode": "HTML"}),
    )
    .await?;
    assert_eq!(status, 200);
    let (status, answer) = post(
        &server,
        "editMessageText",
        json!({"chat_id": 3, "message_id": id + 1, "text": "x"}),
    )
    .await?;
    assert_eq!(
        (status, description(&answer)),
        (400, "Bad Request: message to edit not found")
    );

    let message = &server.messages(3)[0];
    assert_eq!((message.edits, message.reply_markup.is_null()), (1, true));

    let (_, query) = server.press_button(3, id, "allow:1");
    let (status, _) = post(
        &server,
        "answerCallbackQuery",
        json!({"callback_query_id": query}),
    )
    .await?;
    assert_eq!(status, 200);
    let (status, _) = post(
        &server,
        "answerCallbackQuery",
        json!({"callback_query_id": query}),
    )
    .await?;
    assert_eq!(status, 400, "a query is answered once");
    Ok(())
}

#[tokio::test]
async fn rendered_markdown_is_accepted_by_the_server() -> TestResult {
    let server = BotServer::start(TOKEN).await?;
    let mut markdown = String::from(
        "# Fix <script> & \"quotes\"\n\nIf a < b && c > d, run `x<y>&z`:\n\n\
         ```c++\nif (a < b && c > d) { return &x; }\n```\n\n\
         > **Note** *careful* ~~old~~ [link](https://e.com/?a=1&b=\"2\") [bad](javascript:x)\n\n\
         - one &amp; two\n  1. nested <i>html</i>\n\n\
         | col <1> | & |\n|---|---|\n| 😀 | x |\n\n---\n\n*unclosed **mixed _ markers ` & < >",
    );
    markdown.push_str(&"\n\nMore text with 😀 emoji & <tags> *and* `code`. ".repeat(150));
    let chunks = render(&markdown, MESSAGE_LIMIT);
    assert!(chunks.len() > 1);
    for chunk in &chunks {
        let (status, answer) = post(
            &server,
            "sendMessage",
            json!({"chat_id": 1, "text": chunk.html, "parse_mode": "HTML"}),
        )
        .await?;
        assert_eq!(status, 200, "{answer} for {}", chunk.html);
    }
    let shown: Vec<String> = server.messages(1).into_iter().map(|m| m.text).collect();
    let plain: Vec<String> = chunks.iter().map(|c| c.plain.trim().to_string()).collect();
    assert_eq!(shown, plain, "the plain text is what the chat shows");
    Ok(())
}
