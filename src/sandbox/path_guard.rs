//! The one place where a path from the model becomes a real path on disk. File tools must
//! never touch anything outside the workspace, so every requested path is resolved with
//! `realpath` (symlinks included) before it is checked, even when it does not exist yet.
//! Paths the confinement hides (secret locations, mnemo's own data) are refused even inside the
//! workspace. Writes are checked against the sandbox policy too: none under read-only, none into
//! `.mnemo/` (mnemo's own configuration, which only the person edits), and none into a `.git/`
//! directory (hooks and config run code) unless the user chose full access. The checked path is
//! then opened through [`super::handles`], which never follows a symlink, so the check cannot be
//! raced.

use std::fs;
use std::io;
use std::path::{Component, Path, PathBuf};

use super::{Confinement, SandboxPolicy};

/// A path refused by the guard, and why, worded for the model.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{path}: {message}")]
pub struct PathError {
    /// The path as the model asked for it.
    pub path: String,
    pub message: String,
}

/// How many dangling symlinks may be followed while resolving one path.
const MAX_LINK_HOPS: usize = 40;

/// Resolves `requested` (relative to `workspace`, or absolute) to a real, absolute path that
/// lies inside `workspace`. The path need not exist: its longest existing ancestor is
/// canonicalized and the rest appended, so a new file in a new directory is fine while `..`
/// or a symlink leading out of the workspace is refused.
pub fn resolve(
    workspace: &Path,
    requested: &str,
    confinement: &Confinement,
) -> Result<PathBuf, PathError> {
    let path = resolve_inside(workspace, requested)?;
    match confinement.hiding(&path) {
        Some(hidden) => Err(PathError {
            path: requested.to_string(),
            message: format!(
                "{} is hidden from the agent (a secret location or mnemo's own data, see \
                 `[sandbox] deny_read`); it cannot be read or written",
                hidden.display()
            ),
        }),
        None => Ok(path),
    }
}

/// The real path of `requested` when it lies inside the workspace.
fn resolve_inside(workspace: &Path, requested: &str) -> Result<PathBuf, PathError> {
    let root = canonical_root(workspace);
    let error = |message: String| PathError {
        path: requested.to_string(),
        message,
    };
    let joined = if requested.is_empty() {
        root.clone()
    } else {
        root.join(requested)
    };
    let real = real_path(&joined, MAX_LINK_HOPS).map_err(|e| error(e.to_string()))?;
    if real.starts_with(&root) {
        return Ok(real);
    }
    let message = if real == normalize_lexically(&joined) {
        format!(
            "the path is outside the workspace {}; file tools only work inside it",
            root.display()
        )
    } else {
        format!(
            "the path resolves to {}, which is outside the workspace {}; file tools only work \
             inside it",
            real.display(),
            root.display()
        )
    };
    Err(error(message))
}

/// The real path of `lexical` (absolute, below the canonical `root`) when it stays inside
/// `root`; otherwise where it leads.
pub(super) fn real_inside(root: &Path, lexical: &Path) -> Result<PathBuf, PathBuf> {
    match real_path(lexical, MAX_LINK_HOPS) {
        Ok(real) if real.starts_with(root) => Ok(real),
        Ok(real) => Err(real),
        Err(_) => Err(lexical.to_path_buf()),
    }
}

/// Like [`resolve`], for a path about to be written: refused under the read-only policy, inside
/// `.mnemo/` always, and inside any `.git/` directory of the workspace unless the policy is full
/// access.
pub fn resolve_for_write(
    workspace: &Path,
    requested: &str,
    policy: SandboxPolicy,
    confinement: &Confinement,
) -> Result<PathBuf, PathError> {
    let path = resolve(workspace, requested, confinement)?;
    let refuse = |message: &str| PathError {
        path: requested.to_string(),
        message: message.to_string(),
    };
    if in_entry(&canonical_root(workspace), &path, ".mnemo") {
        return Err(refuse(
            ".mnemo/ holds mnemo's own configuration, which only the user edits; the agent \
             cannot write it in any approval mode. Tell the user what to change instead",
        ));
    }
    if in_entry(&canonical_root(workspace), &path, ".claude") {
        return Err(refuse(
            ".claude/ holds settings whose hooks run commands, which only the user edits; the \
             agent cannot write it in any approval mode. Tell the user what to change instead",
        ));
    }
    match policy {
        SandboxPolicy::ReadOnly => Err(refuse(
            "the session is read-only (sandbox policy read-only), so files cannot be written; \
             tell the user what you would change, or ask them to allow workspace writes",
        )),
        SandboxPolicy::WorkspaceWrite if in_entry(&canonical_root(workspace), &path, ".git") => {
            Err(refuse(
                "writing inside .git/ needs full access (hooks and config there run code); \
                 use git commands through the shell instead, or ask the user for full access",
            ))
        }
        SandboxPolicy::WorkspaceWrite | SandboxPolicy::FullAccess => Ok(path),
    }
}

