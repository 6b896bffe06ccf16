//! The Bot API methods, answered as Telegram answers them: results, errors and their
//! descriptions, long polling. MarkdownV2 is not simulated (the channel sends HTML).

use std::time::{Duration, Instant};

use serde_json::{Value, json};

use super::{BotMessage, Call, Entity, Shared, State, bot_user, chat, html, unix_now};

const MESSAGE_LIMIT: usize = 4096;
const NOT_MODIFIED: &str = "Bad Request: message is not modified: specified new message content and reply markup are exactly the same as a current content and reply markup of the message";

type Answer = (u16, Value);

pub(super) fn error(status: u16, description: &str) -> Answer {
    (
        status,
        json!({"ok": false, "error_code": status, "description": description}),
    )
}

pub(super) fn not_found() -> Answer {
    error(404, "Not Found")
}

fn ok(result: Value) -> Answer {
    (200, json!({"ok": true, "result": result}))
}

/// Records the call, answers it, and records the answer's status.
pub(super) async fn call(shared: &Shared, token: &str, method: &str, body: Value) -> Answer {
    let index = {
        let mut state = shared.state();
        state.calls.push(Call {
            method: method.to_string(),
            body: body.clone(),
            at: Instant::now(),
            status: None,
        });
        state.calls.len() - 1
    };
    let answer = respond(shared, token, method, &body).await;
    if let Some(call) = shared.state().calls.get_mut(index) {
        call.status = Some(answer.0);
    }
    answer
}

async fn respond(shared: &Shared, token: &str, method: &str, body: &Value) -> Answer {
    if token != shared.token {
        return not_found();
    }
    let name = method.to_ascii_lowercase();
    {
        let mut state = shared.state();
        if state.revoked {
            return error(401, "Unauthorized");
        }
        let scripted = state
            .failures
            .iter()
            .position(|f| f.method.eq_ignore_ascii_case(method));
        if let Some(failure) = scripted.and_then(|i| state.failures.remove(i)) {
            let (status, mut answer) = error(failure.status, &failure.description);
            if let Some(seconds) = failure.retry_after {
                answer["parameters"] = json!({ "retry_after": seconds });
            }
            return (status, answer);
        }
    }
    if name == "getupdates" {
        return get_updates(shared, body).await;
    }
    let mut state = shared.state();
    let result = match name.as_str() {
        "getme" => Ok(bot_user()),
        "sendmessage" => send_message(&mut state, body),
        "editmessagetext" => edit_text(&mut state, body),
        "editmessagereplymarkup" => edit_markup(&mut state, body),
        "deletemessage" => delete_message(&mut state, body),
        "answercallbackquery" => answer_query(&mut state, body),
        "sendchataction" => chat_id(body).map(|_| json!(true)),
        "setmycommands" => set_commands(body),
        _ => Err(not_found()),
    };
    result.map_or_else(|answer| answer, ok)
}

async fn get_updates(shared: &Shared, body: &Value) -> Answer {
    let limit = body.get("limit").and_then(Value::as_u64).unwrap_or(100);
    let limit = usize::try_from(limit.clamp(1, 100)).unwrap_or(100);
    let timeout = body.get("timeout").and_then(Value::as_u64).unwrap_or(0);
    let deadline = tokio::time::Instant::now() + Duration::from_secs(timeout);
    let generation = {
        let mut state = shared.state();
        if let Some(allowed) = body.get("allowed_updates").and_then(Value::as_array) {
            state.allowed = allowed
                .iter()
                .filter_map(|kind| kind.as_str().map(str::to_string))
                .collect();
        }
        confirm(&mut state, body.get("offset").and_then(Value::as_i64));
        state.poll_generation += 1;
        state.poll_generation
    };
    shared.wake();
    let mut wake = shared.wake.subscribe();
    loop {
        {
            let mut state = shared.state();
            if state.revoked {
                return error(401, "Unauthorized");
            }
            if state.poll_generation != generation {
                return error(
                    409,
                    "Conflict: terminated by other getUpdates request; make sure that only one bot instance is running",
                );
            }
            let allowed = std::mem::take(&mut state.allowed);
            state.updates.retain(|(_, update)| {
                allowed.is_empty() || allowed.iter().any(|k| update.get(k).is_some())
            });
            state.allowed = allowed;
            let ready: Vec<Value> = state
                .updates
                .iter()
                .take(limit)
                .map(|(_, update)| update.clone())
                .collect();
            if !ready.is_empty() || tokio::time::Instant::now() >= deadline {
                return ok(Value::Array(ready));
            }
        }
        match tokio::time::timeout_at(deadline, wake.changed()).await {
            Ok(Ok(())) | Err(_) => {}
            Ok(Err(_)) => return ok(json!([])),
        }
    }
}

