//! Instruction files below the workspace root: the `AGENTS.md` (or `CLAUDE.md` where no
//! `AGENTS.md` can be read) of each directory between the root and one the agent works in.
//! They arrive as text after the tool results that first touched that directory, once per
//! file per session, so the system prompt and the cached prefix of the request stay as they
//! were. Which directories were given is kept with the session, so a resume does not repeat
//! them.

use std::collections::BTreeSet;
use std::path::{Component, Path, PathBuf};

use serde_json::Value;

use super::Session;
use crate::memory::StoreError;
use crate::protocol::Event;
use crate::sandbox::Confinement;
use crate::sandbox::workspace_read::read_text;
use crate::tools::TypedTool;
use crate::tools::fs_read::{ListDir, ReadFile};
use crate::tools::fs_write::{EditFile, WriteFile};
use crate::tools::search::{Glob, Grep};
use crate::tools::shell::Shell;

/// The files of one directory, in the order they are looked for.
const INSTRUCTION_FILES: [&str; 2] = ["AGENTS.md", "CLAUDE.md"];
/// An instruction file is cut here (head and tail kept) so a huge one cannot crowd out the
/// conversation.
pub(super) const MAX_INSTRUCTIONS_BYTES: usize = 32 * 1024;
/// At most this much of an instruction file is read.
const READ_LIMIT: usize = 256 * 1024;
/// Directory levels below the root looked at for one touched directory.
const MAX_DEPTH: usize = 32;

/// An instruction file that was read.
pub(super) struct Instructions {
    /// Its path relative to the workspace.
    pub name: String,
    /// Its text, cut to [`MAX_INSTRUCTIONS_BYTES`] with a note saying what was left out.
    pub text: String,
}

/// The instruction file of `dir` (relative to `workspace`, empty for the root), read through
/// the workspace guard: `AGENTS.md`, or `CLAUDE.md` where no `AGENTS.md` could be read; and
/// what the person should be told about files that were refused.
pub(super) fn level_instructions(
    workspace: &Path,
    dir: &Path,
    confinement: &Confinement,
) -> (Option<Instructions>, Vec<String>) {
    let mut notices = Vec::new();
    for file in INSTRUCTION_FILES {
        let relative = dir.join(file);
        match read_text(workspace, &relative, confinement, READ_LIMIT) {
            Ok(Some(found)) => {
                let text = crate::text::head_tail(found.text.trim(), MAX_INSTRUCTIONS_BYTES);
                let name = relative.display().to_string();
                return (Some(Instructions { name, text }), notices);
            }
            Ok(None) => {}
            Err(skipped) => notices.push(skipped.to_string()),
        }
    }
    (None, notices)
}

/// The directories below the root whose instructions this session has had (or was refused).
#[derive(Debug, Default)]
pub(super) struct NestedContext {
    handled: BTreeSet<PathBuf>,
}

impl NestedContext {
    /// The state stored with a session, as [`NestedContext::stored`] wrote it.
    pub(super) fn from_stored(value: Option<&str>) -> Self {
        let dirs: Vec<PathBuf> = value
            .and_then(|v| serde_json::from_str(v).ok())
            .unwrap_or_default();
        Self {
            handled: dirs.into_iter().collect(),
        }
    }

    pub(super) fn stored(&self) -> String {
        serde_json::to_string(&self.handled).unwrap_or_else(|_| "[]".into())
    }

    /// The directories from the top down to each of `touched` not yet handled.
    fn pending(&self, touched: &[PathBuf]) -> Vec<PathBuf> {
        let mut dirs = BTreeSet::new();
        for dir in touched {
            let mut level = PathBuf::new();
            for part in dir.components().take(MAX_DEPTH) {
                level.push(part);
                if !self.handled.contains(&level) {
                    dirs.insert(level.clone());
                }
            }
        }
        dirs.into_iter().collect()
    }
}

/// The directory (relative to `workspace`, inside it) a successful call of `tool` worked in.
pub(super) fn touched_dir(workspace: &Path, tool: &str, input: &Value) -> Option<PathBuf> {
    let path = input.get("path").and_then(Value::as_str);
    let inside_dir = |p: &str| {
        let relative = inside(workspace, Path::new(p))?;
        match workspace.join(&relative).is_dir() {
            true => Some(relative),
            false => relative.parent().map(Path::to_path_buf),
        }
    };
    match tool {
        ReadFile::NAME | WriteFile::NAME | EditFile::NAME => inside(workspace, Path::new(path?))?
            .parent()
            .map(Path::to_path_buf),
        ListDir::NAME | Glob::NAME | Grep::NAME => inside_dir(path.unwrap_or(".")),
        Shell::NAME => inside(workspace, &shell_dir(input.get("command")?.as_str()?)?),
        _ => None,
    }
}

