//! The dream cycle's storage: its cursor in the archive, every version of the two notes files
//! (`MEMORY.md`, `USER.md`) and the paragraphs of the current version that recall searches.
//! A new version and the cursor move together in one transaction, so the cursor never runs
//! ahead of what was written.

use std::collections::HashMap;

use rusqlite::{OptionalExtension, Row, Transaction, params};
use serde::Serialize;

use super::db::{Db, from_sql_int, now_ms};
use super::error::StoreError;
use super::schema::DREAM_NOTES_VERSION_KEY;
use super::types::{ArchiveEntry, Experience, Millis};

/// The kv key of the last archive id a dream has read.
const CURSOR_KEY: &str = "dream.cursor";

/// One of the two files the dream cycle writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum NoteFile {
    /// Facts about the work and its environment.
    Memory,
    /// Facts about the person.
    User,
}

impl NoteFile {
    pub const ALL: [NoteFile; 2] = [NoteFile::Memory, NoteFile::User];

    pub fn file_name(self) -> &'static str {
        match self {
            NoteFile::Memory => "MEMORY.md",
            NoteFile::User => "USER.md",
        }
    }

    fn parse(name: &str) -> Option<Self> {
        NoteFile::ALL.into_iter().find(|f| f.file_name() == name)
    }
}

/// The text of both files.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct DreamNotes {
    pub memory: String,
    pub user: String,
}

impl DreamNotes {
    pub fn get(&self, file: NoteFile) -> &str {
        match file {
            NoteFile::Memory => &self.memory,
            NoteFile::User => &self.user,
        }
    }

    pub fn is_empty(&self) -> bool {
        self.memory.trim().is_empty() && self.user.trim().is_empty()
    }
}

/// Who wrote a version.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum NotesOrigin {
    /// The dream cycle's editor.
    Dream,
    /// The person, by editing a file between dreams (taken in before the next dream).
    Hand,
}

impl NotesOrigin {
    fn as_str(self) -> &'static str {
        match self {
            NotesOrigin::Dream => "dream",
            NotesOrigin::Hand => "hand",
        }
    }
}

/// An archive entry for the dream, with the workspace its session worked in.
#[derive(Debug, Clone, PartialEq)]
pub struct DreamEntry {
    pub entry: ArchiveEntry,
    pub workspace: Option<String>,
}

/// One stored version of the pair of files.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct NotesVersion {
    pub id: i64,
    pub created_at: Millis,
    pub origin: NotesOrigin,
    /// The last archive id the dream cursor had reached when this version was written.
    pub cursor: i64,
    /// Taken back by `mnemo memory notes --undo`.
    pub undone: bool,
    pub notes: DreamNotes,
}

fn version_row(row: &Row<'_>) -> rusqlite::Result<NotesVersion> {
    let origin: String = row.get(2)?;
    Ok(NotesVersion {
        id: row.get(0)?,
        created_at: row.get(1)?,
        origin: match origin.as_str() {
            "hand" => NotesOrigin::Hand,
            _ => NotesOrigin::Dream,
        },
        cursor: row.get(3)?,
        undone: row.get(4)?,
        notes: DreamNotes {
            memory: row.get(5)?,
            user: row.get(6)?,
        },
    })
}

const VERSION_COLUMNS: &str = "id, created_at, origin, cursor, undone, memory_md, user_md";

/// The paragraphs recall indexes: blocks separated by blank lines.
pub fn paragraphs(text: &str) -> impl Iterator<Item = &str> {
    text.split("\n\n").map(str::trim).filter(|p| !p.is_empty())
}

impl Db {
    /// The last archive id a dream has read (0 before the first dream).
    pub fn dream_cursor(&self) -> Result<i64, StoreError> {
        Ok(self
            .kv_get(CURSOR_KEY)?
            .and_then(|v| v.parse().ok())
            .unwrap_or(0))
    }

    /// How many archive entries were written after the dream cursor: `mnemo serve` dreams when
    /// this reaches `dream.min_entries`. One indexed count, cheap to ask often.
    pub fn dream_pending(&self) -> Result<usize, StoreError> {
        let cursor = self.dream_cursor()?;
        let count: i64 = self
            .conn
            .prepare_cached("SELECT count(*) FROM archive WHERE id > ?1")?
            .query_row([cursor], |row| row.get(0))?;
        Ok(usize::try_from(count).unwrap_or(0))
    }

