//! One paired chat: the session its messages go to, the replies streamed back as edited
//! messages, tool calls as short lines, and approval questions with buttons. A task per chat
//! that talked recently; an idle one ends (its session stops, resumed on the next message).

use std::sync::Arc;
use std::time::Duration;

use serde_json::json;
use tokio::sync::mpsc;
use tokio::time::Instant;

use super::Ctx;
use super::api::ApiError;
use super::format::{self, Chunk, MESSAGE_LIMIT};
use super::questions::Questions;
use super::reply::{Change, Reply};
use super::text::{
    approval_question, decision_label, escape_html, escape_markdown, plain_of, short_id, tool_line,
};
use crate::host::Attachment;
use crate::launch::SessionChoice;
use crate::protocol::{ApprovalDecision, Event, Op, TurnStatus};

/// A chat with nothing going on for this long lets its session go.
const IDLE: Duration = Duration::from_secs(30 * 60);
/// How long letting a session go waits for it.
const STOP_WAIT: Duration = Duration::from_secs(5);
/// Messages waiting for a chat's task.
pub const INBOX: usize = 64;
/// The longest 429 wait a chat sits out before giving up on one call.
const MAX_RETRY_WAIT: Duration = Duration::from_secs(60);

/// What reaches a chat from Telegram.
#[derive(Debug)]
pub enum Input {
    Text(String),
    /// A pressed button: the callback query's id and its data.
    Button {
        query: String,
        data: String,
    },
}

pub struct Chat {
    ctx: Arc<Ctx>,
    id: i64,
    /// The session the chat's messages go to (stored), live or not.
    session: Option<String>,
    attachment: Option<Attachment>,
    busy: bool,
    /// The reply being streamed last; earlier ones wait for their final edit.
    replies: Vec<Reply>,
    questions: Questions,
}

/// Starts chat `id`'s task; its inbox.
pub fn spawn(ctx: Arc<Ctx>, id: i64, session: Option<String>) -> mpsc::Sender<Input> {
    let (inbox, rx) = mpsc::channel(INBOX);
    let ctx_timeout = ctx.config.approval_timeout();
    let chat = Chat {
        ctx,
        id,
        session,
        attachment: None,
        busy: false,
        replies: Vec::new(),
        questions: Questions::new(ctx_timeout),
    };
    tokio::spawn(chat.run(rx));
    inbox
}

async fn next_event(attachment: &mut Option<Attachment>) -> Option<Event> {
    match attachment {
        Some(attached) => attached.events.recv().await.map(|e| e.event),
        None => std::future::pending().await,
    }
}

impl Chat {
    async fn run(mut self, mut inbox: mpsc::Receiver<Input>) {
        let cancel = self.ctx.cancel.clone();
        loop {
            let due = self.next_due();
            let idle = !self.busy && self.questions.is_empty() && due.is_none();
            tokio::select! {
                input = inbox.recv() => match input {
                    Some(input) => self.input(input).await,
                    None => break,
                },
                event = next_event(&mut self.attachment) => match event {
                    Some(event) => self.event(event).await,
                    None => {
                        self.attachment = None;
                        self.busy = false;
                    }
                },
                () = sleep_until(due), if due.is_some() => {}
                () = tokio::time::sleep(IDLE), if idle => break,
                () = cancel.cancelled() => return,
            }
            self.expire_questions().await;
            self.flush().await;
        }
        if let Some(session) = self.attachment.take().map(|a| a.session) {
            self.ctx.host.stop(&session, STOP_WAIT).await;
        }
    }

    fn next_due(&self) -> Option<Instant> {
        let replies = self.replies.iter().filter_map(Reply::due);
        replies.chain(self.questions.next_deadline()).min()
    }

    async fn input(&mut self, input: Input) {
        match input {
            Input::Text(text) => match text.strip_prefix('/') {
                Some(command) => self.command(command).await,
                None => self.tell_agent(text).await,
            },
            Input::Button { query, data } => self.button(&query, &data).await,
        }
    }

