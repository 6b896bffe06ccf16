//! `mnemo memory notes`: the dream notes as sessions see them, their versions, taking the
//! latest version back, and the lines the dream held for review.

use std::io::Write;

use super::super::{CommandError, local_time};
use crate::host::Loaded;
use crate::jobs::dream::{take_in_hand_edits, write_note_files};
use crate::memory::StoreError;
use crate::memory::dream_held::{HeldNote, Verdict};
use crate::memory::dream_notes::{DreamNotes, NoteFile, NotesOrigin, NotesVersion};
use crate::serve::dreamer::notes_dir;

/// What `mnemo memory notes` shows or does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NotesAction {
    /// The current version of both files.
    Show,
    /// Every version, newest first.
    History,
    /// Take the current version back; the one before it becomes current.
    Undo,
    /// The lines held for review.
    Pending,
    /// Add a held line to the notes.
    Accept(u64),
    /// Drop a held line.
    Reject(u64),
}

pub fn notes(
    loaded: &Loaded,
    action: NotesAction,
    out: &mut impl Write,
) -> Result<(), CommandError> {
    let store = loaded.store()?;
    if matches!(action, NotesAction::Show | NotesAction::History)
        && let Some(dir) = notes_dir(loaded)
    {
        store.call_blocking(move |db| Ok(take_in_hand_edits(db, &dir)))??;
    }
    match action {
        NotesAction::Show => {
            match store.call_blocking(|db| db.current_notes())? {
                Some(version) if !version.notes.is_empty() => show(&version, out)?,
                _ => writeln!(
                    out,
                    "no dream notes yet (`mnemo dream` writes them from the archive)"
                )?,
            }
            let held = store.call_blocking(|db| db.held_notes())?.len();
            if held > 0 {
                writeln!(
                    out,
                    "\n{held} new line(s) wait for your review: `mnemo memory notes --pending`"
                )?;
            }
            Ok(())
        }
        NotesAction::Pending => pending(&store.call_blocking(|db| db.held_notes())?, out),
        NotesAction::Accept(id) | NotesAction::Reject(id) => {
            let verdict = match action {
                NotesAction::Accept(_) => Verdict::Accept,
                _ => Verdict::Reject,
            };
            let (note, notes) = match store.call_blocking(move |db| db.settle_held(id, verdict)) {
                Err(StoreError::NotFound { .. }) => {
                    return Err(CommandError::Usage(format!(
                        "no held line #{id}; `mnemo memory notes --pending` lists them"
                    )));
                }
                done => done?,
            };
            match notes {
                Some(notes) => {
                    let dir = notes_dir(loaded).ok_or_else(|| {
                        CommandError::Usage("no data directory is known; set MNEMO_DATA_DIR".into())
                    })?;
                    write_note_files(&dir, &notes)?;
                    writeln!(out, "added to {}: {}", note.file, note.text)?;
                }
                None => writeln!(out, "dropped: {}", note.text)?,
            }
            Ok(())
        }
        NotesAction::History => {
            let versions = store.call_blocking(|db| db.notes_history())?;
            if versions.is_empty() {
                writeln!(
                    out,
                    "no dream notes yet (`mnemo dream` writes them from the archive)"
                )?;
            }
            let current = versions.iter().find(|v| !v.undone).map(|v| v.id);
            for version in &versions {
                history_line(version, current == Some(version.id), out)?;
            }
            Ok(())
        }
        NotesAction::Undo => {
            let undone = store.call_blocking(|db| {
                let restored = db.undo_notes()?;
                Ok((restored, db.dream_pending()?))
            });
            let (restored, again) = match undone {
                Err(StoreError::NotFound { .. }) => {
                    return Err(CommandError::Usage(
                        "nothing to undo: there are no dream notes (`mnemo dream` writes them)"
                            .into(),
                    ));
                }
                done => done?,
            };
            let dir = notes_dir(loaded).ok_or_else(|| {
                CommandError::Usage("no data directory is known; set MNEMO_DATA_DIR".into())
            })?;
            let notes = restored
                .as_ref()
                .map(|v| v.notes.clone())
                .unwrap_or_default();
            write_note_files(&dir, &notes)?;
            match restored {
                Some(version) => writeln!(
                    out,
                    "restored version #{} of {}; the notes in {} are as they were then",
                    version.id,
                    local_time(version.created_at),
                    dir.display()
                )?,
                None => writeln!(out, "undid the only version; the dream notes are empty now")?,
            }
            if again > 0 {
                writeln!(
                    out,
                    "{again} archive entr{} will be dreamed again (`mnemo dream`, or tonight \
                     under mnemo serve)",
                    if again == 1 { "y" } else { "ies" }
                )?;
            }
            Ok(())
        }
    }
}

fn pending(held: &[HeldNote], out: &mut impl Write) -> Result<(), CommandError> {
    if held.is_empty() {
        writeln!(out, "no dream note lines wait for review")?;
        return Ok(());
    }
    writeln!(
        out,
        "new lines the dream held because they read as instructions (the archive it reads is \
         untrusted); `--accept ID` adds one to the notes, `--reject ID` drops it:"
    )?;
    for note in held {
        writeln!(
            out,
            "#{:<4} {}  {}  {}",
            note.id,
            local_time(note.held_at),
            note.file,
            note.text
        )?;
    }
    Ok(())
}

fn show(version: &NotesVersion, out: &mut impl Write) -> Result<(), CommandError> {
    writeln!(
        out,
        "dream notes, version #{} of {}",
        version.id,
        local_time(version.created_at)
    )?;
    for file in NoteFile::ALL {
        writeln!(
            out,
            "\n=== {} ===\n{}",
            file.file_name(),
            body(&version.notes, file)
        )?;
    }
    Ok(())
}

fn body(notes: &DreamNotes, file: NoteFile) -> &str {
    match notes.get(file).trim() {
        "" => "(empty)",
        text => text,
    }
}

fn history_line(
    version: &NotesVersion,
    current: bool,
    out: &mut impl Write,
) -> Result<(), CommandError> {
    let words = |file| crate::jobs::dream::word_count(version.notes.get(file));
    let origin = match version.origin {
        NotesOrigin::Dream => format!("dream up to archive #{}", version.cursor),
        NotesOrigin::Hand => "edited by hand".to_string(),
    };
    let state = match (current, version.undone) {
        (true, _) => "  (current)",
        (false, true) => "  (undone)",
        (false, false) => "",
    };
    writeln!(
        out,
        "#{:<5} {}  MEMORY.md {:>4} words  USER.md {:>4} words  {origin}{state}",
        version.id,
        local_time(version.created_at),
        words(NoteFile::Memory),
        words(NoteFile::User),
    )?;
    Ok(())
}
