//! Skills the agent wrote without a check that passed: held as drafts until the person
//! accepts one (`mnemo skills accept NAME`) or rejects it. Kept in one bounded list.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use super::StoreError;
use super::db::{Db, now_ms};
use super::types::Millis;

const DRAFTS_KEY: &str = "skills.drafts";
/// Drafts kept at once; a new one past it drops the oldest.
pub const MAX_DRAFTS: usize = 32;

/// A skill waiting for the person.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SkillDraft {
    pub name: String,
    pub description: String,
    pub body: String,
    /// The skills folder it goes into when accepted.
    pub root: PathBuf,
    pub verify: Option<String>,
    /// Why it was not saved as a skill.
    pub why: String,
    pub session: String,
    pub created_at: Millis,
}

impl Db {
    /// Holds `draft`, replacing one of the same name; returns how many drafts were dropped to
    /// stay within [`MAX_DRAFTS`].
    pub fn hold_skill_draft(&mut self, mut draft: SkillDraft) -> Result<usize, StoreError> {
        draft.created_at = now_ms();
        let mut drafts = self.skill_drafts()?;
        drafts.retain(|d| d.name != draft.name);
        drafts.push(draft);
        let dropped = drafts.len().saturating_sub(MAX_DRAFTS);
        drafts.drain(..dropped);
        self.kv_set(DRAFTS_KEY, &serde_json::to_string(&drafts)?)?;
        Ok(dropped)
    }

    /// Every draft, oldest first.
    pub fn skill_drafts(&self) -> Result<Vec<SkillDraft>, StoreError> {
        match self.kv_get(DRAFTS_KEY)? {
            Some(text) => Ok(serde_json::from_str(&text)?),
            None => Ok(Vec::new()),
        }
    }

    /// Removes and returns the draft named `name`.
    pub fn take_skill_draft(&mut self, name: &str) -> Result<SkillDraft, StoreError> {
        let mut drafts = self.skill_drafts()?;
        let at =
            drafts
                .iter()
                .position(|d| d.name == name)
                .ok_or_else(|| StoreError::NotFound {
                    what: "skill draft",
                    key: name.to_string(),
                })?;
        let draft = drafts.remove(at);
        self.kv_set(DRAFTS_KEY, &serde_json::to_string(&drafts)?)?;
        Ok(draft)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn draft(name: &str) -> SkillDraft {
        SkillDraft {
            name: name.into(),
            description: "d".into(),
            body: "b".into(),
            root: PathBuf::from("/w/.agents/skills"),
            verify: None,
            why: "no check".into(),
            session: "s".into(),
            created_at: 0,
        }
    }

    #[test]
    fn drafts_are_bounded_replaced_by_name_and_taken_once() -> Result<(), StoreError> {
        let mut db = Db::open_in_memory()?;
        for i in 0..MAX_DRAFTS + 3 {
            db.hold_skill_draft(draft(&format!("d{i}")))?;
        }
        let drafts = db.skill_drafts()?;
        assert_eq!(drafts.len(), MAX_DRAFTS);
        assert_eq!(drafts[0].name, "d3", "the oldest were dropped");
        db.hold_skill_draft(SkillDraft {
            body: "newer".into(),
            ..draft("d5")
        })?;
        assert_eq!(db.skill_drafts()?.len(), MAX_DRAFTS);
        assert_eq!(db.take_skill_draft("d5")?.body, "newer");
        assert!(db.take_skill_draft("d5").is_err());
        Ok(())
    }
}
