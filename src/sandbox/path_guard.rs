//! The one place where a path from the model becomes a real path on disk. File tools must
//! never touch anything outside the workspace, so every requested path is resolved with
//! `realpath` (symlinks included) before it is checked, even when it does not exist yet.

use std::fs;
use std::io;
use std::path::{Component, Path, PathBuf};

use crate::tools::ToolError;

/// How many dangling symlinks may be followed while resolving one path.
const MAX_LINK_HOPS: usize = 40;

/// Resolves `requested` (relative to `workspace`, or absolute) to a real, absolute path that
/// lies inside `workspace`. The path need not exist: its longest existing ancestor is
/// canonicalized and the rest appended, so a new file in a new directory is fine while `..`
/// or a symlink leading out of the workspace is refused.
pub fn resolve(workspace: &Path, requested: &str) -> Result<PathBuf, ToolError> {
    let root = fs::canonicalize(workspace).unwrap_or_else(|_| workspace.to_path_buf());
    let error = |message: String| ToolError::Path {
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
    use crate::tools::builtin::test_support::{TestResult, error_text, workspace};
    use std::os::unix::fs::symlink;

    fn assert_outside(result: Result<PathBuf, ToolError>) {
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
    fn display_is_relative_to_the_workspace() {
        let ws = Path::new("/w");
        assert_eq!(display(ws, Path::new("/w/src/a.rs")), "src/a.rs");
        assert_eq!(display(ws, Path::new("/w")), ".");
    }
}
