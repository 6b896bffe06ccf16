//! The working set's two tiers: when it holds more than the configured number of messages,
//! the oldest complete turns move to the archive as one searchable entry. Also renders the
//! durable experiences into the system prompt.

use std::fmt::Write;

use super::Session;
use crate::llm::{ContentBlock, Message, Role};
use crate::memory::types::{Experience, NewArchiveEntry, Scope};
use crate::memory::{StoreError, importance, summary};

impl Session {
    /// Moves the oldest complete turns before `keep_from` (the running turn's first message)
    /// to the archive when the working set is over its limit. Returns how many messages left
    /// the working set.
    pub(super) async fn archive_old_turns(
        &mut self,
        keep_from: usize,
    ) -> Result<usize, StoreError> {
        let limit = self.settings.max_active_messages.max(2);
        if self.history.len() <= limit {
            return Ok(0);
        }
        // Archive down to three quarters of the limit so this does not run at every step.
        let target = limit * 3 / 4;
        let cut = turn_starts(&self.history[..=keep_from.min(self.history.len() - 1)])
            .into_iter()
            .filter(|&i| i > 0)
            .find(|&i| self.history.len() - i <= target)
            .or_else(|| {
                turn_starts(&self.history[..=keep_from.min(self.history.len() - 1)])
                    .into_iter()
                    .rfind(|&i| i > 0)
            });
        let Some(cut) = cut else {
            return Ok(0);
        };
        let messages: Vec<Message> = self.history[..cut].iter().map(|m| (**m).clone()).collect();
        let (topic, summary) = summary::mechanical_summary(&messages);
        let embedding = self.embed_entry(&topic, &summary, &messages).await;
        let entry = NewArchiveEntry {
            session_id: self.id.clone(),
            topic,
            summary,
            token_count: messages
                .iter()
                .map(|m| u64::from(crate::llm::tokens::estimate_message(m)))
                .sum(),
            importance: importance::importance(&messages),
            embedding,
            first_seq: self.meta[0].seq,
            last_seq: self.meta[cut - 1].seq,
            started_at: self.meta[0].created_at,
            ended_at: self.meta[cut - 1].created_at,
            messages,
        };
        self.store
            .call(move |db| db.archive_messages(entry))
            .await?;
        self.history.drain(..cut);
        self.meta.drain(..cut);
        self.archived_any = true;
        Ok(cut)
    }

    /// An embedding of the stretch for semantic search; a failure only costs that (the entry
    /// stays searchable by keyword), so it is reported and not fatal.
    async fn embed_entry(
        &self,
        topic: &str,
        summary: &str,
        messages: &[Message],
    ) -> Option<Vec<f32>> {
        const MAX_EMBED_CHARS: usize = 8000;
        let embedder = self.embedder.as_ref()?;
        let mut text = format!(
            "{topic}\n{summary}\n{}",
            crate::llm::transcript::to_markdown(messages)
        );
        if let Some((cut, _)) = text.char_indices().nth(MAX_EMBED_CHARS) {
            text.truncate(cut);
        }
        match embedder.embed(&[text]).await {
            Ok(mut vectors) => vectors.pop(),
            Err(err) => {
                self.emit(crate::protocol::Event::Error {
                    message: format!("archive entry kept without an embedding: {err}"),
                })
                .await;
                None
            }
        }
    }

    /// Rebuilds the system prompt from the base prompt and the current experiences.
    pub(super) async fn refresh_system_prompt(&mut self) -> Result<(), StoreError> {
        let project = self.settings.workspace.display().to_string();
        let experiences = self
            .store
            .call(move |db| db.experiences(Some(&project)))
            .await?;
        self.system_prompt = render_prompt(
            &self.settings.system_prompt,
            &experiences,
            self.archived_any,
        );
        Ok(())
    }
}

/// Indices of the messages that start a turn: user messages with text and no tool results.
/// Cutting the history just before one never separates a tool call from its result.
fn turn_starts(history: &[std::sync::Arc<Message>]) -> Vec<usize> {
    history
        .iter()
        .enumerate()
        .filter(|(_, m)| {
            m.role == Role::User
                && !m
                    .content
                    .iter()
                    .any(|b| matches!(b, ContentBlock::ToolResult { .. }))
        })
        .map(|(i, _)| i)
        .collect()
}

fn render_prompt(base: &str, experiences: &[Experience], archived: bool) -> String {
    let mut prompt = base.to_string();
    if !experiences.is_empty() {
        prompt.push_str(
            "\n# Experiences\n\nDurable facts and lessons kept across sessions. Call `forget` \
             with the id of one that is wrong or outdated; `remember` adds one.\n\n",
        );
        for exp in experiences {
            let scope = match exp.scope {
                Scope::Global => "global",
                Scope::Project(_) => "project",
            };
            let _ = writeln!(prompt, "- [{}] ({scope}) {}", exp.id, exp.text);
        }
    }
    if archived {
        prompt.push_str(
            "\nOlder parts of this conversation were moved to the archive; `memory_search` \
             finds them and `memory_open` shows an entry in full.\n",
        );
    }
    prompt
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;

    #[test]
    fn turns_start_at_user_text_never_at_tool_results() {
        let history: Vec<Arc<Message>> = vec![
            Arc::new(Message::user_text("a")),
            Arc::new(Message::assistant(vec![ContentBlock::ToolUse {
                id: "1".into(),
                name: "x".into(),
                input: serde_json::json!({}),
            }])),
            Arc::new(Message {
                role: Role::User,
                content: vec![ContentBlock::ToolResult {
                    tool_use_id: "1".into(),
                    content: "ok".into(),
                    is_error: false,
                }],
            }),
            Arc::new(Message::assistant(vec![ContentBlock::Text {
                text: "done".into(),
            }])),
            Arc::new(Message::user_text("b")),
        ];
        assert_eq!(turn_starts(&history), vec![0, 4]);
    }

    #[test]
    fn experiences_are_listed_with_their_ids_and_scope() {
        let exps = vec![Experience {
            id: 7,
            text: "The tests need `make db` first.".into(),
            scope: Scope::Project("/w".into()),
            created_at: 0,
            source: "model".into(),
        }];
        let prompt = render_prompt("BASE", &exps, true);
        assert!(prompt.starts_with("BASE"));
        assert!(prompt.contains("- [7] (project) The tests need `make db` first."));
        assert!(prompt.contains("memory_search"));
        assert_eq!(render_prompt("BASE", &[], false), "BASE");
    }
}
