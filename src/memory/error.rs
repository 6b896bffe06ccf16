//! Why a store operation failed, in words a user can act on. Library callers match on the
//! variants; the binary prints them.

use std::path::PathBuf;

#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("no {what} matches `{key}`")]
    NotFound { what: &'static str, key: String },

    #[error("`{prefix}` matches {count} sessions; type more of the id")]
    Ambiguous { prefix: String, count: usize },

    #[error("`{prefix}` is too short to pick a session; type at least {min} characters of the id")]
    PrefixTooShort { prefix: String, min: usize },

    #[error("cannot remember an empty text")]
    EmptyExperience,

    #[error(
        "session {id} is open in mnemo pid {pid} on {host}; nothing was sent. Read it with \
         `mnemo sessions export {id}`, continue a copy with `mnemo sessions fork {id}`, or \
         finish there first"
    )]
    SessionBusy { id: String, pid: u32, host: String },

    #[error("database error: {0}")]
    Sqlite(#[from] rusqlite::Error),

    #[error("stored data is not valid JSON: {0}")]
    Json(#[from] serde_json::Error),

    #[error("cannot prepare the database at {}: {source}", path.display())]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },

    #[error("cannot upgrade the database from schema version {from} to {to}: {source}")]
    Migration {
        from: u32,
        to: u32,
        source: rusqlite::Error,
    },

    #[error(
        "the database has schema version {found}, newer than this mnemo understands \
         (up to {supported}); upgrade mnemo or point it at another data directory"
    )]
    TooNew { found: i64, supported: u32 },

    #[error("stored data is damaged: {0}")]
    Corrupt(String),

    #[error("cannot start the store thread: {0}")]
    Thread(std::io::Error),

    #[error("the store thread has stopped; restart mnemo")]
    Closed,
}

impl StoreError {
    /// Another connection held a lock SQLite would not wait for.
    pub(crate) fn is_busy(&self) -> bool {
        let source = match self {
            StoreError::Sqlite(source) | StoreError::Migration { source, .. } => source,
            _ => return false,
        };
        source.sqlite_error_code() == Some(rusqlite::ErrorCode::DatabaseBusy)
    }
}