    async fn command(&mut self, line: &str) {
        let (name, argument) = line.split_once(' ').unwrap_or((line, ""));
        // `/stop@my_bot` in a group names the bot.
        let name = name.split('@').next().unwrap_or(name);
        match name {
            "start" | "help" => self.say(HELP).await,
            "stop" => match (&self.attachment, self.busy) {
                (Some(attached), true) => {
                    let _ = attached.ops.send(Op::Interrupt).await;
                }
                _ => self.say("Nothing is running.").await,
            },
            "new" => {
                self.leave().await;
                self.session = None;
                match self.attach().await {
                    Ok(id) => self.say(&format!("New session `{}`.", short_id(&id))).await,
                    Err(err) => self.say(&err).await,
                }
            }
            "sessions" => self.list_sessions().await,
            "resume" => self.resume(argument.trim()).await,
            _ => self.say("Unknown command. /help lists them.").await,
        }
    }

    async fn tell_agent(&mut self, text: String) {
        if let Err(err) = self.attach().await {
            return self.say(&err).await;
        }
        let Some(attached) = &self.attachment else {
            return;
        };
        // Sent while a turn runs, it joins that turn before the model's next call.
        let op = match self.busy {
            true => Op::Inject { text },
            false => Op::UserInput { text },
        };
        self.busy = true;
        if attached.ops.send(op).await.is_err() {
            self.attachment = None;
            self.busy = false;
            self.say("The session ended; send the message again to resume it.")
                .await;
        }
    }

    /// Attaches to the chat's session, resuming or starting it; the session's id.
    async fn attach(&mut self) -> Result<String, String> {
        if let Some(attached) = &self.attachment {
            return Ok(attached.session.clone());
        }
        let choice = match &self.session {
            Some(id) => SessionChoice::Resume(id.clone()),
            None => SessionChoice::New,
        };
        let attached = self.ctx.open(choice).await?;
        let id = attached.session.clone();
        self.attachment = Some(attached);
        self.busy = false;
        self.session = Some(id.clone());
        let (chat, session) = (self.id, id.clone());
        if let Err(err) = self
            .ctx
            .store
            .call(move |db| db.set_chat_session(chat, &session))
            .await
        {
            self.ctx
                .log(&format!("chat {chat}: cannot store its session: {err}"));
        }
        Ok(id)
    }

    /// Lets the current session go (a chat has one at a time): a running turn is interrupted,
    /// everything it completed is stored.
    async fn leave(&mut self) {
        let Some(attached) = self.attachment.take() else {
            return;
        };
        self.ctx.host.stop(&attached.session, STOP_WAIT).await;
        self.busy = false;
        self.questions.clear();
    }

    async fn list_sessions(&mut self) {
        let chat = self.id;
        let listed = self
            .ctx
            .store
            .call(move |db| {
                let mut rows = Vec::new();
                for (id, _) in db.chat_sessions(chat)?.into_iter().take(10) {
                    if let Ok(row) = db.session(&id) {
                        rows.push(row);
                    }
                }
                Ok(rows)
            })
            .await;
        let rows = match listed {
            Ok(rows) => rows,
            Err(err) => return self.say(&format!("Cannot read the sessions: {err}")).await,
        };
        if rows.is_empty() {
            return self
                .say("No sessions yet: send a message to start one.")
                .await;
        }
        let mut text = String::from("Sessions of this chat (newest first):\n\n");
        for row in rows {
            let current = match self.session.as_deref() == Some(row.id.as_str()) {
                true => " ← current",
                false => "",
            };
            let when = chrono::DateTime::from_timestamp_millis(row.updated_at)
                .map(|t| {
                    t.with_timezone(&chrono::Local)
                        .format("%b %d %H:%M")
                        .to_string()
                })
                .unwrap_or_default();
            text.push_str(&format!(
                "- `{}` {} · {}{current}\n",
                short_id(&row.id),
                when,
                escape_markdown(&row.title)
            ));
        }
        text.push_str("\n/resume ID switches to one.");
        self.say(&text).await;
    }

