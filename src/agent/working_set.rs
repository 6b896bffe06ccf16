//! What surrounds the working set: durable experiences and the dream notes rendered into the
//! system prompt, and vectors for the archive entries that compaction writes.

use std::fmt::Write;

use super::Session;
use crate::llm::tokens::estimate_text;
use crate::memory::StoreError;
use crate::memory::dream_notes::{DreamNotes, NoteFile, paragraphs};
use crate::memory::types::{Experience, Scope};
use crate::tools::TypedTool;
use crate::tools::memory::Remember;

/// Most tokens the dream notes take in the system prompt (two files at their 2,000-word limit
/// would take about 5,400).
const DREAM_NOTES_TOKENS: u32 = 4000;
/// Tokens the experiences may take in the system prompt; the rest are found by recall.
const EXPERIENCE_TOKENS: u32 = 2000;

impl Session {
    /// Embeds what was just written or archived (and anything else still without vectors)
    /// off the turn's path; a failure only costs search by meaning for those until
    /// `mnemo memory reindex`, so it is reported and not fatal.
    pub(super) fn embed_in_background(&self) {
        let Some(embedder) = self.services.embedder.clone() else {
            return;
        };
        let (store, events) = (self.services.store.clone(), self.event_sender());
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

    /// After a turn or a compaction: embeds what is new for search by meaning when that costs
    /// no model load; otherwise `mnemo serve` or the next process with the model loaded do.
    pub(super) fn embed_turn_in_background(&self) {
        if self.services.embedder.as_ref().is_some_and(|e| e.is_warm()) {
            self.embed_in_background();
        }
    }

    /// A hand edit of the notes files becomes the current notes version (and so reaches this
    /// prompt) as soon as their modification time changes; two `stat` calls otherwise.
    async fn take_in_notes_edits(&mut self) -> Result<(), StoreError> {
        let Some(dir) = self.services.notes_dir.clone() else {
            return Ok(());
        };
        let modified = crate::jobs::dream_files::modified_ms(&dir);
        if self.notes_files_seen == Some(modified) {
            return Ok(());
        }
        self.notes_files_seen = Some(modified);
        if modified == 0 {
            return Ok(());
        }
        // A file that cannot be written back is the dream's to report; the prompt goes on.
        let _ = self
            .services
            .store
            .call(move |db| Ok(crate::jobs::dream_files::take_in_hand_edits(db, &dir)))
            .await?;
        Ok(())
    }

    /// Rebuilds the system prompt from the base prompt, the current experiences and the dream
    /// notes; each is read again only when it changed (in any process) since last time.
    pub(super) async fn refresh_system_prompt(&mut self) -> Result<(), StoreError> {
        self.take_in_notes_edits().await?;
        let project = self.settings.workspace.display().to_string();
        let known = self.experiences.as_ref().map(|(version, _)| *version);
        let known_notes = self.dream_notes.as_ref().map(|(version, _)| *version);
        let (changed, notes) = self
            .services
            .store
            .call(move |db| {
                let version = db.experiences_version()?;
                let experiences = match known == Some(version) {
                    true => None,
                    false => Some((version, db.experiences(Some(&project))?)),
                };
                let version = db.dream_notes_version()?;
                let notes = match known_notes == Some(version) {
                    true => None,
                    false => Some((version, db.current_notes()?.map(|v| v.notes))),
                };
                Ok((experiences, notes))
            })
            .await?;
        if changed.is_some() {
            self.experiences = changed;
        }
        if let Some((version, notes)) = notes {
            self.dream_notes = Some((version, notes.unwrap_or_default()));
        }
        let experiences = self.experiences.as_ref().map_or(&[][..], |(_, e)| e);
        let summary = self
            .summary_message()
            .map_or(0, |m| crate::llm::tokens::estimate_message(&m));
        let mut prompt =
            render_prompt(&self.settings.system_prompt, experiences, self.archived_any);
        if let Some((_, notes)) = &self.dream_notes {
            render_notes(&mut prompt, notes);
        }
        self.find_pending_skills().await?;
        let catalog = self.skill_catalog().await?;
        if !catalog.is_empty() {
            prompt.push('\n');
            prompt.push_str(&catalog);
        }
        self.system_prompt = prompt;
        self.prompt_built = true;
        self.prompt_tokens =
            u64::from(summary) + u64::from(crate::llm::tokens::estimate_text(&self.system_prompt));
        Ok(())
    }
}

impl Session {
    /// Experiences kept since the system prompt was built (by the user, another session, or
    /// a turn report) become a note in the history: the system prompt is not rebuilt, so its
    /// cached prefix holds, and the next compaction folds them into it. Facts this session's
    /// own `remember` calls kept are already in the history and are not repeated.
    pub(super) async fn note_growth(&mut self) -> Result<(), StoreError> {
        self.find_pending_skills().await?;
        let project = self.settings.workspace.display().to_string();
        let known = self.experiences.as_ref().map(|(version, _)| *version);
        let changed = self
            .services
            .store
            .call(move |db| {
                let version = db.experiences_version()?;
                match known == Some(version) {
                    true => Ok(None),
                    false => Ok(Some((version, db.experiences(Some(&project))?))),
                }
            })
            .await?;
        let Some((version, now)) = changed else {
            return Ok(());
        };
        let shown: Vec<i64> = self
            .experiences
            .as_ref()
            .map(|(_, e)| e.iter().map(|e| e.id).collect())
            .unwrap_or_default();
        let remembered = self.remembered_here();
        let new: Vec<&Experience> = now
            .iter()
            .filter(|e| !shown.contains(&e.id) && !remembered.iter().any(|r| r == e.text.trim()))
            .collect();
        let note = growth_note(&new);
        self.experiences = Some((version, now));
        match note {
            Some(note) => self.commit(crate::llm::Message::user_text(note)).await,
            None => Ok(()),
        }
    }

