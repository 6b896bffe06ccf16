//! What a recall candidate is, read back for the result: what it says, where and when it
//! came from, and whether it lies within the search's scope.

use rusqlite::OptionalExtension;

use super::db::Db;
use super::error::StoreError;
use super::piece_index::{Key, Source};
use super::recall::RecallScope;
use super::types::SearchHit;

/// How much of a working message a hit shows.
const MESSAGE_PREVIEW_CHARS: usize = 600;

fn hit(source: Source, id: i64, session_id: Option<String>, created_at: i64) -> SearchHit {
    SearchHit {
        id,
        source,
        session_id,
        created_at,
        importance: 0.5,
        topic: String::new(),
        summary: String::new(),
        keyword: 0.0,
        semantic: None,
        score: 0.0,
    }
}

fn preview(text: &str) -> String {
    match text.char_indices().nth(MESSAGE_PREVIEW_CHARS) {
        Some((end, _)) => format!("{}…", &text[..end]),
        None => text.to_string(),
    }
}

/// An archive entry as a hit, with its session's workspace.
pub(super) const ARCHIVE_HIT: &str =
    "SELECT a.session_id, a.created_at, a.importance, a.topic, a.summary, s.cwd
     FROM archive a LEFT JOIN sessions s ON s.id = a.session_id WHERE a.id = ?1";

impl Db {
    /// The hit for `key`, or `None` when it is gone or outside `scope`.
    pub(super) fn hit(
        &self,
        (source, id): Key,
        scope: &RecallScope,
    ) -> Result<Option<SearchHit>, StoreError> {
        match source {
            Source::Archive => {
                let found = self
                    .conn
                    .prepare_cached(ARCHIVE_HIT)?
                    .query_row([id], |row| {
                        let mut found = hit(source, id, row.get(0)?, row.get(1)?);
                        found.importance = row.get(2)?;
                        found.topic = row.get(3)?;
                        found.summary = row.get(4)?;
                        Ok((found, row.get::<_, Option<String>>(5)?))
                    })
                    .optional()?;
                Ok(found
                    .filter(|(_, cwd)| scope.admits_workspace(cwd.as_deref()))
                    .map(|(hit, _)| hit))
            }
            Source::Experience => {
                let found = self
                    .conn
                    .prepare_cached(
                        "SELECT text, scope, created_at FROM experiences WHERE id = ?1",
                    )?
                    .query_row([id], |row| {
                        let mut found = hit(source, id, None, row.get(2)?);
                        found.topic = "remembered".to_string();
                        found.summary = row.get(0)?;
                        Ok((found, row.get::<_, String>(1)?))
                    })
                    .optional()?;
                Ok(found
                    .filter(|(_, stored)| {
                        stored == "global" || scope.admits_workspace(Some(stored))
                    })
                    .map(|(hit, _)| hit))
            }
            Source::Message => {
                let found = self
                    .conn
                    .prepare_cached(
                        "SELECT m.session_id, m.created_at, m.role, f.text, s.cwd
                         FROM messages_fts f JOIN messages m ON m.id = f.rowid
                         LEFT JOIN sessions s ON s.id = m.session_id WHERE f.rowid = ?1",
                    )?
                    .query_row([id], |row| {
                        let session: String = row.get(0)?;
                        let role: String = row.get(2)?;
                        let mut found = hit(source, id, Some(session), row.get(1)?);
                        found.topic = format!("{role} message");
                        found.summary = preview(&row.get::<_, String>(3)?);
                        Ok((found, row.get::<_, Option<String>>(4)?))
                    })
                    .optional()?;
                Ok(found
                    .filter(|(hit, cwd)| {
                        scope.admits_workspace(cwd.as_deref())
                            && hit.session_id.as_deref() != scope.except_session.as_deref()
                    })
                    .map(|(hit, _)| hit))
            }
            // The notes are about every workspace, as global experiences are.
            Source::Dream => Ok(self.dream_paragraph(id)?.map(|(file, text, at)| {
                let mut found = hit(source, id, None, at);
                found.topic = format!("dream note ({})", file.file_name());
                found.summary = text;
                found
            })),
        }
    }
}
