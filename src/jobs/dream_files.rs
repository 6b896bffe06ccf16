//! The notes files on disk (`MEMORY.md`, `USER.md` in the notes directory): written
//! atomically from the store, and a hand edit taken into the store as a version of its own the
//! next time anyone looks (a dream, a session's prompt, `mnemo memory notes`).

use std::path::{Path, PathBuf};

use super::dream::DreamError;
use crate::memory::Db;
use crate::memory::dream_notes::{DreamNotes, NoteFile, NotesOrigin};

/// Where the notes files live: `<data dir>/memory/`, or beside the database without one.
pub fn notes_dir(data: Option<&Path>, db: Option<&Path>) -> Option<PathBuf> {
    match (data, db) {
        (Some(data), _) => Some(data.join("memory")),
        (None, Some(db)) => db.parent().map(|dir| dir.join("memory")),
        (None, None) => None,
    }
}

/// What [`take_in_hand_edits`] found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HandEdit {
    /// The files hold the stored version.
    Unchanged,
    /// They were edited by hand: the edit is now the current version.
    Taken,
    /// They were missing, or older than the stored version: written again from the store.
    Rewritten,
}

/// Compares the files with the current stored version. Files changed by hand since it was
/// written become a version of their own. Missing files, and files that differ but are not
/// newer than the version (cut short by a power failure: they are written without fsync), are
/// written again from the store.
pub fn take_in_hand_edits(db: &mut Db, dir: &Path) -> Result<HandEdit, DreamError> {
    let current = db.current_notes()?;
    let written_at = current.as_ref().map(|v| v.created_at);
    let current = current.map(|v| v.notes).unwrap_or_default();
    let Some(on_disk) = read_note_files(dir) else {
        if current.is_empty() {
            return Ok(HandEdit::Unchanged);
        }
        write_note_files(dir, &current)?;
        return Ok(HandEdit::Rewritten);
    };
    let same = |a: &str, b: &str| a.trim_end() == b.trim_end();
    if same(&on_disk.memory, &current.memory) && same(&on_disk.user, &current.user) {
        return Ok(HandEdit::Unchanged);
    }
    if written_at.is_some_and(|at| modified_ms(dir) <= at) {
        write_note_files(dir, &current)?;
        return Ok(HandEdit::Rewritten);
    }
    db.save_notes(&on_disk, NotesOrigin::Hand, None)?;
    Ok(HandEdit::Taken)
}

/// When either notes file was last changed, in milliseconds since the epoch (0 if unknown).
pub fn modified_ms(dir: &Path) -> i64 {
    NoteFile::ALL
        .iter()
        .filter_map(|file| {
            std::fs::metadata(dir.join(file.file_name()))
                .ok()?
                .modified()
                .ok()
        })
        .filter_map(|time| time.duration_since(std::time::UNIX_EPOCH).ok())
        .map(|since| i64::try_from(since.as_millis()).unwrap_or(i64::MAX))
        .max()
        .unwrap_or(0)
}

/// Both files as they are on disk; `None` when neither exists.
pub fn read_note_files(dir: &Path) -> Option<DreamNotes> {
    let read = |file: NoteFile| std::fs::read_to_string(dir.join(file.file_name())).ok();
    let (memory, user) = (read(NoteFile::Memory), read(NoteFile::User));
    if memory.is_none() && user.is_none() {
        return None;
    }
    Some(DreamNotes {
        memory: memory.unwrap_or_default(),
        user: user.unwrap_or_default(),
    })
}

/// Writes both files, each through a temporary file renamed over it: a reader, or mnemo
/// stopped halfway, sees the old file or the new one, never half of one. (No fsync: the
/// store holds every version, so a file lost to a power cut is written again by the next
/// dream.)
pub fn write_note_files(dir: &Path, notes: &DreamNotes) -> Result<(), DreamError> {
    let failed = |path: &Path| {
        let path = path.to_path_buf();
        move |source| DreamError::Write { path, source }
    };
    std::fs::create_dir_all(dir).map_err(failed(dir))?;
    for file in NoteFile::ALL {
        let path = dir.join(file.file_name());
        let temp = dir.join(format!(".{}.tmp", file.file_name()));
        let mut text = notes.get(file).trim_end().to_string();
        text.push('\n');
        std::fs::write(&temp, text).map_err(failed(&temp))?;
        std::fs::rename(&temp, &path).map_err(failed(&path))?;
    }
    Ok(())
}
