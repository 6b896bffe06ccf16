//! Finding the skills of a workspace. Four folders are read, in this order, and the first
//! skill of a name wins: `<workspace>/.agents/skills` and `<workspace>/.mnemo/skills` (the
//! project's), `<config dir>/skills` (the person's own, in mnemo's config directory) and
//! `<workspace>/.claude/skills` (read, never written). Each subfolder with a `SKILL.md` is a
//! skill; a malformed one is left out with a warning naming the file and the problem. Hidden
//! folders (the `.archive` some people keep, editor litter) are skipped.

use std::fs::File;
use std::path::{Path, PathBuf};

use super::files::read_capped;
use super::parse::parse;
use super::{SKILL_FILE, Skill, SkillSet, SkillSource};

/// The skills folders of `workspace`, first found wins.
pub fn roots(workspace: &Path, config_dir: &Path) -> [(PathBuf, SkillSource); 4] {
    [
        (workspace.join(".agents/skills"), SkillSource::Project),
        (workspace.join(".mnemo/skills"), SkillSource::Project),
        (config_dir.join("skills"), SkillSource::User),
        (workspace.join(".claude/skills"), SkillSource::Claude),
    ]
}

/// Every skill of the project (`<ws>/.agents/skills/`, `<ws>/.mnemo/skills/`), the person's
/// (`<config_dir>/skills/`, `config_dir` being mnemo's own config directory) and Claude's
/// (`<ws>/.claude/skills/`, read-only). Malformed skills are skipped with a warning naming the
/// file and the problem.
pub fn discover(workspace: &Path, config_dir: &Path) -> SkillSet {
    let mut set = SkillSet::default();
    for (root, source) in roots(workspace, config_dir) {
        scan(&root, source, &mut set);
    }
    set
}

fn scan(root: &Path, source: SkillSource, set: &mut SkillSet) {
    let entries = match std::fs::read_dir(root) {
        Ok(entries) => entries,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return,
        Err(e) => {
            set.warn(format!("{}: cannot list the skills: {e}", root.display()));
            return;
        }
    };
    // Canonical once for the folder; only symlinked skills need resolving on their own.
    let Ok(canonical_root) = std::fs::canonicalize(root) else {
        return;
    };
    let mut folders: Vec<(String, bool)> = entries
        .filter_map(Result::ok)
        .filter_map(|entry| {
            let kind = entry.file_type().ok()?;
            let folder = entry.file_name().to_string_lossy().into_owned();
            let followed = kind.is_symlink() && entry.path().is_dir();
            ((kind.is_dir() || followed) && !folder.starts_with('.')).then_some((folder, followed))
        })
        .collect();
    folders.sort_unstable();
    for (folder, symlinked) in folders {
        if set.get(&folder).is_some() {
            continue;
        }
        let dir = match symlinked {
            true => match std::fs::canonicalize(root.join(&folder)) {
                Ok(dir) => dir,
                Err(_) => continue,
            },
            false => canonical_root.join(&folder),
        };
        match load(dir, &folder, source) {
            Ok(Some(skill)) => {
                set.insert(skill);
            }
            Ok(None) => {}
            Err(warning) => set.warn(warning),
        }
    }
}

/// The skill in `dir`, `None` when the folder has no `SKILL.md`, or a warning.
fn load(dir: PathBuf, folder: &str, source: SkillSource) -> Result<Option<Skill>, String> {
    let path = dir.join(SKILL_FILE);
    let file = match File::open(&path) {
        Ok(file) => file,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(format!("{}: {e}", path.display())),
    };
    let text = read_capped(file).map_err(|problem| format!("{}: {problem}", path.display()))?;
    let parsed = parse(&text, folder).map_err(|e| e.in_file(&path).to_string())?;
    Ok(Some(Skill {
        name: parsed.name,
        description: parsed.description,
        body: parsed.body,
        dir,
        source,
        license: parsed.license,
        compatibility: parsed.compatibility,
        allowed_tools: parsed.allowed_tools,
        metadata: parsed.metadata,
    }))
}
