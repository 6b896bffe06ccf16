//! A workspace's heartbeat files as trust binds them: read through the workspace guard (the
//! repository, or a command, wrote them) and fingerprinted, so trusting a workspace covers its
//! heartbeats as they are now. `jobs::heartbeat` parses them.

use std::path::{Path, PathBuf};

use super::trust;
use crate::sandbox::Confinement;
use crate::sandbox::handles;
use crate::sandbox::workspace_read::read_text;

/// The folder of heartbeat files, under the config dir and under a workspace's `.mnemo/`.
pub const DIR: &str = "heartbeat";

/// Why a workspace's heartbeat folder was not read.
#[derive(Debug, Clone, PartialEq)]
pub struct Unreadable {
    pub path: PathBuf,
    pub message: String,
}

/// The fingerprint of `workspace`'s heartbeat files as they are now, which trust records;
/// `None` when they cannot be read (a symlinked `.mnemo`).
pub fn fingerprint(workspace: &Path) -> Option<String> {
    let files = workspace_files(workspace).ok()?;
    Some(digest(&files.unwrap_or_default()))
}

pub fn digest(files: &[WorkspaceFile]) -> String {
    let mut all = Vec::new();
    for (path, text) in files {
        let name = path
            .file_name()
            .map(|n| n.as_encoded_bytes())
            .unwrap_or(b"");
        all.extend_from_slice(name);
        match text {
            Ok(text) => {
                all.extend_from_slice(format!("\0{}\0", text.len()).as_bytes());
                all.extend_from_slice(text.as_bytes());
            }
            Err(message) => all.extend_from_slice(format!("\0!{message}\0").as_bytes()),
        }
    }
    trust::fingerprint(&all)
}

/// One heartbeat file of a workspace: its path and text, or why it was not read.
pub type WorkspaceFile = (PathBuf, Result<String, String>);

/// Most heartbeat files read from one workspace.
const MAX_WORKSPACE_FILES: usize = 100;
/// Most bytes of one heartbeat file.
const MAX_FILE_BYTES: usize = 64 * 1024;

/// The `.md` files of `workspace`'s `.mnemo/heartbeat/`, read through the workspace guard (the
/// repository, or a command, wrote them): `None` when there is no such folder, an error when
/// `.mnemo` or the folder is a symlink (never read) or cannot be listed.
pub fn workspace_files(workspace: &Path) -> Result<Option<Vec<WorkspaceFile>>, Unreadable> {
    let relative = Path::new(".mnemo").join(DIR);
    for entry in [Path::new(".mnemo"), relative.as_path()] {
        let path = workspace.join(entry);
        match std::fs::symlink_metadata(&path) {
            Err(_) => return Ok(None),
            Ok(meta) if meta.file_type().is_symlink() => {
                return Err(Unreadable {
                    path,
                    message: "is a symbolic link; heartbeats run only from a real .mnemo \
                              folder, so none of these are read"
                        .into(),
                });
            }
            Ok(meta) if !meta.is_dir() => return Ok(None),
            Ok(_) => {}
        }
    }
    let entries = handles::list(workspace, &relative).map_err(|e| Unreadable {
        path: workspace.join(&relative),
        message: format!("cannot list the heartbeat files: {e}"),
    })?;
    let mut names: Vec<String> = entries
        .into_iter()
        .map(|e| e.name)
        .filter(|n| n.ends_with(".md"))
        .collect();
    names.sort();
    if names.len() > MAX_WORKSPACE_FILES {
        return Err(Unreadable {
            path: workspace.join(&relative),
            message: format!(
                "holds {} heartbeat files, more than the {MAX_WORKSPACE_FILES} read from one \
                 workspace; none are read",
                names.len()
            ),
        });
    }
    let confinement = Confinement::default();
    let files = names
        .into_iter()
        .map(|name| {
            let inside = relative.join(&name);
            let text = match read_text(workspace, &inside, &confinement, MAX_FILE_BYTES) {
                Ok(Some(file)) if file.truncated => {
                    Err(format!("larger than {MAX_FILE_BYTES} bytes; not read"))
                }
                Ok(Some(file)) => Ok(file.text),
                Ok(None) => Err("vanished while it was read".to_string()),
                Err(skipped) => Err(skipped.to_string()),
            };
            (workspace.join(inside), text)
        })
        .collect();
    Ok(Some(files))
}
