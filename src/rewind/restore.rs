//! Putting files back: for every file the agent changed in turn `turn` or later, the content
//! it had before the first of those changes (or no file, when it did not exist then).

use std::collections::HashSet;
use std::path::Path;

use super::journal::{self, Before, Journal, blob_path};
use super::{Keeper, RewindError, TurnEntry};
use crate::protocol::NotRestored;
use crate::sandbox::handles;

/// What a rewind of files did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FilesRestored {
    pub restored: Vec<String>,
    pub removed: Vec<String>,
    pub not_restored: Vec<NotRestored>,
}

impl Keeper {
    /// The entry of turn `turn`, or why there is none.
    pub fn turn(&self, turn: u64) -> Result<TurnEntry, RewindError> {
        self.with_journal(|journal, _| {
            journal
                .turns
                .iter()
                .find(|t| t.turn == turn)
                .cloned()
                .ok_or(RewindError::UnknownTurn(turn))
        })
    }

    /// The shell commands turn `turn` and the later ones ran.
    pub fn commands_since(&self, turn: u64) -> Result<Vec<String>, RewindError> {
        self.with_journal(|journal, _| {
            Ok(journal
                .turns
                .iter()
                .filter(|t| t.turn >= turn)
                .flat_map(|t| t.commands.iter().cloned())
                .collect())
        })
    }

    /// Puts back every file changed since turn `turn` began, beneath `workspace`; what was
    /// put back is no longer kept (a second rewind of the same turns finds nothing to do).
    pub fn restore_files(&self, workspace: &Path, turn: u64) -> Result<FilesRestored, RewindError> {
        self.with_journal(|journal, dir| {
            if !journal.turns.iter().any(|t| t.turn == turn) {
                return Err(RewindError::UnknownTurn(turn));
            }
            let mut done = FilesRestored::default();
            let mut seen = HashSet::new();
            let earliest = journal
                .turns
                .iter()
                .filter(|t| t.turn >= turn)
                .flat_map(|t| t.files.iter())
                .filter(|f| seen.insert(f.path.clone()));
            for file in earliest {
                restore_one(workspace, dir, &file.path, &file.before, &mut done);
            }
            for entry in journal.turns.iter_mut().filter(|t| t.turn >= turn) {
                for file in entry.files.drain(..) {
                    if let Before::Content { blob, .. } = file.before {
                        let _ = std::fs::remove_file(blob_path(dir, &blob));
                    }
                }
            }
            journal::save(dir, journal)?;
            Ok(done)
        })
    }

    /// Forgets turn `turn` and the later ones (their conversation was taken back), with the
    /// contents kept for them.
    pub fn forget_since(&self, turn: u64) -> Result<(), RewindError> {
        self.with_journal(|journal: &mut Journal, dir| {
            for entry in journal.turns.iter().filter(|t| t.turn >= turn) {
                for file in &entry.files {
                    if let Before::Content { blob, .. } = &file.before {
                        let _ = std::fs::remove_file(blob_path(dir, blob));
                    }
                }
            }
            journal.turns.retain(|t| t.turn < turn);
            journal::save(dir, journal)
        })
    }
}

fn restore_one(
    workspace: &Path,
    dir: &Path,
    path: &str,
    before: &Before,
    done: &mut FilesRestored,
) {
    let relative = Path::new(path);
    let mut failed = |why: String| {
        done.not_restored.push(NotRestored {
            path: path.to_string(),
            why,
        })
    };
    match before {
        Before::Content { blob, .. } => {
            let written = std::fs::read(blob_path(dir, blob))
                .map_err(|e| format!("its kept copy could not be read: {e}"))
                .and_then(|content| {
                    handles::replace(workspace, relative, &content).map_err(|e| e.to_string())
                });
            match written {
                Ok(_) => done.restored.push(path.to_string()),
                Err(why) => failed(why),
            }
        }
        Before::Absent => match handles::remove(workspace, relative) {
            Ok(()) => done.removed.push(path.to_string()),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => failed(format!(
                "it did not exist before, but removing it failed: {e}"
            )),
        },
        Before::TooLarge { bytes } => failed(format!(
            "it was too large to keep ({} KB) when the turn changed it",
            bytes / 1024
        )),
        Before::Unreadable { why } => failed(format!("it could not be kept: {why}")),
        Before::Pruned { bytes } => failed(format!(
            "its copy ({} KB) was pruned to keep rewind data within its size limit",
            bytes / 1024
        )),
    }
}
