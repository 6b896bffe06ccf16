//! Skills: procedures written down as folders in the open Agent Skills format (a `SKILL.md`
//! with YAML frontmatter and a markdown body, other files of the folder being resources).
//! People write them, the agent learns them after work that went well, and both read them
//! the same way: the system prompt lists every skill's name and description (the catalogue),
//! `load_skill` reads a body when a task calls for it. This module finds skills on disk,
//! checks and writes them, builds the catalogue and ages out learned skills nobody uses; their
//! use counts live in the store (`memory::skills`).

mod age;
mod catalog;
mod discover;
mod files;
mod parse;

use std::collections::BTreeMap;
use std::path::PathBuf;

use serde_json::{Map, Value};

pub use age::{
    ARCHIVE_AFTER_DAYS, AgeReport, Archived, STALE_AFTER_DAYS, age, archive, archive_dir,
};
pub use catalog::{SUSPECT_NOTE, catalog};
pub use discover::{discover, roots};
pub use files::{MAX_RESOURCE_BYTES, patch_skill, read_resource, write_skill};
pub use parse::{ParsedSkill, parse, validate_description, validate_name};

/// The file that makes a folder a skill.
pub const SKILL_FILE: &str = "SKILL.md";

/// Where a skill was found. Claude's folder (`.claude/skills`) is read, never written.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub enum SkillSource {
    /// `<workspace>/.agents/skills` or `<workspace>/.mnemo/skills`.
    Project,
    /// `<mnemo config dir>/skills`.
    User,
    /// `<workspace>/.claude/skills`, read-only.
    Claude,
}

impl SkillSource {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Project => "project",
            Self::User => "user",
            Self::Claude => "claude",
        }
    }
}

/// One skill as found on disk.
#[derive(Debug, Clone, PartialEq)]
pub struct Skill {
    pub name: String,
    pub description: String,
    /// The markdown after the frontmatter.
    pub body: String,
    /// The skill's folder, canonical.
    pub dir: PathBuf,
    pub source: SkillSource,
    pub license: Option<String>,
    pub compatibility: Option<String>,
    pub allowed_tools: Vec<String>,
    pub metadata: Map<String, Value>,
}

impl Skill {
    /// Whether mnemo may change or move the skill (not one of Claude's).
    pub fn writable(&self) -> bool {
        match self.source {
            SkillSource::Project | SkillSource::User => true,
            SkillSource::Claude => false,
        }
    }

    /// `metadata.verify`: a shell command checking that a learned skill still works.
    pub fn verify_command(&self) -> Option<&str> {
        self.metadata
            .get("verify")
            .and_then(Value::as_str)
            .map(str::trim)
            .filter(|command| !command.is_empty())
    }

    /// The skill's `SKILL.md`.
    pub fn file(&self) -> PathBuf {
        self.dir.join(SKILL_FILE)
    }
}

/// The skills of a workspace by name (the first found of a name wins) and the warnings about
/// the ones that could not be read.
#[derive(Debug, Clone, Default)]
pub struct SkillSet {
    skills: BTreeMap<String, Skill>,
    warnings: Vec<String>,
}

impl SkillSet {
    pub fn get(&self, name: &str) -> Option<&Skill> {
        self.skills.get(name)
    }

    /// Every skill, by name.
    pub fn iter(&self) -> impl Iterator<Item = &Skill> {
        self.skills.values()
    }

    pub fn len(&self) -> usize {
        self.skills.len()
    }

    pub fn is_empty(&self) -> bool {
        self.skills.is_empty()
    }

    /// One line per skill left out: the file and what is wrong with it.
    pub fn warnings(&self) -> &[String] {
        &self.warnings
    }

    /// Adds `skill` unless one of its name is already there; true when added.
    fn insert(&mut self, skill: Skill) -> bool {
        match self.skills.entry(skill.name.clone()) {
            std::collections::btree_map::Entry::Occupied(_) => false,
            std::collections::btree_map::Entry::Vacant(slot) => {
                slot.insert(skill);
                true
            }
        }
    }

    fn warn(&mut self, warning: String) {
        self.warnings.push(warning);
    }
}

/// Why a skill could not be read, written or used.
#[derive(Debug, thiserror::Error)]
pub enum SkillError {
    /// A `SKILL.md` that breaks the format.
    #[error("{}: {problem}", file.display())]
    Invalid { file: PathBuf, problem: String },

    #[error("a skill named `{name}` already exists in {}; patch it instead", dir.display())]
    Exists { name: String, dir: PathBuf },

    #[error(
        "skill `{name}` comes from {} and is read-only for mnemo; copy it to .agents/skills \
         to change it",
        dir.display()
    )]
    ReadOnly { name: String, dir: PathBuf },

    #[error(
        "the text to replace occurs {count} times in {}; it must occur exactly once{}",
        file.display(),
        if *count == 0 { " (copy it exactly from the file)" } else { " (include more of the text around it)" }
    )]
    NotUnique { file: PathBuf, count: usize },

    #[error("cannot read `{path}` of skill `{skill}`: {problem}")]
    Resource {
        skill: String,
        path: String,
        problem: String,
    },

    #[error("{}: {source}", path.display())]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
}

impl SkillError {
    /// The same error, naming `file` as the one at fault.
    fn in_file(self, path: &std::path::Path) -> Self {
        match self {
            Self::Invalid { problem, .. } => Self::Invalid {
                file: path.to_path_buf(),
                problem,
            },
            other => other,
        }
    }

    fn io(path: &std::path::Path) -> impl FnOnce(std::io::Error) -> Self {
        let path = path.to_path_buf();
        move |source| Self::Io { path, source }
    }
}
