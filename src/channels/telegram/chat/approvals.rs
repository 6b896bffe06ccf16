//! A chat's approval questions: sent with buttons, answered by a button or denied when their
//! time runs out, and closed with the outcome once the session resolves them.

use serde_json::json;
use tokio::time::Instant;

use super::Chat;
use crate::channels::telegram::format::Chunk;
use crate::channels::telegram::text::{decision_label, escape_html, plain_of};
use crate::protocol::{ApprovalDecision, Op};

impl Chat {
    pub(super) async fn button(&mut self, query: &str, data: &str) {
        if let Some(notice) = self.question_button(data).await {
            return self.callback_answered(query, notice).await;
        }
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
        self.callback_answered(query, notice).await;
    }

    async fn callback_answered(&self, query: &str, notice: &str) {
        if let Err(err) = self.ctx.api.answer_callback(query, notice).await {
            self.ctx
                .log(&format!("chat {}: answering a button: {err}", self.id));
        }
    }

    pub(super) async fn ask(&mut self, approval: String, html: String, session_grant: bool) {
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

    pub(super) async fn resolved(&mut self, approval: &str, decision: ApprovalDecision) {
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
    pub(super) async fn expire_questions(&mut self) {
        for approval in self.questions.expire(Instant::now()) {
            self.answer(approval, ApprovalDecision::Deny).await;
        }
    }
}