    async fn resume(&mut self, wanted: &str) {
        if wanted.is_empty() {
            return self
                .say("Which one? /sessions lists them: /resume ID")
                .await;
        }
        let wanted_id = wanted.to_string();
        let found = self.ctx.store.call(move |db| db.session(&wanted_id)).await;
        let row = match found {
            Ok(row) => row,
            Err(_) => {
                let text = format!("No session `{}`. /sessions lists them.", wanted);
                return self.say(&text).await;
            }
        };
        if self.session.as_deref() == Some(row.id.as_str()) && self.attachment.is_some() {
            return self.say("That is the current session.").await;
        }
        self.leave().await;
        self.session = Some(row.id.clone());
        match self.attach().await {
            Ok(id) => {
                let text = format!(
                    "Resumed session `{}`: {}",
                    short_id(&id),
                    escape_markdown(&row.title)
                );
                self.say(&text).await;
            }
            Err(err) => self.say(&err).await,
        }
    }

    async fn button(&mut self, query: &str, data: &str) {
        let parsed = data.split_once(':').and_then(|(choice, key)| {
            let decision = match choice {
                "o" => ApprovalDecision::AllowOnce,
                "s" => ApprovalDecision::AllowSession,
                "d" => ApprovalDecision::Deny,
                _ => return None,
            };
            Some((decision, key.parse::<u64>().ok()?))
        });
        let open = parsed.and_then(|(decision, key)| {
            Some((decision, self.questions.answerable(key)?.to_string()))
        });
        let notice = match (open, &self.attachment) {
            (Some((decision, id)), Some(attached)) => {
                let _ = attached.ops.send(Op::Approval { id, decision }).await;
                decision_label(decision)
            }
            _ => "This question is closed.",
        };
        if let Err(err) = self.ctx.api.answer_callback(query, notice).await {
            self.ctx
                .log(&format!("chat {}: answering a button: {err}", self.id));
        }
    }

    async fn event(&mut self, event: Event) {
        match event {
            Event::TurnStarted { .. } => {
                self.busy = true;
                self.replies.push(Reply::new());
            }
            Event::TextDelta { text } => self.reply().push_text(&text),
            Event::AssistantMessage { .. } => self.reply().paragraph_break(),
            Event::ToolCallStarted {
                name, arguments, ..
            } => self.reply().push_line(&tool_line(&name, &arguments)),
            Event::ApprovalRequested {
                id,
                tool,
                action,
                reason,
                session_grant,
                ..
            } => {
                // The reply so far stays above the question; what follows goes below it.
                self.replies.push(Reply::new());
                let html = approval_question(&tool, &action, &reason);
                self.ask(id, html, session_grant.is_some()).await;
            }
            Event::ApprovalResolved { id, decision } => self.resolved(&id, decision).await,
            Event::TurnFinished {
                status, message, ..
            } => {
                self.busy = false;
                if let Some(line) = ending_line(status, message.as_deref()) {
                    self.reply().push_line(&line);
                }
            }
            Event::Error { message } => {
                let line = format!("⚠️ {}", escape_markdown(&message));
                self.reply().push_line(&line);
            }
            _ => {}
        }
    }

    fn reply(&mut self) -> &mut Reply {
        if self.replies.is_empty() {
            self.replies.push(Reply::new());
        }
        let last = self.replies.len() - 1;
        &mut self.replies[last]
    }

    async fn ask(&mut self, approval: String, html: String, session_grant: bool) {
        let key = self.questions.next_key();
        let mut row = vec![json!({"text": "Allow once", "callback_data": format!("o:{key}")})];
        if session_grant {
            row.push(
                json!({"text": "Allow for this session", "callback_data": format!("s:{key}")}),
            );
        }
        let buttons = json!({"inline_keyboard": [row, [{"text": "Deny", "callback_data": format!("d:{key}")}]]});
        let chunk = Chunk {
            html: html.clone(),
            plain: plain_of(&html),
        };
        let (chunk, buttons) = (&chunk, &buttons);
        match self
            .call(|api, chat| async move { api.send(chat, chunk, Some(buttons)).await })
            .await
        {
            Some(message) => {
                let now = Instant::now();
                self.questions.open(key, approval, message, html, now);
            }
            // A question nobody can see is not left waiting.
            None => self.answer(approval, ApprovalDecision::Deny).await,
        }
    }

    async fn answer(&self, approval: String, decision: ApprovalDecision) {
        if let Some(attached) = &self.attachment {
            let _ = attached
                .ops
                .send(Op::Approval {
                    id: approval,
                    decision,
                })
                .await;
        }
    }