    /// Up to `limit` archive entries after the cursor, oldest first.
    pub fn dream_entries(&self, limit: usize) -> Result<Vec<DreamEntry>, StoreError> {
        let cursor = self.dream_cursor()?;
        let limit = i64::try_from(limit).unwrap_or(i64::MAX);
        let rows = self
            .conn
            .prepare_cached(
                "SELECT a.id, s.cwd FROM archive a LEFT JOIN sessions s ON s.id = a.session_id
                 WHERE a.id > ?1 ORDER BY a.id LIMIT ?2",
            )?
            .query_map(params![cursor, limit], |row| Ok((row.get(0)?, row.get(1)?)))?
            .collect::<Result<Vec<(i64, Option<String>)>, _>>()?;
        rows.into_iter()
            .map(|(id, workspace)| {
                Ok(DreamEntry {
                    entry: self.archive_entry(id)?,
                    workspace,
                })
            })
            .collect()
    }

    /// The newest `limit` experiences of every scope, oldest first: what sessions were told to
    /// remember is material for the notes too.
    pub fn dream_experiences(&self, limit: usize) -> Result<Vec<Experience>, StoreError> {
        let limit = i64::try_from(limit).unwrap_or(i64::MAX);
        let mut stmt = self.conn.prepare_cached(
            "SELECT id, text, scope, created_at, source FROM experiences
             ORDER BY created_at DESC, id DESC LIMIT ?1",
        )?;
        let mut found = stmt
            .query_map([limit], |row| {
                let scope: String = row.get(2)?;
                Ok(Experience {
                    id: row.get(0)?,
                    text: row.get(1)?,
                    scope: match scope.as_str() {
                        "global" => super::types::Scope::Global,
                        _ => super::types::Scope::Project(scope),
                    },
                    created_at: row.get(3)?,
                    source: row.get(4)?,
                })
            })?
            .collect::<Result<Vec<_>, _>>()?;
        found.reverse();
        Ok(found)
    }

    /// The version sessions see: the latest one not undone.
    pub fn current_notes(&self) -> Result<Option<NotesVersion>, StoreError> {
        let sql = format!(
            "SELECT {VERSION_COLUMNS} FROM dream_notes WHERE undone = 0 ORDER BY id DESC LIMIT 1"
        );
        Ok(self
            .conn
            .prepare_cached(&sql)?
            .query_row([], version_row)
            .optional()?)
    }

    /// Every version, newest first.
    pub fn notes_history(&self) -> Result<Vec<NotesVersion>, StoreError> {
        let sql = format!("SELECT {VERSION_COLUMNS} FROM dream_notes ORDER BY id DESC");
        let rows = self
            .conn
            .prepare_cached(&sql)?
            .query_map([], version_row)?
            .collect::<Result<Vec<_>, _>>()?;
        Ok(rows)
    }

    /// Stores `notes` as the current version and, for a dream, moves the cursor to `cursor`
    /// in the same transaction. Returns the version's id.
    pub fn save_notes(
        &mut self,
        notes: &DreamNotes,
        origin: NotesOrigin,
        cursor: Option<i64>,
    ) -> Result<i64, StoreError> {
        let tx = self.conn.transaction()?;
        let reached = match cursor {
            Some(cursor) => cursor,
            None => read_cursor(&tx)?,
        };
        let id = tx
            .prepare_cached(
                "INSERT INTO dream_notes(created_at, origin, cursor, memory_md, user_md)
                 VALUES (?1, ?2, ?3, ?4, ?5)",
            )?
            .insert(params![
                now_ms(),
                origin.as_str(),
                reached,
                notes.memory,
                notes.user
            ])?;
        if let Some(cursor) = cursor {
            set_cursor(&tx, cursor)?;
        }
        index_paragraphs(&tx, id, notes)?;
        tx.commit()?;
        Ok(id)
    }

    /// Moves the cursor from `from` past `last` without a new version (a batch the dream could
    /// not turn into notes); `false` when another dream moved it meanwhile.
    pub fn skip_dream_batch(&mut self, from: i64, last: i64) -> Result<bool, StoreError> {
        let tx = self.conn.transaction()?;
        if read_cursor(&tx)? != from {
            return Ok(false);
        }
        set_cursor(&tx, last)?;
        tx.commit()?;
        Ok(true)
    }

