//! What surrounds the working set: durable experiences rendered into the system prompt, and
//! vectors for the archive entries that compaction writes.

use std::fmt::Write;

use super::Session;
use crate::memory::StoreError;
use crate::memory::types::{Experience, Scope};

impl Session {
    /// Embeds what was just written or archived (and anything else still without vectors)
    /// off the turn's path; a failure only costs search by meaning for those until
    /// `mnemo memory reindex`, so it is reported and not fatal.
    pub(super) fn embed_in_background(&self) {
        let Some(embedder) = self.embedder.clone() else {
            return;
        };
        let (store, events) = (self.store.clone(), self.event_sender());
        tokio::spawn(async move {
            let done =
                crate::memory::embed::backfill::embed_pending_in_background(&store, &embedder);
            if let Err(err) = done.await
                && let Some(events) = events
            {
                let message = format!("remembered without vectors for search by meaning: {err}");
                let _ = events
                    .send(crate::protocol::Event::Notice { message })
                    .await;
            }
        });
    }

    /// After a turn: embeds its messages for other sessions' search by meaning when that
    /// costs no model load; otherwise compaction, a search or `mnemo serve` do it later.
    pub(super) fn embed_turn_in_background(&self) {
        if self.embedder.as_ref().is_some_and(|e| e.is_warm()) {
            self.embed_in_background();
        }
    }

    /// Rebuilds the system prompt from the base prompt and the current experiences; the
    /// experiences are read again only when they changed (in any process) since last time.
    pub(super) async fn refresh_system_prompt(&mut self) -> Result<(), StoreError> {
        let project = self.settings.workspace.display().to_string();
        let known = self.experiences.as_ref().map(|(version, _)| *version);
        let changed = self
            .store
            .call(move |db| {
                let version = db.experiences_version()?;
                match known == Some(version) {
                    true => Ok(None),
                    false => Ok(Some((version, db.experiences(Some(&project))?))),
                }
            })
            .await?;
        if changed.is_some() {
            self.experiences = changed;
        }
        let experiences = self.experiences.as_ref().map_or(&[][..], |(_, e)| e);
        let summary = self
            .summary_message()
            .map_or(0, |m| crate::llm::tokens::estimate_message(&m));
        let mut prompt =
            render_prompt(&self.settings.system_prompt, experiences, self.archived_any);
        self.find_pending_skills().await?;
        let catalog = self.skill_catalog().await?;
        if !catalog.is_empty() {
            prompt.push('\n');
            prompt.push_str(&catalog);
        }
        self.system_prompt = prompt;
        self.prompt_tokens =
            u64::from(summary) + u64::from(crate::llm::tokens::estimate_text(&self.system_prompt));
        Ok(())
    }
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

    use super::*;

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
