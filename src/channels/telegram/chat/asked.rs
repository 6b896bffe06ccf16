//! The model's questions to the person (`ask_user`) in a chat: sent with a button per choice;
//! a button or the next text message answers, and the message is closed with the answer once
//! the session resolves it. The session's own limit ends a question nobody answers.

use serde_json::json;

use super::Chat;
use crate::channels::telegram::format::Chunk;
use crate::channels::telegram::text::{escape_html, plain_of};
use crate::protocol::{Op, QuestionAnswer};

/// Questions a chat keeps open at once; older ones are closed as dismissed.
const MAX_OPEN: usize = 8;

#[derive(Debug)]
pub(super) struct Asked {
    key: u64,
    id: String,
    choices: Vec<String>,
    message: i64,
    html: String,
}

impl Chat {
    pub(super) async fn put_question(&mut self, id: String, question: &str, choices: Vec<String>) {
        let key = self.questions.next_key();
        let mut html = format!("❓ <b>{}</b>", escape_html(question));
        html.push_str(match choices.is_empty() {
            true => "\n\n<i>Reply with your answer.</i>",
            false => "\n\n<i>Pick one, or reply with your own answer.</i>",
        });
        let rows: Vec<_> = choices
            .iter()
            .enumerate()
            .map(|(n, choice)| [json!({"text": choice, "callback_data": format!("a{n}:{key}")})])
            .collect();
        let buttons = json!({ "inline_keyboard": rows });
        let chunk = Chunk {
            html: html.clone(),
            plain: plain_of(&html),
        };
        let (chunk, buttons) = (&chunk, &buttons);
        let Some(message) = self
            .call(|api, chat| async move { api.send(chat, chunk, Some(buttons)).await })
            .await
        else {
            // A question nobody can see is not left waiting.
            return self.answer_question(id, QuestionAnswer::Unavailable).await;
        };
        if self.asked.len() == MAX_OPEN {
            let oldest = self.asked.remove(0);
            self.answer_question(oldest.id, QuestionAnswer::Dismissed)
                .await;
        }
        self.asked.push(Asked {
            key,
            id,
            choices,
            message,
            html,
        });
    }

    /// A button of a question: `a<n>:<key>`. `None` when `data` is not one.
    pub(super) async fn question_button(&mut self, data: &str) -> Option<&'static str> {
        let (choice, key) = data.strip_prefix('a')?.split_once(':')?;
        let (choice, key) = (choice.parse::<usize>().ok()?, key.parse::<u64>().ok()?);
        let picked = self
            .asked
            .iter()
            .find(|q| q.key == key)
            .and_then(|q| Some((q.id.clone(), q.choices.get(choice)?.clone())));
        Some(match picked {
            Some((id, text)) => {
                self.answer_question(id, QuestionAnswer::Text { text })
                    .await;
                "Answered."
            }
            None => "This question is closed.",
        })
    }

    /// Text sent while a question is open answers the latest one; `text` back otherwise.
    pub(super) async fn typed_answer(&mut self, text: String) -> Option<String> {
        let Some(id) = self.asked.last().map(|q| q.id.clone()) else {
            return Some(text);
        };
        self.answer_question(id, QuestionAnswer::Text { text })
            .await;
        None
    }

    async fn answer_question(&self, id: String, answer: QuestionAnswer) {
        if let Some(attached) = &self.attachment {
            let _ = attached.ops.send(Op::AnswerQuestion { id, answer }).await;
        }
    }

    /// The session closed question `id`: its message shows the outcome, its buttons go.
    pub(super) async fn question_resolved(&mut self, id: &str, answer: &QuestionAnswer) {
        let Some(index) = self.asked.iter().position(|q| q.id == id) else {
            return;
        };
        let asked = self.asked.remove(index);
        let outcome = match answer {
            QuestionAnswer::Text { text } => format!("→ {}", escape_html(text)),
            QuestionAnswer::Dismissed | QuestionAnswer::Unavailable => "→ not answered".into(),
        };
        let html = format!("{}\n\n<b>{outcome}</b>", asked.html);
        let chunk = Chunk {
            plain: plain_of(&html),
            html,
        };
        let none = json!({"inline_keyboard": []});
        let (message, chunk, none) = (asked.message, &chunk, &none);
        self.call(|api, chat| async move { api.edit(chat, message, chunk, Some(none)).await })
            .await;
    }
}
