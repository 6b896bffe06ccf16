//! The one reader for files mnemo reads from a workspace on its own: the project's instruction
//! files, its skills, its `.mnemo/config.toml` and heartbeats. A repository wrote them, so they
//! are opened as the file tools open what the model asks for: the real path must lie inside the
//! workspace (a link to another file of the workspace is fine, one out of it is not), paths the
//! confinement hides stay hidden, only a regular file is opened and never blocks on a FIFO or
//! device, and no more than the limit is read. Under `.mnemo/` no link is followed at all:
//! commands cannot write there, but a link would send the read to a place they can.

use std::io::{self, Read};
use std::path::{Component, Path, PathBuf};

use super::{Confinement, handles, path_guard};

/// A file read within its limit.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WorkspaceText {
    /// The text (invalid UTF-8 replaced), at most the limit long.
    pub text: String,
    /// The file was longer than the limit; only its first part is in `text`.
    pub truncated: bool,
}

/// Why a workspace file was not read. The message names the file as given.
#[derive(Debug, thiserror::Error)]
pub enum SkipReason {
    #[error("{name} is a symlink out of the workspace (to {}); not read", .target.display())]
    Outside { name: String, target: PathBuf },
    #[error(
        "{name} lies under .mnemo/ behind a symlink (to {}); mnemo's own files are read only \
         where they are",
        .target.display()
    )]
    Linked { name: String, target: PathBuf },
    #[error("{name} is hidden from the agent (under {}, see `[sandbox] deny_read`); not read", .hidden.display())]
    Hidden { name: String, hidden: PathBuf },
    #[error("{name} {problem}; not read")]
    Unreadable { name: String, problem: String },
}

/// Like [`read_bytes`], as text (invalid UTF-8 replaced).
pub fn read_text(
    workspace: &Path,
    relative: &Path,
    confinement: &Confinement,
    limit: usize,
) -> Result<Option<WorkspaceText>, SkipReason> {
    let found = read_bytes(workspace, relative, confinement, limit)?;
    Ok(found.map(|(bytes, truncated)| WorkspaceText {
        text: String::from_utf8_lossy(&bytes).into_owned(),
        truncated,
    }))
}

/// Reads the file at `relative` (below `workspace`) through the guard: at most `limit` bytes
/// of it, and whether there was more. `Ok(None)` when there is no such file.
pub fn read_bytes(
    workspace: &Path,
    relative: &Path,
    confinement: &Confinement,
    limit: usize,
) -> Result<Option<(Vec<u8>, bool)>, SkipReason> {
    let name = relative.display().to_string();
    let root = std::fs::canonicalize(workspace).unwrap_or_else(|_| workspace.to_path_buf());
    let lexical = root.join(relative);
    match std::fs::symlink_metadata(&lexical) {
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(unreadable(&name, &e)),
        Ok(_) => {}
    }
    let real = path_guard::real_inside(&root, &lexical).map_err(|target| SkipReason::Outside {
        name: name.clone(),
        target,
    })?;
    if under_own_dir(relative) && real != lexical {
        return Err(SkipReason::Linked { name, target: real });
    }
    if let Some(hidden) = confinement.hiding(&real) {
        return Err(SkipReason::Hidden {
            name,
            hidden: hidden.to_path_buf(),
        });
    }
    let inside = real.strip_prefix(&root).unwrap_or(&real);
    let file = match handles::open_read(&root, inside) {
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
        other => other.map_err(|e| unreadable(&name, &e))?,
    };
    let mut bytes = Vec::new();
    file.take(limit as u64 + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| unreadable(&name, &e))?;
    let truncated = bytes.len() > limit;
    bytes.truncate(limit);
    Ok(Some((bytes, truncated)))
}

/// Whether `relative` goes through the workspace's `.mnemo` folder.
fn under_own_dir(relative: &Path) -> bool {
    relative
        .components()
        .find(|c| !matches!(c, Component::CurDir))
        .is_some_and(|c| c.as_os_str() == ".mnemo")
}

fn unreadable(name: &str, error: &io::Error) -> SkipReason {
    SkipReason::Unreadable {
        name: name.to_string(),
        problem: error.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::symlink;

    type TestResult = Result<(), Box<dyn std::error::Error>>;

    fn read(ws: &Path, name: &str) -> Result<Option<WorkspaceText>, SkipReason> {
        read_text(ws, Path::new(name), &Confinement::default(), 16)
    }

    fn skipped(ws: &Path, name: &str) -> String {
        match read(ws, name) {
            Err(reason) => reason.to_string(),
            Ok(found) => panic!("{name} was read: {found:?}"),
        }
    }

    #[test]
    fn a_file_or_a_link_inside_is_read_within_the_limit() -> TestResult {
        let dir = tempfile::tempdir()?;
        let ws = dir.path();
        std::fs::write(ws.join("AGENTS.md"), "short")?;
        std::fs::create_dir(ws.join("docs"))?;
        std::fs::write(ws.join("docs/long.md"), "0123456789abcdefXYZ")?;
        symlink("docs/long.md", ws.join("CLAUDE.md"))?;
        let short = read(ws, "AGENTS.md")?;
        assert_eq!(
            short.map(|t| (t.text, t.truncated)),
            Some(("short".into(), false))
        );
        let long = read(ws, "CLAUDE.md")?;
        assert_eq!(
            long.map(|t| (t.text, t.truncated)),
            Some(("0123456789abcdef".into(), true))
        );
        assert_eq!(read(ws, "missing.md")?, None);
        Ok(())
    }

    #[test]
    fn links_out_special_files_and_links_under_mnemo_are_not_read() -> TestResult {
        let dir = tempfile::tempdir()?;
        let ws = dir.path().join("ws");
        std::fs::create_dir_all(ws.join("real"))?;
        std::fs::write(dir.path().join("secret"), "s")?;
        std::fs::write(ws.join("real/config.toml"), "x = 1")?;
        symlink("/proc/self/environ", ws.join("AGENTS.md"))?;
        symlink(dir.path().join("secret"), ws.join("CLAUDE.md"))?;
        symlink("/dev/zero", ws.join("ZERO.md"))?;
        symlink("real", ws.join(".mnemo"))?;
        let fifo = std::ffi::CString::new(ws.join("FIFO.md").to_string_lossy().as_bytes())?;
        // SAFETY: mkfifo reads a valid NUL-terminated path.
        assert_eq!(unsafe { libc::mkfifo(fifo.as_ptr(), 0o600) }, 0);
        for name in ["AGENTS.md", "CLAUDE.md", "ZERO.md"] {
            let message = skipped(&ws, name);
            assert!(
                message.contains(&format!("{name} is a symlink out of the workspace")),
                "{message}"
            );
        }
        assert!(skipped(&ws, "FIFO.md").contains("not a regular file"));
        assert!(skipped(&ws, ".mnemo/config.toml").contains("behind a symlink"));
        Ok(())
    }

    #[test]
    fn hidden_paths_inside_the_workspace_stay_hidden() -> TestResult {
        let dir = tempfile::tempdir()?;
        let ws = dir.path().canonicalize()?;
        std::fs::create_dir(ws.join("keys"))?;
        std::fs::write(ws.join("keys/AGENTS.md"), "secret")?;
        let section = super::super::SandboxSection {
            deny_read: vec![ws.join("keys").display().to_string()],
            ..Default::default()
        };
        let confinement = Confinement::from_section(&section);
        let message = read_text(&ws, Path::new("keys/AGENTS.md"), &confinement, 64)
            .err()
            .map(|e| e.to_string());
        assert!(message.is_some_and(|m| m.contains("hidden from the agent")));
        Ok(())
    }
}
