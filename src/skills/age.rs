//! Ageing: learned skills nobody uses stop taking room. At session start, a learned, unpinned
//! skill unused for 30 days (counted from its last load, else from when it was written) is
//! stale: left out of the catalogue, still loadable by name, fresh again once loaded. After
//! 90 days its folder moves to the archive, `<config dir>/skills-archive/<name>-<date>/`
//! (the date in UTC; `-2`, `-3`… when that exists), from where a person can move it back.
//! `mnemo skills rm` archives the same way. People's and imported skills never age.

use std::path::{Path, PathBuf};

use super::{Skill, SkillError, SkillSet, SkillSource};
use crate::memory::skills::{SkillOrigin, SkillStats};
use crate::memory::{Db, StoreError};

/// Days without use after which a learned skill is stale.
pub const STALE_AFTER_DAYS: i64 = 30;
/// Days without use after which a learned skill is archived.
pub const ARCHIVE_AFTER_DAYS: i64 = 90;

const DAY_MS: i64 = 24 * 60 * 60 * 1000;

/// A skill folder moved to the archive.
#[derive(Debug, Clone, PartialEq)]
pub struct Archived {
    pub name: String,
    pub to: PathBuf,
}

/// What one ageing run did.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct AgeReport {
    /// Learned skills that became stale in this run (those already marked keep their mark).
    pub stale: Vec<String>,
    /// Learned skills moved to the archive.
    pub archived: Vec<Archived>,
    /// Skills that were due for the archive but could not be moved, and why.
    pub warnings: Vec<String>,
}

impl AgeReport {
    pub fn is_empty(&self) -> bool {
        self.stale.is_empty() && self.archived.is_empty() && self.warnings.is_empty()
    }

    /// Writes the run to the store: stale marks set, the stats of archived skills dropped.
    pub fn record(&self, db: &mut Db) -> Result<(), StoreError> {
        for name in &self.stale {
            db.set_skill_stale(name, true)?;
        }
        for archived in &self.archived {
            db.forget_skill(&archived.name)?;
        }
        Ok(())
    }

    /// Applies the run to stats read before it, as `record` does to the store, so the
    /// catalogue can be built without reading them again.
    pub fn apply(&self, stats: &mut Vec<SkillStats>) {
        stats.retain(|s| !self.archived.iter().any(|a| a.name == s.name));
        for s in stats.iter_mut() {
            s.stale |= self.stale.contains(&s.name);
        }
    }

    /// A line for the person, `None` when nothing happened.
    pub fn notice(&self) -> Option<String> {
        let mut parts = Vec::new();
        if !self.stale.is_empty() {
            parts.push(format!(
                "learned skills unused for {STALE_AFTER_DAYS} days left out of the catalogue \
                 (load_skill still loads them): {}",
                self.stale.join(", ")
            ));
        }
        if !self.archived.is_empty() {
            let names: Vec<&str> = self.archived.iter().map(|a| a.name.as_str()).collect();
            parts.push(format!(
                "learned skills unused for {ARCHIVE_AFTER_DAYS} days archived: {}",
                names.join(", ")
            ));
        }
        parts.extend(self.warnings.iter().cloned());
        (!parts.is_empty()).then(|| format!("Skills: {}.", parts.join("; ")))
    }
}

/// Ages the learned skills of `skills` by their `stats` at `now_millis`: marks the ones
/// unused for [`STALE_AFTER_DAYS`] stale and archives the ones unused for
/// [`ARCHIVE_AFTER_DAYS`] (see the module). Pinned skills and people's skills never age.
pub fn age(
    skills: &SkillSet,
    stats: &[SkillStats],
    config_dir: &Path,
    now_millis: i64,
) -> AgeReport {
    let mut report = AgeReport::default();
    for stat in stats {
        if stat.origin != SkillOrigin::Learned || stat.pinned {
            continue;
        }
        // Only what mnemo keeps in the person's folder: a repository's skill of the same name
        // (tracked, maybe) is never moved out of the checkout.
        let Some(skill) = skills
            .get(&stat.name)
            .filter(|s| s.source == SkillSource::User)
        else {
            continue;
        };
        let idle_days = (now_millis - stat.last_used.unwrap_or(stat.created_at)) / DAY_MS;
        if idle_days >= ARCHIVE_AFTER_DAYS {
            match archive(skill, config_dir, now_millis) {
                Ok(to) => {
                    report.archived.push(Archived {
                        name: stat.name.clone(),
                        to,
                    });
                    continue;
                }
                Err(e) => report.warnings.push(format!("cannot archive: {e}")),
            }
        }
        if idle_days >= STALE_AFTER_DAYS && !stat.stale {
            report.stale.push(stat.name.clone());
        }
    }
    report
}

/// The archive folder in mnemo's config directory.
pub fn archive_dir(config_dir: &Path) -> PathBuf {
    config_dir.join("skills-archive")
}

/// Moves the folder of `skill` to `<config_dir>/skills-archive/<name>-<date>/` and returns
/// where it went. Refused for read-only skills.
pub fn archive(skill: &Skill, config_dir: &Path, now_millis: i64) -> Result<PathBuf, SkillError> {
    if !skill.writable() {
        return Err(SkillError::ReadOnly {
            name: skill.name.clone(),
            dir: skill.dir.clone(),
        });
    }
    let archive = archive_dir(config_dir);
    std::fs::create_dir_all(&archive).map_err(SkillError::io(&archive))?;
    let date = chrono::DateTime::from_timestamp_millis(now_millis)
        .map(|t| t.format("%Y-%m-%d").to_string())
        .unwrap_or_else(|| "undated".to_owned());
    let base = format!("{}-{date}", skill.name);
    let mut target = archive.join(&base);
    let mut n = 2;
    while target.symlink_metadata().is_ok() {
        target = archive.join(format!("{base}-{n}"));
        n += 1;
    }
    move_dir(&skill.dir, &target)?;
    Ok(target)
}

/// Renames `from` to `to`; across file systems, copies and then removes it.
fn move_dir(from: &Path, to: &Path) -> Result<(), SkillError> {
    match std::fs::rename(from, to) {
        Ok(()) => Ok(()),
        Err(e) if e.raw_os_error() == Some(libc::EXDEV) => {
            if let Err(e) = copy_tree(from, to) {
                let _ = std::fs::remove_dir_all(to);
                return Err(SkillError::io(to)(e));
            }
            std::fs::remove_dir_all(from).map_err(SkillError::io(from))
        }
        Err(e) => Err(SkillError::io(from)(e)),
    }
}

/// Copies the folder `from` to the new folder `to`: files, folders, and symbolic links as
/// links (never followed).
fn copy_tree(from: &Path, to: &Path) -> std::io::Result<()> {
    std::fs::create_dir(to)?;
    for entry in std::fs::read_dir(from)? {
        let entry = entry?;
        let kind = entry.file_type()?;
        let target = to.join(entry.file_name());
        if kind.is_dir() {
            copy_tree(&entry.path(), &target)?;
        } else if kind.is_symlink() {
            std::os::unix::fs::symlink(std::fs::read_link(entry.path())?, &target)?;
        } else if kind.is_file() {
            std::fs::copy(entry.path(), &target)?;
        }
    }
    Ok(())
}

#[cfg(test)]
#[path = "age_tests.rs"]
mod tests;
