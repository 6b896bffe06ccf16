//! Writing, patching and reading the files of a skill. A new or patched `SKILL.md` is
//! checked to parse before it is written and replaces the old one by a rename, so a reader
//! never meets half a file. Resources are read through directory handles beneath the skill's
//! folder (`sandbox::handles`): `..`, absolute paths and symbolic links are refused, so a
//! skill cannot hand the agent a file from elsewhere.

use std::fs::File;
use std::io::Read;
use std::path::{Component, Path};

use serde_json::{Map, Value};

use super::parse::{parse, render, validate_description, validate_name};
use super::{SKILL_FILE, Skill, SkillError};
use crate::sandbox::handles;

/// The most a resource (or a `SKILL.md`) may hold.
pub const MAX_RESOURCE_BYTES: u64 = 256 * 1024;

/// Creates `<root>/<name>/SKILL.md` (root is a skills folder, created when missing); refuses
/// an existing name and an invalid name or description. Returns the new folder, canonical.
pub fn write_skill(
    root: &Path,
    name: &str,
    description: &str,
    body: &str,
    metadata: &Map<String, Value>,
) -> Result<std::path::PathBuf, SkillError> {
    let file = root.join(name).join(SKILL_FILE);
    let invalid = |problem: String| SkillError::Invalid {
        file: file.clone(),
        problem,
    };
    validate_name(name).map_err(invalid)?;
    validate_description(description).map_err(invalid)?;
    let text = render(name, description, body, metadata)?;
    parse(&text, name).map_err(|e| e.in_file(&file))?;
    std::fs::create_dir_all(root).map_err(SkillError::io(root))?;
    let root = std::fs::canonicalize(root).map_err(SkillError::io(root))?;
    let dir = root.join(name);
    let exists = || SkillError::Exists {
        name: name.to_owned(),
        dir: dir.clone(),
    };
    if dir.symlink_metadata().is_ok() {
        return Err(exists());
    }
    match std::fs::create_dir(&dir) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => return Err(exists()),
        Err(e) => return Err(SkillError::io(&dir)(e)),
    }
    replace_skill_file(&dir, &text)?;
    Ok(dir)
}

/// Replaces `old_text` by `new_text` in the skill's `SKILL.md` (frontmatter or body).
/// `old_text` must occur exactly once; the result must still be a valid skill of the same
/// name. Refused for read-only skills.
pub fn patch_skill(skill: &Skill, old_text: &str, new_text: &str) -> Result<(), SkillError> {
    if !skill.writable() {
        return Err(SkillError::ReadOnly {
            name: skill.name.clone(),
            dir: skill.dir.clone(),
        });
    }
    let file = skill.file();
    if old_text.is_empty() {
        return Err(SkillError::Invalid {
            file,
            problem: "the text to replace is empty; copy it from the file".to_owned(),
        });
    }
    let text = read_resource(skill, SKILL_FILE)?;
    let count = text.matches(old_text).count();
    if count != 1 {
        return Err(SkillError::NotUnique { file, count });
    }
    let patched = text.replacen(old_text, new_text, 1);
    let folder = skill
        .dir
        .file_name()
        .map(|name| name.to_string_lossy().into_owned())
        .unwrap_or_default();
    if let Err(SkillError::Invalid { problem, .. }) = parse(&patched, &folder) {
        return Err(SkillError::Invalid {
            file,
            problem: format!("after the change {problem}; nothing was written"),
        });
    }
    replace_skill_file(&skill.dir, &patched)
}

/// A resource of the skill (`path` relative to its folder, e.g. `scripts/run.sh`): at most
/// [`MAX_RESOURCE_BYTES`] of UTF-8 text.
pub fn read_resource(skill: &Skill, path: &str) -> Result<String, SkillError> {
    let refused = |problem: String| SkillError::Resource {
        skill: skill.name.clone(),
        path: path.to_owned(),
        problem,
    };
    let relative = Path::new(path);
    let plain = relative
        .components()
        .all(|c| matches!(c, Component::Normal(_) | Component::CurDir));
    if path.is_empty() || !plain {
        return Err(refused(
            "only paths inside the skill's folder can be read (no `..`, no absolute path)"
                .to_owned(),
        ));
    }
    let file = handles::open_read(&skill.dir, relative).map_err(|e| {
        refused(match through_symlink(&skill.dir, relative) {
            true => "it goes through a symbolic link; only files inside the skill's folder \
                     can be read"
                .to_owned(),
            false => e.to_string(),
        })
    })?;
    read_capped(file).map_err(refused)
}

/// Whether a component of `relative` beneath `dir` is a symbolic link.
fn through_symlink(dir: &Path, relative: &Path) -> bool {
    let mut path = dir.to_path_buf();
    relative.components().any(|component| {
        path.push(component);
        path.symlink_metadata()
            .is_ok_and(|m| m.file_type().is_symlink())
    })
}

/// The text of `file`, or what keeps it from being read: larger than
/// [`MAX_RESOURCE_BYTES`], or not UTF-8.
pub(super) fn read_capped(file: File) -> Result<String, String> {
    let len = file.metadata().map_err(|e| e.to_string())?.len();
    let too_large = |len: u64| {
        format!("it has {len} bytes, more than the {MAX_RESOURCE_BYTES} a skill file may have")
    };
    if len > MAX_RESOURCE_BYTES {
        return Err(too_large(len));
    }
    let mut bytes = Vec::with_capacity(usize::try_from(len).unwrap_or(0));
    file.take(MAX_RESOURCE_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| e.to_string())?;
    if bytes.len() as u64 > MAX_RESOURCE_BYTES {
        return Err(too_large(bytes.len() as u64));
    }
    String::from_utf8(bytes).map_err(|_| "it is not UTF-8 text".to_owned())
}

/// Writes `text` as `<dir>/SKILL.md` by way of a temporary file renamed over it (a symbolic
/// link there is replaced, not followed).
fn replace_skill_file(dir: &Path, text: &str) -> Result<(), SkillError> {
    let temporary = dir.join(format!(
        ".{SKILL_FILE}.{}.tmp",
        uuid::Uuid::new_v4().simple()
    ));
    let written = std::fs::write(&temporary, text)
        .and_then(|()| std::fs::rename(&temporary, dir.join(SKILL_FILE)));
    if written.is_err() {
        let _ = std::fs::remove_file(&temporary);
    }
    written.map_err(SkillError::io(&dir.join(SKILL_FILE)))
}