/// Whether `path` (inside `root`) lies in, or is, an entry called `name` at any depth.
fn in_entry(root: &Path, path: &Path, name: &str) -> bool {
    path.strip_prefix(root).is_ok_and(|relative| {
        relative
            .components()
            .any(|c| c.as_os_str().eq_ignore_ascii_case(name))
    })
}

/// `path` (a real path inside `workspace`) relative to the workspace root.
pub fn relative<'a>(workspace: &Path, path: &'a Path) -> &'a Path {
    let root = canonical_root(workspace);
    match path.strip_prefix(&root) {
        Ok(relative) => relative,
        Err(_) => path.strip_prefix(workspace).unwrap_or(Path::new("")),
    }
}

fn canonical_root(workspace: &Path) -> PathBuf {
    fs::canonicalize(workspace).unwrap_or_else(|_| workspace.to_path_buf())
}

/// The path as the model should see it: relative to the workspace, `.` for the root.
pub fn display(workspace: &Path, path: &Path) -> String {
    match path.strip_prefix(workspace) {
        Ok(rel) if rel.as_os_str().is_empty() => ".".to_string(),
        Ok(rel) => rel.display().to_string(),
        Err(_) => path.display().to_string(),
    }
}

/// Canonicalizes the longest existing ancestor of the absolute `path` and re-appends the rest.
fn real_path(path: &Path, hops_left: usize) -> io::Result<PathBuf> {
    let components: Vec<Component> = path.components().collect();
    let (base, rest) = (1..=components.len())
        .rev()
        .find_map(|split| {
            let prefix: PathBuf = components[..split].iter().collect();
            fs::canonicalize(prefix)
                .ok()
                .map(|base| (base, &components[split..]))
        })
        .ok_or_else(|| invalid("no part of the path exists"))?;
    if rest.contains(&Component::ParentDir) {
        return Err(invalid(
            "`..` is not allowed after a directory that does not exist; give the path without it",
        ));
    }
    let mut real = base;
    for (index, name) in rest.iter().enumerate() {
        real.push(name);
        // A dangling symlink would make a later write land wherever it points.
        if let Ok(target) = fs::read_link(&real) {
            if hops_left == 0 {
                return Err(invalid("too many levels of symbolic links"));
            }
            real.pop();
            let mut followed = real.join(target);
            followed.extend(&rest[index + 1..]);
            return real_path(&followed, hops_left - 1);
        }
    }
    Ok(real)
}

/// Removes `.` and folds `..` without touching the disk (only used to word the error).
fn normalize_lexically(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for component in path.components() {
        match component {
            Component::CurDir => {}
            Component::ParentDir => {
                out.pop();
            }
            other => out.push(other),
        }
    }
    out
}

