//! Skills in the session: the catalogue in the system prompt, which skills a turn loaded (their
//! outcome is counted when it ends, and their bodies come back after a compaction), and the
//! one extra model call that asks the agent to distil a long successful turn into a skill.

use std::sync::Arc;

use super::Session;
use crate::llm::Message;
use crate::memory::StoreError;
use crate::tools::skills::{LoadSkill, SkillLibrary};
use crate::tools::{TypedTool, skills as skill_tools};

/// How the session uses skills: the `[skills]` section.
pub type SkillSettings = crate::config::SkillsConfig;

/// Finds the skills for a session in `workspace` and ages the learned ones; returns the
/// library and what the person should be told (malformed skills, ageing).
pub async fn prepare_skills(
    store: &crate::memory::Store,
    workspace: std::path::PathBuf,
    config_dir: std::path::PathBuf,
) -> Result<(Arc<SkillLibrary>, Vec<String>), StoreError> {
    let library = SkillLibrary::empty(workspace, config_dir);
    let notices = prepare_library(store, &library).await?;
    Ok((Arc::new(library), notices))
}

/// Looks for `library`'s skills, ages the learned ones and indexes them for search; returns
/// what the person should be told (malformed skills, ageing).
async fn prepare_library(
    store: &crate::memory::Store,
    library: &SkillLibrary,
) -> Result<Vec<String>, StoreError> {
    library.reload();
    let set = library.set();
    let mut notices: Vec<String> = set.warnings().to_vec();
    let stats = store.call(|db| db.skill_stats()).await?;
    let now = super::turn_loop::now_millis();
    let report = crate::skills::age(&set, &stats, &library.config_dir, now);
    if !report.archived.is_empty() {
        library.reload();
    }
    notices.extend(report.notice());
    let entries = library.index_entries();
    store
        .call(move |db| {
            report.record(db)?;
            db.index_skills(&entries)
        })
        .await?;
    Ok(notices)
}

impl Session {
    /// Gives the session `library`'s skills: the catalogue, the skill tools and learning.
    pub fn set_skills(&mut self, library: Arc<SkillLibrary>, settings: SkillSettings) {
        skill_tools::register(&mut self.tools, library.clone(), &self.services.store);
        self.skills = Some((library, settings));
    }

    /// Like [`Session::set_skills`], with the looking for skills (and ageing them) left to the
    /// first turn, so that a person can start typing without waiting for it.
    pub fn find_skills_later(&mut self, library: Arc<SkillLibrary>, settings: SkillSettings) {
        self.set_skills(library, settings);
        self.skills_pending = true;
    }

    /// Finds the skills if that was left for now; what the person should know is told.
    pub(super) async fn find_pending_skills(&mut self) -> Result<(), StoreError> {
        if !std::mem::take(&mut self.skills_pending) {
            return Ok(());
        }
        let Some((library, _)) = &self.skills else {
            return Ok(());
        };
        let library = library.clone();
        for message in prepare_library(&self.services.store, &library).await? {
            self.emit(crate::protocol::Event::Notice { message }).await;
        }
        Ok(())
    }

    /// The catalogue section of the system prompt, within its token budget.
    pub(super) async fn skill_catalog(&self) -> Result<String, StoreError> {
        let Some((library, settings)) = &self.skills else {
            return Ok(String::new());
        };
        if library.with_set(|set| set.is_empty()) {
            return Ok(String::new());
        }
        let stats = self.services.store.call(|db| db.skill_stats()).await?;
        let window = self.chain.primary().map_or(0, |m| m.context_window);
        let budget = settings.catalog_budget(window);
        let trusted = library.repository_trusted;
        Ok(library.with_set(|set| crate::skills::catalog(set, &stats, budget, trusted)))
    }

    /// Notes the skills the last tool calls loaded.
    pub(super) fn note_skills(&mut self) {
        for input in self.succeeded_calls(LoadSkill::NAME) {
            let Some(name) = input.get("name").and_then(|n| n.as_str()) else {
                continue;
            };
            if !self.skills_in_use.iter().any(|s| s == name) {
                self.skills_in_use.push(name.to_string());
            }
        }
    }

    /// Counts how the turn ended for every skill it loaded.
    pub(super) async fn count_skill_outcomes(&mut self, success: bool) {
        let used = std::mem::take(&mut self.skills_in_use);
        if used.is_empty() {
            return;
        }
        // Bookkeeping: a failure to count must not fail the turn.
        let _ = self
            .services
            .store
            .call(move |db| {
                for name in &used {
                    db.skill_outcome(name, success)?;
                }
                Ok(())
            })
            .await;
    }

    /// After a compaction: the skills in use are named in the summary and their bodies are
    /// loaded again, so the work goes on by them.
    pub(super) async fn reload_skills(&mut self) -> Result<(), StoreError> {
        let Some((library, _)) = &self.skills else {
            return Ok(());
        };
        let bodies: Vec<String> = self
            .skills_in_use
            .iter()
            .filter_map(|name| library.get(name))
            .map(|skill| format!("# Skill {}\n\n{}", skill.name, skill.body.trim()))
            .collect();
        if bodies.is_empty() {
            return Ok(());
        }
        if let Some(summary) = &mut self.summary {
            summary.push_str(&format!(
                "\nSkills in use: {}",
                self.skills_in_use.join(", ")
            ));
        }
        let text = format!(
            "[mnemo] The skills you were using, loaded again after the compaction:\n\n{}",
            bodies.join("\n\n")
        );
        self.commit(Message::user_text(text)).await
    }

    /// Whether the turn that just succeeded was long enough to be worth a skill, and the
    /// question was not asked in it yet.
    pub(super) fn worth_a_skill(&self, tool_calls: u32) -> bool {
        let Some((_, settings)) = &self.skills else {
            return false;
        };
        settings.learn_after_steps > 0
            && tool_calls >= settings.learn_after_steps
            && self.report_succeeded()
    }

    /// The question that asks the agent to distil the turn, naming the closest skills.
    pub(super) async fn distil_request(&self, tool_calls: u32) -> String {
        let topic: String = self
            .history
            .iter()
            .rev()
            .find(|m| m.role == crate::llm::Role::User && !m.text().trim().is_empty())
            .map(|m| m.text())
            .unwrap_or_default();
        let similar = self
            .services
            .store
            .call(move |db| db.similar_skills(&topic, 5))
            .await
            .unwrap_or_default();
        let closest = match similar.is_empty() {
            true => "none".to_string(),
            false => similar.join(", "),
        };
        format!(
            "[mnemo] This task succeeded after {tool_calls} tool calls. If what worked will \
             help next time, distil it into a skill: the facts of the environment you verified, \
             the steps, the pitfalls. Closest existing skills: {closest}. Update one of them \
             with skill_patch rather than adding a near-duplicate, or write a new one with \
             skill_write and a `verify` command that checks it works: mnemo runs it and saves \
             the skill only when it passes (otherwise the person decides). If nothing is worth \
             keeping, answer \"nothing worth keeping\"."
        )
    }
}