/// Forgets the updates an offset confirms: those before it, or all but the last `-offset`.
fn confirm(state: &mut State, offset: Option<i64>) {
    match offset {
        Some(offset) if offset < 0 => {
            let keep = usize::try_from(offset.unsigned_abs()).unwrap_or(usize::MAX);
            while state.updates.len() > keep {
                state.updates.pop_front();
            }
        }
        Some(offset) => state.updates.retain(|(id, _)| *id >= offset),
        None => {}
    }
}

/// A message's text, formatting and keyboard as Telegram would keep them.
struct Content {
    text: String,
    raw: String,
    parse_mode: Option<String>,
    entities: Vec<Entity>,
    reply_markup: Value,
}

fn content(body: &Value) -> Result<Content, Answer> {
    let raw = body.get("text").and_then(Value::as_str).unwrap_or_default();
    let parse_mode = body
        .get("parse_mode")
        .and_then(Value::as_str)
        .filter(|mode| !mode.is_empty());
    let (text, mut entities) = match parse_mode {
        None => (raw.to_string(), Vec::new()),
        Some(mode) if mode.eq_ignore_ascii_case("html") => html::parse(raw)
            .map_err(|e| error(400, &format!("Bad Request: can't parse entities: {e}")))?,
        Some(_) => return Err(error(400, "Bad Request: unsupported parse_mode")),
    };
    // Telegram trims a message; formatting moves with the text.
    let trimmed = text.trim();
    let cut: usize = text[..text.len() - text.trim_start().len()]
        .encode_utf16()
        .count();
    for entity in &mut entities {
        entity.offset = entity.offset.saturating_sub(cut);
    }
    if trimmed.is_empty() {
        return Err(error(400, "Bad Request: message text is empty"));
    }
    if trimmed.encode_utf16().count() > MESSAGE_LIMIT {
        return Err(error(400, "Bad Request: message is too long"));
    }
    Ok(Content {
        text: trimmed.to_string(),
        raw: raw.to_string(),
        parse_mode: parse_mode.map(str::to_string),
        entities,
        reply_markup: reply_markup(body)?,
    })
}

/// The keyboard of a request (an object, or the same as a JSON string), checked as Telegram
/// checks button data.
fn reply_markup(body: &Value) -> Result<Value, Answer> {
    let markup = match body.get("reply_markup") {
        Some(Value::String(text)) => serde_json::from_str(text).map_err(|_| {
            error(
                400,
                "Bad Request: can't parse reply keyboard markup JSON object",
            )
        })?,
        Some(markup) => markup.clone(),
        None => Value::Null,
    };
    let buttons = markup
        .get("inline_keyboard")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_array)
        .flatten();
    for button in buttons {
        if let Some(data) = button.get("callback_data").and_then(Value::as_str)
            && !(1..=64).contains(&data.len())
        {
            return Err(error(400, "Bad Request: BUTTON_DATA_INVALID"));
        }
    }
    Ok(markup)
}

fn chat_id(body: &Value) -> Result<i64, Answer> {
    match body.get("chat_id") {
        Some(Value::Number(n)) => n.as_i64(),
        Some(Value::String(s)) => s.parse().ok(),
        _ => return Err(error(400, "Bad Request: chat_id is empty")),
    }
    .ok_or_else(|| error(400, "Bad Request: chat not found"))
}

