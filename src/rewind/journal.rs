//! A session's rewind journal: `<root>/<session>/turns.json` lists the turns with the files
//! kept before their first change, whose content sits beside it in `blobs/`.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::RewindError;

/// A file as it was before the turn's first change to it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "state", rename_all = "snake_case")]
pub enum Before {
    /// Its content is kept in `blobs/<blob>`.
    Content { blob: String, bytes: u64 },
    /// It did not exist: a rewind removes it.
    Absent,
    /// Larger than the size kept per file.
    TooLarge { bytes: u64 },
    /// It could not be read (not a regular file, a symlink, no permission).
    Unreadable { why: String },
    /// Its content was pruned to keep the data directory within bounds.
    Pruned { bytes: u64 },
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct KeptFile {
    /// Relative to the workspace.
    pub path: String,
    pub before: Before,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TurnEntry {
    pub turn: u64,
    pub prompt: String,
    /// The store's seq of the turn's first message: the conversation goes back to before it.
    /// `None` when the turn was not seen starting (its files can be rewound, not its
    /// conversation).
    #[serde(default)]
    pub first_seq: Option<i64>,
    pub started_at: i64,
    #[serde(default)]
    pub files: Vec<KeptFile>,
    #[serde(default)]
    pub commands: Vec<String>,
    /// What the session had noted about its conversation when the turn began (the nested
    /// instruction files it had read), put back when the conversation is rewound.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub context: Option<String>,
}

impl TurnEntry {
    /// Bytes its kept contents take.
    pub fn kept_bytes(&self) -> u64 {
        self.files
            .iter()
            .map(|f| match f.before {
                Before::Content { bytes, .. } => bytes,
                _ => 0,
            })
            .sum()
    }
}

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub(super) struct Journal {
    pub turns: Vec<TurnEntry>,
}

pub(super) fn journal_path(dir: &Path) -> PathBuf {
    dir.join("turns.json")
}

pub(super) fn blob_path(dir: &Path, blob: &str) -> PathBuf {
    dir.join("blobs").join(blob)
}

pub(super) fn io_error(path: &Path) -> impl FnOnce(std::io::Error) -> RewindError + '_ {
    move |source| RewindError::Io {
        path: path.to_path_buf(),
        source,
    }
}

/// The session's journal; an empty one when none was written yet.
pub(super) fn load(dir: &Path) -> Result<Journal, RewindError> {
    let path = journal_path(dir);
    match std::fs::read(&path) {
        Ok(bytes) => serde_json::from_slice(&bytes).map_err(|source| RewindError::Journal {
            path: path.clone(),
            source,
        }),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Journal::default()),
        Err(e) => Err(io_error(&path)(e)),
    }
}

/// Writes the journal whole, through a temporary file, so a crash leaves the old or the new.
pub(super) fn save(dir: &Path, journal: &Journal) -> Result<(), RewindError> {
    std::fs::create_dir_all(dir).map_err(io_error(dir))?;
    let path = journal_path(dir);
    let temporary = dir.join("turns.json.tmp");
    let bytes = serde_json::to_vec(journal).map_err(|source| RewindError::Journal {
        path: path.clone(),
        source,
    })?;
    std::fs::write(&temporary, bytes).map_err(io_error(&temporary))?;
    std::fs::rename(&temporary, &path).map_err(io_error(&path))
}