    async fn resolved(&mut self, approval: &str, decision: ApprovalDecision) {
        let Some(question) = self.questions.resolve(approval) else {
            return;
        };
        let outcome = match (question.timed_out, decision) {
            (true, ApprovalDecision::Deny) => {
                format!(
                    "Denied: no answer within {}.",
                    self.questions.timeout_text()
                )
            }
            _ => decision_label(decision).to_string(),
        };
        let html = format!("{}\n\n<b>→ {}</b>", question.html, escape_html(&outcome));
        let chunk = Chunk {
            plain: plain_of(&html),
            html,
        };
        let none = json!({"inline_keyboard": []});
        let (message, chunk, none) = (question.message, &chunk, &none);
        self.call(|api, chat| async move { api.edit(chat, message, chunk, Some(none)).await })
            .await;
    }

    /// Denies every question whose time ran out.
    async fn expire_questions(&mut self) {
        for approval in self.questions.expire(Instant::now()) {
            self.answer(approval, ApprovalDecision::Deny).await;
        }
    }

    /// Sends and edits what the replies have due.
    async fn flush(&mut self) {
        let now = Instant::now();
        for index in 0..self.replies.len() {
            let changes = self.replies[index].flush(now);
            for change in changes {
                match change {
                    Change::Send { index: part, chunk } => {
                        let html = chunk.html.clone();
                        let chunk = &chunk;
                        let sent = self
                            .call(|api, chat| async move { api.send(chat, chunk, None).await })
                            .await;
                        if let Some(message) = sent {
                            self.replies[index].sent(part, message, html);
                        }
                    }
                    Change::Edit { id, chunk } => {
                        let chunk = &chunk;
                        self.call(|api, chat| async move {
                            match api.edit(chat, id, chunk, None).await {
                                Err(err) if err.not_modified() => Ok(()),
                                other => other,
                            }
                        })
                        .await;
                    }
                }
            }
        }
        // Earlier replies are done once they show everything; the last may still grow.
        let last = self.replies.len().saturating_sub(1);
        let mut index = 0;
        self.replies.retain(|reply| {
            let keep = index == last || reply.due().is_some();
            index += 1;
            keep
        });
    }

    /// Sends `markdown` as one or more messages.
    async fn say(&mut self, markdown: &str) {
        for chunk in format::render(markdown, MESSAGE_LIMIT) {
            let chunk = &chunk;
            self.call(|api, chat| async move { api.send(chat, chunk, None).await })
                .await;
        }
    }

    /// Makes one Bot API call for this chat, sitting out a 429 once; failures are logged.
    async fn call<T, F, Fut>(&self, make: F) -> Option<T>
    where
        F: Fn(super::api::BotApi, i64) -> Fut,
        Fut: std::future::Future<Output = Result<T, ApiError>>,
    {
        let mut waited = false;
        loop {
            match make(self.ctx.api.clone(), self.id).await {
                Ok(value) => return Some(value),
                Err(ApiError::RetryAfter(wait)) if !waited => {
                    waited = true;
                    tokio::time::sleep(wait.min(MAX_RETRY_WAIT)).await;
                }
                Err(err) => {
                    self.ctx.log(&format!("chat {}: {err}", self.id));
                    return None;
                }
            }
        }
    }
}

async fn sleep_until(due: Option<Instant>) {
    match due {
        Some(due) => tokio::time::sleep_until(due).await,
        None => std::future::pending().await,
    }
}

/// The line a turn that did not simply complete ends with.
fn ending_line(status: TurnStatus, message: Option<&str>) -> Option<String> {
    let what = match status {
        TurnStatus::Completed => return None,
        TurnStatus::Interrupted => "Stopped.",
        _ => "The turn ended early",
    };
    let line = match message {
        Some(why) if status != TurnStatus::Interrupted => format!("{what}: {why}"),
        _ => what.to_string(),
    };
    Some(format!("_{}_", escape_markdown(&line)))
}

const HELP: &str = "Talk to mnemo here as in its terminal. A message sent while it works joins \
the running turn.\n\n\
- /stop interrupts the running turn\n\
- /new starts a new session\n\
- /sessions lists this chat's sessions\n\
- /resume ID continues one of them\n\n\
Questions about tool calls come with buttons; one left unanswered is a denial.";