/// The directory a command starting with `cd DIR` moves to.
fn shell_dir(command: &str) -> Option<PathBuf> {
    let rest = command.trim_start().strip_prefix("cd ")?;
    let end = rest
        .find(|c: char| c.is_whitespace() || matches!(c, ';' | '&' | '|'))
        .unwrap_or(rest.len());
    let dir = rest[..end].trim_matches(|c| c == '"' || c == '\'');
    (!dir.is_empty()).then(|| PathBuf::from(dir))
}

/// `path` (absolute or relative to `workspace`) as a path relative to it, `..` resolved;
/// `None` when it lies outside.
fn inside(workspace: &Path, path: &Path) -> Option<PathBuf> {
    let relative = match path.is_absolute() {
        true => path.strip_prefix(workspace).ok()?,
        false => path,
    };
    let mut out = PathBuf::new();
    for part in relative.components() {
        match part {
            Component::Normal(name) => out.push(name),
            Component::CurDir => {}
            Component::ParentDir => {
                if !out.pop() {
                    return None;
                }
            }
            Component::RootDir | Component::Prefix(_) => return None,
        }
    }
    Some(out)
}

/// The message text that carries nested instructions to the model.
fn render(found: &[Instructions]) -> String {
    let mut note = String::new();
    for file in found {
        let dir = Path::new(&file.name)
            .parent()
            .map(|d| d.display().to_string())
            .unwrap_or_default();
        note.push_str(&format!(
            "[mnemo] Instructions from {name} (they apply to files under {dir}/):\n\n{text}\n\n",
            name = file.name,
            text = file.text,
        ));
    }
    note.trim_end().to_string()
}

impl Session {
    /// The instructions of directories `touched` reached for the first time this session, as
    /// text for the model; refused files are told to the person once.
    pub(super) async fn nested_instructions(
        &mut self,
        touched: &[PathBuf],
    ) -> Result<Option<String>, StoreError> {
        let pending = self.nested.pending(touched);
        if pending.is_empty() {
            return Ok(None);
        }
        let workspace = self.settings.workspace.clone();
        let confinement = self.settings.approvals.confinement().clone();
        let read = move || {
            pending
                .into_iter()
                .map(|dir| {
                    let (found, notices) = level_instructions(&workspace, &dir, &confinement);
                    (dir, found, notices)
                })
                .collect::<Vec<_>>()
        };
        let levels = tokio::task::spawn_blocking(read).await.unwrap_or_default();
        let mut found = Vec::new();
        let mut changed = false;
        for (dir, file, notices) in levels {
            if file.is_none() && notices.is_empty() {
                continue;
            }
            changed = true;
            self.nested.handled.insert(dir);
            for message in notices {
                self.emit(Event::Notice { message }).await;
            }
            if let Some(file) = file {
                let message = format!("instructions from {} added to the conversation", file.name);
                self.emit(Event::Notice { message }).await;
                found.push(file);
            }
        }
        if changed {
            let (key, value) = (
                crate::memory::sessions::nested_key(&self.id),
                self.nested.stored(),
            );
            self.services
                .store
                .call(move |db| db.kv_set(&key, &value))
                .await?;
        }
        Ok((!found.is_empty()).then(|| render(&found)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_directory_each_tool_works_in_is_found_inside_the_workspace() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let ws = dir.path();
        std::fs::create_dir_all(ws.join("a/b")).unwrap_or_else(|e| panic!("{e}"));
        let at = |tool: &str, input: Value| touched_dir(ws, tool, &input);
        assert_eq!(
            at("read_file", json!({"path": "a/b/x.rs"})),
            Some("a/b".into())
        );
        let absolute = ws.join("a/y.rs").display().to_string();
        assert_eq!(at("edit_file", json!({"path": absolute})), Some("a".into()));
        assert_eq!(
            at("grep", json!({"pattern": "p", "path": "a/b"})),
            Some("a/b".into())
        );
        assert_eq!(at("glob", json!({"pattern": "*"})), Some("".into()));
        assert_eq!(
            at("shell", json!({"command": "cd a/b && make"})),
            Some("a/b".into())
        );
        assert_eq!(at("shell", json!({"command": "make -C a"})), None);
        assert_eq!(at("read_file", json!({"path": "../elsewhere/x"})), None);
        assert_eq!(at("read_file", json!({"path": "/etc/passwd"})), None);
        assert_eq!(at("remember", json!({"text": "a/b"})), None);
    }

    #[test]
    fn each_level_is_pending_until_handled() {
        let mut nested = NestedContext::from_stored(Some("[\"a\"]"));
        let pending = nested.pending(&["a/b/c".into(), "a/b".into(), "".into()]);
        assert_eq!(pending, vec![PathBuf::from("a/b"), PathBuf::from("a/b/c")]);
        nested.handled.insert("a/b".into());
        let again = NestedContext::from_stored(Some(&nested.stored()));
        assert_eq!(
            again.pending(&["a/b/c".into()]),
            vec![PathBuf::from("a/b/c")]
        );
    }
}
