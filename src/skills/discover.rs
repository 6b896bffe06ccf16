//! Finding the skills of a workspace. Four folders are read, in this order, and the first
//! skill of a name wins: `<config dir>/skills` (the person's own, in mnemo's config directory,
//! so a repository cannot shadow them), `<workspace>/.agents/skills` and
//! `<workspace>/.mnemo/skills` (the project's) and `<workspace>/.claude/skills` (read, never
//! written). Each subfolder with a `SKILL.md` is a
//! skill; a malformed one is left out with a warning naming the file and the problem. Hidden
//! folders (the `.archive` some people keep, editor litter) are skipped. Many skills are read
//! on a few threads: this runs at every session start.

use std::fs::File;
use std::path::{Path, PathBuf};

use super::files::{MAX_RESOURCE_BYTES, read_capped};
use super::parse::parse;
use super::{SKILL_FILE, Skill, SkillSet, SkillSource};
use crate::sandbox::workspace_read::read_bytes;

/// The skills folders of `workspace`, first found wins.
pub fn roots(workspace: &Path, config_dir: &Path) -> [(PathBuf, SkillSource); 4] {
    [
        (config_dir.join("skills"), SkillSource::User),
        (workspace.join(".agents/skills"), SkillSource::Project),
        (workspace.join(".mnemo/skills"), SkillSource::Project),
        (workspace.join(".claude/skills"), SkillSource::Claude),
    ]
}

/// Every skill of the person (`<config_dir>/skills/`, `config_dir` being mnemo's own config
/// directory), the project (`<ws>/.agents/skills/`, `<ws>/.mnemo/skills/`) and Claude's
/// (`<ws>/.claude/skills/`, read-only). Malformed skills are skipped with a warning naming the
/// file and the problem.
pub fn discover(workspace: &Path, config_dir: &Path) -> SkillSet {
    let mut set = SkillSet::default();
    let mut candidates = Vec::new();
    let workspace = std::fs::canonicalize(workspace).unwrap_or_else(|_| workspace.to_path_buf());
    for (root, source) in roots(&workspace, config_dir) {
        let guarded = (source != SkillSource::User).then_some(workspace.as_path());
        if let Err(warning) = list(&root, source, guarded, &mut candidates) {
            set.warn(warning);
        }
    }
    // A later folder of a name is loaded too: it wins when the first one is malformed.
    for loaded in load_all(&candidates) {
        match loaded {
            Ok(Some(skill)) => {
                set.insert(skill);
            }
            Ok(None) => {}
            Err(warning) => set.warn(warning),
        }
    }
    set
}

/// A folder that may hold a skill.
struct Candidate {
    /// Canonical.
    dir: PathBuf,
    folder: String,
    source: SkillSource,
    /// The workspace (canonical) whose guard reads the skill, for a repository's skill.
    workspace: Option<PathBuf>,
}

/// Adds the folders of `root` by name to `candidates`; a warning when it cannot be listed.
fn list(
    root: &Path,
    source: SkillSource,
    workspace: Option<&Path>,
    candidates: &mut Vec<Candidate>,
) -> Result<(), String> {
    let entries = match std::fs::read_dir(root) {
        Ok(entries) => entries,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(format!("{}: cannot list the skills: {e}", root.display())),
    };
    // Canonical once for the folder; only symlinked skills need resolving on their own.
    let canonical_root =
        std::fs::canonicalize(root).map_err(|e| format!("{}: {e}", root.display()))?;
    let mut found: Vec<Candidate> = entries
        .filter_map(Result::ok)
        .filter_map(|entry| {
            let kind = entry.file_type().ok()?;
            let folder = entry.file_name().to_string_lossy().into_owned();
            if folder.starts_with('.') {
                return None;
            }
            let dir = match kind.is_symlink() {
                true => std::fs::canonicalize(entry.path())
                    .ok()
                    .filter(|d| d.is_dir())?,
                false => kind.is_dir().then(|| canonical_root.join(&folder))?,
            };
            Some(Candidate {
                dir,
                folder,
                source,
                workspace: workspace.map(Path::to_path_buf),
            })
        })
        .collect();
    found.sort_unstable_by(|a, b| a.folder.cmp(&b.folder));
    candidates.extend(found);
    Ok(())
}

/// Candidates per thread at least: fewer are not worth a thread.
const PER_THREAD: usize = 64;

/// Loads every candidate, in order, on a few threads when there are many.
fn load_all(candidates: &[Candidate]) -> Vec<Result<Option<Skill>, String>> {
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get().min(8));
    let chunk = candidates.len().div_ceil(threads).max(PER_THREAD);
    if candidates.len() <= chunk {
        return candidates.iter().map(load).collect();
    }
    std::thread::scope(|scope| {
        let parts: Vec<_> = candidates
            .chunks(chunk)
            .map(|part| {
                (
                    part,
                    scope.spawn(|| part.iter().map(load).collect::<Vec<_>>()),
                )
            })
            .collect();
        parts
            .into_iter()
            .flat_map(|(part, thread)| {
                thread.join().unwrap_or_else(|_| {
                    let failed =
                        |c: &Candidate| Err(format!("{}: reading failed", c.dir.display()));
                    part.iter().map(failed).collect()
                })
            })
            .collect()
    })
}

/// A repository's `SKILL.md` at `path` (canonical folder), read through the workspace guard:
/// a skill folder linked out of the workspace, or a FIFO in place of the file, is not read.
fn read_guarded(workspace: &Path, path: &Path) -> Result<Option<String>, String> {
    let Ok(relative) = path.strip_prefix(workspace) else {
        return Err(format!(
            "{}: a skill folder linked out of the workspace; not read",
            path.display()
        ));
    };
    let limit = usize::try_from(MAX_RESOURCE_BYTES).unwrap_or(usize::MAX);
    let confinement = crate::sandbox::Confinement::default();
    let found = read_bytes(workspace, relative, &confinement, limit).map_err(|e| e.to_string())?;
    let Some((bytes, truncated)) = found else {
        return Ok(None);
    };
    if truncated {
        return Err(format!(
            "{}: it has more than the {MAX_RESOURCE_BYTES} bytes a skill file may have",
            path.display()
        ));
    }
    String::from_utf8(bytes)
        .map(Some)
        .map_err(|_| format!("{}: it is not UTF-8 text", path.display()))
}

/// The skill in `dir`, `None` when the folder has no `SKILL.md`, or a warning.
fn load(candidate: &Candidate) -> Result<Option<Skill>, String> {
    let Candidate {
        dir,
        folder,
        source,
        workspace,
    } = candidate;
    let path = dir.join(SKILL_FILE);
    let text = match workspace {
        Some(workspace) => match read_guarded(workspace, &path)? {
            Some(text) => text,
            None => return Ok(None),
        },
        None => {
            let file = match File::open(&path) {
                Ok(file) => file,
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
                Err(e) => return Err(format!("{}: {e}", path.display())),
            };
            read_capped(file).map_err(|problem| format!("{}: {problem}", path.display()))?
        }
    };
    let parsed = parse(&text, folder).map_err(|e| e.in_file(&path).to_string())?;
    Ok(Some(Skill {
        name: parsed.name,
        description: parsed.description,
        body: parsed.body,
        dir: dir.clone(),
        source: *source,
        license: parsed.license,
        compatibility: parsed.compatibility,
        allowed_tools: parsed.allowed_tools,
        metadata: parsed.metadata,
    }))
}