fn send_message(state: &mut State, body: &Value) -> Result<Value, Answer> {
    let chat_id = chat_id(body)?;
    let content = content(body)?;
    let message = BotMessage {
        message_id: state.next_message_id(chat_id),
        text: content.text,
        raw: content.raw,
        parse_mode: content.parse_mode,
        entities: content.entities,
        reply_markup: content.reply_markup,
        edits: 0,
        edit_times: Vec::new(),
        deleted: false,
    };
    let json = message_json(chat_id, &message);
    state.messages.entry(chat_id).or_default().push(message);
    Ok(json)
}

/// The bot's message `message_id` in the request's chat, if it is there to change.
fn find<'a>(
    state: &'a mut State,
    body: &Value,
    missing: &str,
) -> Result<(i64, &'a mut BotMessage), Answer> {
    let chat_id = chat_id(body)?;
    let message_id = body.get("message_id").and_then(Value::as_i64);
    state
        .messages
        .get_mut(&chat_id)
        .and_then(|all| {
            all.iter_mut()
                .find(|m| Some(m.message_id) == message_id && !m.deleted)
        })
        .map(|m| (chat_id, m))
        .ok_or_else(|| error(400, missing))
}

fn edit_text(state: &mut State, body: &Value) -> Result<Value, Answer> {
    let content = content(body)?;
    let (chat_id, message) = find(state, body, "Bad Request: message to edit not found")?;
    if message.text == content.text
        && message.entities == content.entities
        && message.reply_markup == content.reply_markup
    {
        return Err(error(400, NOT_MODIFIED));
    }
    message.text = content.text;
    message.raw = content.raw;
    message.parse_mode = content.parse_mode;
    message.entities = content.entities;
    message.reply_markup = content.reply_markup;
    edited(message);
    Ok(message_json(chat_id, message))
}

fn edit_markup(state: &mut State, body: &Value) -> Result<Value, Answer> {
    let markup = reply_markup(body)?;
    let (chat_id, message) = find(state, body, "Bad Request: message to edit not found")?;
    if message.reply_markup == markup {
        return Err(error(400, NOT_MODIFIED));
    }
    message.reply_markup = markup;
    edited(message);
    Ok(message_json(chat_id, message))
}

fn edited(message: &mut BotMessage) {
    message.edits += 1;
    message.edit_times.push(Instant::now());
}

fn delete_message(state: &mut State, body: &Value) -> Result<Value, Answer> {
    let (_, message) = find(state, body, "Bad Request: message to delete not found")?;
    message.deleted = true;
    Ok(json!(true))
}

fn answer_query(state: &mut State, body: &Value) -> Result<Value, Answer> {
    let id = body.get("callback_query_id").and_then(Value::as_str);
    match state
        .open_queries
        .iter()
        .position(|q| Some(q.as_str()) == id)
    {
        Some(i) => {
            state.open_queries.remove(i);
            Ok(json!(true))
        }
        None => Err(error(
            400,
            "Bad Request: query is too old and response timeout expired or query ID is invalid",
        )),
    }
}

fn set_commands(body: &Value) -> Result<Value, Answer> {
    let commands = body.get("commands").and_then(Value::as_array);
    let valid = |command: &Value| {
        let name = command
            .get("command")
            .and_then(Value::as_str)
            .unwrap_or_default();
        let description = command
            .get("description")
            .and_then(Value::as_str)
            .unwrap_or_default();
        (1..=32).contains(&name.len())
            && name
                .chars()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_')
            && (1..=256).contains(&description.chars().count())
    };
    match commands {
        Some(commands) if commands.iter().all(valid) => Ok(json!(true)),
        _ => Err(error(400, "Bad Request: BOT_COMMAND_INVALID")),
    }
}

/// A bot message as the Bot API returns it.
pub(super) fn message_json(chat_id: i64, message: &BotMessage) -> Value {
    let mut json = json!({
        "message_id": message.message_id,
        "date": unix_now(),
        "chat": chat(chat_id),
        "from": bot_user(),
        "text": message.text,
    });
    if !message.reply_markup.is_null() {
        json["reply_markup"] = message.reply_markup.clone();
    }
    if message.edits > 0 {
        json["edit_date"] = json!(unix_now());
    }
    json
}