    /// Takes back the current version; the one before it (or none) becomes current and is
    /// returned. The cursor goes back to where that version left it, so the archive entries
    /// the undone dream read are dreamed again.
    pub fn undo_notes(&mut self) -> Result<Option<NotesVersion>, StoreError> {
        let current = self.current_notes()?.ok_or_else(|| StoreError::NotFound {
            what: "dream notes version",
            key: "current (nothing to undo)".into(),
        })?;
        let tx = self.conn.transaction()?;
        tx.prepare_cached("UPDATE dream_notes SET undone = 1 WHERE id = ?1")?
            .execute([current.id])?;
        let sql = format!(
            "SELECT {VERSION_COLUMNS} FROM dream_notes WHERE undone = 0 ORDER BY id DESC LIMIT 1"
        );
        let restored = tx
            .prepare_cached(&sql)?
            .query_row([], version_row)
            .optional()?;
        match &restored {
            Some(version) => index_paragraphs(&tx, version.id, &version.notes)?,
            None => {
                tx.execute("DELETE FROM dream_paragraphs", [])?;
            }
        }
        set_cursor(&tx, restored.as_ref().map_or(0, |version| version.cursor))?;
        tx.commit()?;
        Ok(restored)
    }

    /// A counter that changes whenever the notes change (a dream, a hand edit taken in, an
    /// undo), in this process or another.
    pub fn dream_notes_version(&self) -> Result<u64, StoreError> {
        let value = self.kv_get(DREAM_NOTES_VERSION_KEY)?;
        Ok(from_sql_int(
            value.and_then(|v| v.parse::<i64>().ok()).unwrap_or(0),
        ))
    }

    /// The file, text and date of a paragraph (when a version first wrote it), for a recall
    /// hit.
    pub(super) fn dream_paragraph(
        &self,
        id: i64,
    ) -> Result<Option<(NoteFile, String, Millis)>, StoreError> {
        let found = self
            .conn
            .prepare_cached(
                "SELECT p.file, p.text, n.created_at FROM dream_paragraphs p
                 JOIN dream_notes n ON n.id = p.version_id WHERE p.id = ?1",
            )?
            .query_row([id], |row| {
                Ok((
                    row.get::<_, String>(0)?,
                    row.get::<_, String>(1)?,
                    row.get(2)?,
                ))
            })
            .optional()?;
        Ok(found.and_then(|(file, text, at)| Some((NoteFile::parse(&file)?, text, at))))
    }
}

fn set_cursor(tx: &Transaction<'_>, cursor: i64) -> Result<(), StoreError> {
    tx.prepare_cached(
        "INSERT INTO kv(key, value) VALUES (?1, ?2)
         ON CONFLICT(key) DO UPDATE SET value = excluded.value",
    )?
    .execute(params![CURSOR_KEY, cursor.to_string()])?;
    Ok(())
}

fn read_cursor(tx: &Transaction<'_>) -> Result<i64, StoreError> {
    let value: Option<String> = tx
        .prepare_cached("SELECT value FROM kv WHERE key = ?1")?
        .query_row([CURSOR_KEY], |row| row.get(0))
        .optional()?;
    Ok(value.and_then(|v| v.parse().ok()).unwrap_or(0))
}

/// Makes the searchable paragraphs those of version `id`. A paragraph the version keeps
/// unchanged keeps its row, with its pieces and the version that first wrote it: a dream
/// rewrites a few paragraphs, and only those are indexed and embedded again.
fn index_paragraphs(tx: &Transaction<'_>, id: i64, notes: &DreamNotes) -> Result<(), StoreError> {
    let mut wanted: HashMap<(&str, &str), usize> = HashMap::new();
    for file in NoteFile::ALL {
        for paragraph in paragraphs(notes.get(file)) {
            *wanted.entry((file.file_name(), paragraph)).or_default() += 1;
        }
    }
    let existing = tx
        .prepare_cached("SELECT id, file, text FROM dream_paragraphs ORDER BY id")?
        .query_map([], |row| Ok((row.get(0)?, row.get(1)?, row.get(2)?)))?
        .collect::<Result<Vec<(i64, String, String)>, _>>()?;
    let mut delete = tx.prepare_cached("DELETE FROM dream_paragraphs WHERE id = ?1")?;
    for (row, file, text) in &existing {
        match wanted.get_mut(&(file.as_str(), text.as_str())) {
            Some(left) if *left > 0 => *left -= 1,
            _ => {
                delete.execute([row])?;
            }
        }
    }
    let mut insert = tx.prepare_cached(
        "INSERT INTO dream_paragraphs(version_id, file, text) VALUES (?1, ?2, ?3)",
    )?;
    for file in NoteFile::ALL {
        for paragraph in paragraphs(notes.get(file)) {
            if let Some(left) = wanted.get_mut(&(file.file_name(), paragraph))
                && *left > 0
            {
                *left -= 1;
                insert.execute(params![id, file.file_name(), paragraph])?;
            }
        }
    }
    Ok(())
}

#[cfg(test)]
#[path = "dream_notes_tests.rs"]
mod tests;
