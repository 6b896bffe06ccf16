//! One paired chat: the session its messages go to, the replies streamed back as edited
//! messages, tool calls as short lines, and approval questions with buttons. A task per chat
//! that talked recently; an idle one ends (its session stops, resumed on the next message).

// A new event must be worded here on purpose, not dropped by a `_` arm.
#![deny(
    clippy::wildcard_enum_match_arm,
    clippy::match_wildcard_for_single_variants
)]

mod approvals;
mod asked;
mod commands;

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::mpsc;
use tokio::time::Instant;

use super::Ctx;
use super::api::ApiError;
use super::format::{self, MESSAGE_LIMIT};
use super::questions::Questions;
use super::reply::{Change, Reply};
use super::text::{approval_question, escape_markdown, tool_line};
use crate::host::SessionChoice;
use crate::host::{Attachment, HostApi};
use crate::protocol::{Event, Op, TurnStatus};

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
    /// The model's questions waiting for an answer, oldest first.
    asked: Vec<asked::Asked>,
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
        asked: Vec::new(),
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
            let idle =
                !self.busy && self.questions.is_empty() && self.asked.is_empty() && due.is_none();
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
                None => {
                    if let Some(text) = self.typed_answer(text).await {
                        self.tell_agent(text).await;
                    }
                }
            },
            Input::Button { query, data } => self.button(&query, &data).await,
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
            false => Op::user_input(text),
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
        let open = self.ctx.open(choice);
        let attached = crate::crash::answered("telegram:open_session", open).await?;
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
        self.asked.clear();
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
            Event::QuestionAsked {
                id,
                question,
                choices,
                ..
            } => {
                self.replies.push(Reply::new());
                self.put_question(id, &question, choices).await;
            }
            Event::QuestionResolved { id, answer } => self.question_resolved(&id, &answer).await,
            Event::TurnFinished {
                status, message, ..
            } => {
                self.busy = false;
                if let Some(line) = ending_line(status, message.as_deref()) {
                    self.reply().push_line(&line);
                }
            }
            Event::ModelChanged { model, .. } => {
                let line = escape_markdown(&crate::present::model_changed(&model));
                self.reply().push_line(&line);
            }
            Event::Error { message } => {
                let line = format!("⚠️ {}", escape_markdown(&message));
                self.reply().push_line(&line);
            }
            Event::PlanModeChanged { on } => {
                let line = escape_markdown(crate::present::plan_mode(on));
                self.reply().push_line(&format!("_{line}_"));
            }
            Event::PlanProposed { .. } => {
                let line = "Plan ready: /approve carries it out; or write what to change.";
                self.reply().push_line(&escape_markdown(line));
            }
            Event::TodoUpdated { items } => {
                let heading = escape_markdown(&crate::present::todo_heading(&items));
                self.reply().push_line(&format!("☰ {heading}"));
                for item in &items {
                    let step = escape_markdown(&crate::present::todo_step(item));
                    self.reply().push_line(&step);
                }
            }
            Event::Rewound { report, .. } => {
                let line = escape_markdown(&report.describe());
                self.reply().push_line(&line);
            }
            Event::Turns { turns } => {
                let line = escape_markdown(&crate::rewind::describe_turns(&turns));
                self.reply().push_line(&line);
            }
            // A retried or handed-over step streams its whole message again.
            Event::Retry {
                discard_partial, ..
            }
            | Event::ModelFallback {
                discard_partial, ..
            } => {
                if discard_partial {
                    self.reply().discard_step();
                }
            }
            // A phone shows the reply and the questions; the rest is for the terminal.
            Event::SessionStarted { .. }
            | Event::QueuedWithdrawn { .. }
            | Event::UserMessage { .. }
            | Event::ReasoningDelta { .. }
            | Event::ApprovalModeChanged { .. }
            | Event::AgentStarted { .. }
            | Event::AgentActivity { .. }
            | Event::AgentFinished { .. }
            | Event::AgentsPending { .. }
            | Event::ToolOutput { .. }
            | Event::ToolCallFinished { .. }
            | Event::Usage { .. }
            | Event::Compacted { .. }
            | Event::Notice { .. }
            | Event::Hook { .. }
            | Event::ToolsChanged { .. }
            | Event::McpServers { .. }
            | Event::UserCommands { .. }
            | Event::FrontEndRequest { .. }
            | Event::FrontEndWithdrawn { .. } => {}
            Event::Reminder { title, body } => {
                let markdown = format!("**{}**\n\n{body}", escape_markdown(&title));
                self.say(&markdown).await;
            }
        }
    }

    fn reply(&mut self) -> &mut Reply {
        if self.replies.is_empty() {
            self.replies.push(Reply::new());
        }
        let last = self.replies.len() - 1;
        &mut self.replies[last]
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

/// The line a turn that did not simply complete ends with, in italics.
fn ending_line(status: TurnStatus, message: Option<&str>) -> Option<String> {
    let line = crate::present::turn_ending(status, message)?;
    Some(format!("_{}_", escape_markdown(&line)))
}