    /// The texts this working set's `remember` calls kept.
    fn remembered_here(&self) -> Vec<String> {
        self.history
            .iter()
            .flat_map(|m| m.content.iter())
            .filter_map(|block| match block {
                crate::llm::ContentBlock::ToolUse { name, input, .. } if name == Remember::NAME => {
                    input
                        .get("text")
                        .and_then(|t| t.as_str())
                        .map(|t| t.trim().to_string())
                }
                _ => None,
            })
            .collect()
    }
}

/// The note that tells the model of experiences kept since its system prompt was built.
fn growth_note(new: &[&Experience]) -> Option<String> {
    if new.is_empty() {
        return None;
    }
    let mut note = String::from("[mnemo] Kept as experiences since this session began:\n");
    for exp in new {
        let _ = writeln!(note, "- [{}] {}", exp.id, exp.text);
    }
    Some(note)
}

fn render_prompt(base: &str, experiences: &[Experience], archived: bool) -> String {
    let mut prompt = base.to_string();
    if !experiences.is_empty() {
        prompt.push_str(
            "\n# Experiences\n\nDurable facts and lessons kept across sessions. Call `forget` \
             with the id of one that is wrong or outdated; `remember` adds one.\n\n",
        );
        let (shown, left) = within_budget(experiences);
        for exp in shown {
            let scope = match exp.scope {
                Scope::Global => "global",
                Scope::Project(_) => "project",
            };
            let _ = writeln!(prompt, "- [{}] ({scope}) {}", exp.id, exp.text);
        }
        if left > 0 {
            let _ = writeln!(
                prompt,
                "- ({left} older experience(s) are not listed here; memory_search finds them)"
            );
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

/// The experiences the prompt lists within [`EXPERIENCE_TOKENS`]: this project's before the
/// global ones, the newest first in each, and how many are left to recall.
fn within_budget(experiences: &[Experience]) -> (Vec<&Experience>, usize) {
    let mut ranked: Vec<&Experience> = experiences.iter().collect();
    ranked.sort_by_key(|exp| {
        let global = matches!(exp.scope, Scope::Global);
        (global, std::cmp::Reverse((exp.created_at, exp.id)))
    });
    let mut used = 0;
    let mut shown = Vec::new();
    for exp in ranked {
        // The line's id, scope and text.
        let cost = estimate_text(&exp.text) + 8;
        if used + cost > EXPERIENCE_TOKENS {
            break;
        }
        used += cost;
        shown.push(exp);
    }
    let left = experiences.len() - shown.len();
    (shown, left)
}

/// The dream notes under their budget: when both do not fit, each file keeps at least half of
/// it, and what one leaves unused the other may take.
fn render_notes(prompt: &mut String, notes: &DreamNotes) {
    if notes.is_empty() {
        return;
    }
    prompt.push_str(
        "\n# Dream notes\n\nWhat earlier sessions taught, rewritten between sessions from the \
         archive by mnemo's dream cycle.\n",
    );
    let sizes = NoteFile::ALL.map(|file| estimate_text(notes.get(file).trim()));
    let half = DREAM_NOTES_TOKENS / 2;
    for (index, file) in NoteFile::ALL.into_iter().enumerate() {
        let text = notes.get(file).trim();
        if text.is_empty() {
            continue;
        }
        let budget = DREAM_NOTES_TOKENS - sizes[1 - index].min(half);
        let about = match file {
            NoteFile::Memory => "the work and its environment",
            NoteFile::User => "the person",
        };
        let _ = write!(
            prompt,
            "\n## {} ({about})\n\n{}\n",
            file.file_name(),
            within_tokens(text, sizes[index], budget)
        );
    }
}

/// `text` (of `tokens` tokens) whole when it fits `budget`, else its first paragraphs that do.
fn within_tokens(text: &str, tokens: u32, budget: u32) -> String {
    if tokens <= budget {
        return text.to_string();
    }
    let note = "(cut here to fit the prompt; memory_search finds the rest)";
    let mut used = estimate_text(note);
    let mut kept: Vec<&str> = Vec::new();
    for paragraph in paragraphs(text) {
        used += estimate_text(paragraph) + 1;
        if used > budget {
            break;
        }
        kept.push(paragraph);
    }
    kept.push(note);
    kept.join("\n\n")
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

    #[test]
    fn experiences_stay_within_their_budget_this_projects_and_the_newest_first() {
        let many: Vec<Experience> = (0..1000)
            .map(|i| Experience {
                id: i,
                text: format!("Lesson number {i}: the build needs the cache warmed first."),
                scope: match i % 2 {
                    0 => Scope::Global,
                    _ => Scope::Project("/w".into()),
                },
                created_at: i,
                source: "model".into(),
            })
            .collect();
        let prompt = render_prompt("BASE", &many, false);
        let tokens = estimate_text(&prompt);
        assert!(tokens <= EXPERIENCE_TOKENS + 80, "{tokens}");
        assert!(
            prompt.contains("- [999] (project) Lesson number 999"),
            "newest project first"
        );
        assert!(
            !prompt.contains("Lesson number 998:"),
            "global after every project one"
        );
        assert!(
            !prompt.contains("Lesson number 1:"),
            "the oldest wait for recall"
        );
        assert!(prompt.contains("older experience(s) are not listed here; memory_search"));
        let few = render_prompt("BASE", &many[..3], false);
        assert!(few.contains("Lesson number 0:") && !few.contains("not listed"));
    }

    #[test]
    fn dream_notes_are_rendered_within_their_token_budget() {
        let mut prompt = String::new();
        render_notes(&mut prompt, &DreamNotes::default());
        assert!(prompt.is_empty());
        let long: Vec<String> = (0..800)
            .map(|i| format!("- fact number {i} about the build"))
            .collect();
        let notes = DreamNotes {
            memory: long.join("\n\n"),
            user: "- prefers short answers".into(),
        };
        render_notes(&mut prompt, &notes);
        assert!(prompt.contains("## MEMORY.md (the work and its environment)"));
        assert!(prompt.contains("- fact number 0 about the build"));
        assert!(!prompt.contains("- fact number 799 about the build"));
        assert!(prompt.contains("memory_search finds the rest"));
        assert!(prompt.contains("## USER.md (the person)\n\n- prefers short answers"));
        assert!(
            estimate_text(&prompt) <= DREAM_NOTES_TOKENS + 60,
            "{}",
            estimate_text(&prompt)
        );
    }
}
