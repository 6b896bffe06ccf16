//! A chat's commands: /help, /stop, /new, /sessions, /resume, /rewind, /plan, /approve.

use super::Chat;
use crate::channels::telegram::text::{escape_markdown, short_id};
use crate::host::HostApi;
use crate::protocol::Op;

impl Chat {
    pub(super) async fn command(&mut self, line: &str) {
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
            "rewind" => self.rewind(argument.trim()).await,
            "plan" => {
                let on = argument.trim() != "off";
                self.send_op(Op::SetPlanMode { on }).await;
            }
            "approve" => self.send_op(Op::ApprovePlan { plan: None }).await,
            // The session expands the person's own commands (and sends other text as is).
            _ => self.tell_agent(format!("/{line}")).await,
        }
    }

    /// `/rewind` lists the session's turns; `/rewind N` takes back turn N and the later ones,
    /// files and conversation.
    async fn rewind(&mut self, argument: &str) {
        let op = match argument {
            "" => Op::ListTurns,
            number => match number.parse() {
                Ok(turn) => Op::Rewind {
                    turn,
                    what: crate::protocol::RewindWhat::Both,
                },
                Err(_) => {
                    let usage = "/rewind lists the turns; /rewind N takes back turn N and the \
                                 later ones (files and conversation)";
                    return self.say(usage).await;
                }
            },
        };
        self.send_op(op).await;
    }

    /// Sends `op` to the chat's session, attaching it first.
    async fn send_op(&mut self, op: Op) {
        if let Err(err) = self.attach().await {
            return self.say(&err).await;
        }
        let Some(attached) = &self.attachment else {
            return;
        };
        if attached.ops.send(op).await.is_err() {
            self.attachment = None;
            self.say("The session ended; send the message again to resume it.")
                .await;
        }
    }

    async fn list_sessions(&mut self) {
        let chat = self.id;
        let listed = self.ctx.store.call(move |db| db.chat_sessions(chat)).await;
        let ids = match listed {
            Ok(ids) => ids,
            Err(err) => return self.say(&format!("Cannot read the sessions: {err}")).await,
        };
        let mut rows = Vec::new();
        for (id, _) in ids.into_iter().take(10) {
            if let Ok(row) = self.ctx.host.stored_session(id).await {
                rows.push(row);
            }
        }
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
        let found = self.ctx.host.stored_session(wanted.to_string()).await;
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
}

const HELP: &str = "Talk to mnemo here as in its terminal. A message sent while it works joins \
the running turn.\n\n\
- /stop interrupts the running turn\n\
- /new starts a new session\n\
- /sessions lists this chat's sessions\n\
- /resume ID continues one of them\n\
- /rewind lists the turns; /rewind N takes back turn N and later (files and conversation)\n\
- /plan: plan mode (reads, changes nothing, ends with a plan); /approve carries the plan out; \
/plan off leaves it\n\
- any other /NAME runs your own command of that name (a Markdown file in .mnemo/commands)\n\n\
Questions about tool calls come with buttons; one left unanswered is a denial.";