fn invalid(message: &str) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidInput, message)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::symlink;

    type TestResult = Result<(), Box<dyn std::error::Error>>;

    /// A temporary, canonical workspace; keep the `TempDir` alive for the test.
    fn workspace() -> std::io::Result<(tempfile::TempDir, PathBuf)> {
        let dir = tempfile::tempdir()?;
        let ws = dir.path().canonicalize()?.join("ws");
        std::fs::create_dir(&ws)?;
        Ok((dir, ws))
    }

    fn error_text(result: Result<PathBuf, PathError>) -> String {
        match result {
            Ok(path) => panic!("expected an error, got {path:?}"),
            Err(e) => e.to_string(),
        }
    }

    fn resolve(ws: &Path, requested: &str) -> Result<PathBuf, PathError> {
        super::resolve(ws, requested, &Confinement::default())
    }

    fn resolve_for_write(
        ws: &Path,
        requested: &str,
        policy: SandboxPolicy,
    ) -> Result<PathBuf, PathError> {
        super::resolve_for_write(ws, requested, policy, &Confinement::default())
    }

    fn assert_outside(result: Result<PathBuf, PathError>) {
        let message = error_text(result);
        assert!(message.contains("outside the workspace"), "{message}");
        assert!(
            message.contains("file tools only work inside it"),
            "{message}"
        );
    }

    #[test]
    fn paths_inside_the_workspace_resolve_to_real_paths() -> TestResult {
        let (_dir, ws) = workspace()?;
        fs::write(ws.join("a.txt"), "x")?;
        assert_eq!(resolve(&ws, "a.txt")?, ws.join("a.txt"));
        assert_eq!(resolve(&ws, "./a.txt")?, ws.join("a.txt"));
        assert_eq!(resolve(&ws, ".")?, ws);
        assert_eq!(resolve(&ws, "")?, ws);
        let absolute = ws.join("a.txt");
        assert_eq!(resolve(&ws, &absolute.to_string_lossy())?, absolute);
        Ok(())
    }

    #[test]
    fn parent_directory_escape_is_refused() -> TestResult {
        let (_dir, ws) = workspace()?;
        assert_outside(resolve(&ws, "../x"));
        fs::create_dir(ws.join("sub"))?;
        assert_outside(resolve(&ws, "sub/../../x"));
        Ok(())
    }

    #[test]
    fn absolute_path_outside_is_refused() -> TestResult {
        let (_dir, ws) = workspace()?;
        assert_outside(resolve(&ws, "/etc/passwd"));
        Ok(())
    }

    #[test]
    fn symlinks_leading_outside_are_refused() -> TestResult {
        let (dir, ws) = workspace()?;
        let outside = dir.path().canonicalize()?.join("outside");
        fs::create_dir(&outside)?;
        fs::write(outside.join("secret"), "s")?;
        symlink(outside.join("secret"), ws.join("file_link"))?;
        symlink(&outside, ws.join("dir_link"))?;
        symlink(outside.join("not_yet"), ws.join("dangling"))?;
        assert_outside(resolve(&ws, "file_link"));
        assert_outside(resolve(&ws, "dir_link/secret"));
        assert_outside(resolve(&ws, "dir_link/new_file"));
        assert_outside(resolve(&ws, "dangling"));
        Ok(())
    }

    #[test]
    fn symlinks_inside_the_workspace_are_followed() -> TestResult {
        let (_dir, ws) = workspace()?;
        fs::create_dir(ws.join("real"))?;
        symlink(ws.join("real"), ws.join("alias"))?;
        assert_eq!(resolve(&ws, "alias/f")?, ws.join("real/f"));
        Ok(())
    }

    #[test]
    fn new_file_in_new_subdirectory_is_allowed() -> TestResult {
        let (_dir, ws) = workspace()?;
        assert_eq!(resolve(&ws, "new/dir/f.rs")?, ws.join("new/dir/f.rs"));
        Ok(())
    }

    #[test]
    fn parent_components_in_the_missing_part_are_refused() -> TestResult {
        let (_dir, ws) = workspace()?;
        let message = error_text(resolve(&ws, "missing/../f"));
        assert!(message.contains("`..` is not allowed"), "{message}");
        Ok(())
    }

    #[test]
    fn writes_into_git_need_full_access_but_reads_do_not() -> TestResult {
        let (_dir, ws) = workspace()?;
        fs::create_dir_all(ws.join(".git/hooks"))?;
        fs::create_dir_all(ws.join("vendor/lib"))?;
        for path in [
            ".git/hooks/pre-commit",
            ".git",
            "vendor/lib/.git/config",
            ".GIT/x",
        ] {
            let message = error_text(resolve_for_write(&ws, path, SandboxPolicy::WorkspaceWrite));
            assert!(message.contains("needs full access"), "{path}: {message}");
            resolve_for_write(&ws, path, SandboxPolicy::FullAccess)?;
        }
        assert_eq!(resolve(&ws, ".git/config")?, ws.join(".git/config"));
        let gitignore = resolve_for_write(&ws, ".gitignore", SandboxPolicy::WorkspaceWrite)?;
        assert_eq!(gitignore, ws.join(".gitignore"));
        Ok(())
    }

    #[test]
    fn read_only_refuses_every_write_and_escapes_stay_refused_under_full_access() -> TestResult {
        let (_dir, ws) = workspace()?;
        let message = error_text(resolve_for_write(&ws, "a.txt", SandboxPolicy::ReadOnly));
        assert!(message.contains("read-only"), "{message}");
        assert_outside(resolve_for_write(&ws, "../x", SandboxPolicy::FullAccess));
        Ok(())
    }

    #[test]
    fn mnemo_config_is_never_writable_and_hidden_paths_never_readable() -> TestResult {
        let (_dir, ws) = workspace()?;
        fs::create_dir_all(ws.join("keys"))?;
        for mode in [SandboxPolicy::WorkspaceWrite, SandboxPolicy::FullAccess] {
            for path in [".mnemo/config.toml", ".mnemo", "sub/.MNEMO/x"] {
                let message = error_text(resolve_for_write(&ws, path, mode));
                assert!(message.contains("mnemo's own configuration"), "{message}");
            }
            let message = error_text(resolve_for_write(&ws, ".claude/settings.json", mode));
            assert!(message.contains("hooks run commands"), "{message}");
        }
        assert_eq!(
            resolve(&ws, ".mnemo/config.toml")?,
            ws.join(".mnemo/config.toml")
        );
        let section = crate::sandbox::SandboxSection {
            deny_read: vec![ws.join("keys").display().to_string()],
            ..Default::default()
        };
        let confinement = Confinement::from_section(&section);
        for path in ["keys", "keys/id_rsa"] {
            let message = error_text(super::resolve(&ws, path, &confinement));
            assert!(message.contains("hidden from the agent"), "{message}");
        }
        assert!(super::resolve(&ws, "keyset", &confinement).is_ok());
        Ok(())
    }

    #[test]
    fn display_is_relative_to_the_workspace() {
        let ws = Path::new("/w");
        assert_eq!(display(ws, Path::new("/w/src/a.rs")), "src/a.rs");
        assert_eq!(display(ws, Path::new("/w")), ".");
    }
}
