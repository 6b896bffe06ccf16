//! Keeps files before the agent's first change to them in a turn, and the turn's shell
//! commands, within the size limits.

use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use super::RewindError;
use super::journal::{self, Before, Journal, KeptFile, TurnEntry, blob_path, io_error};
use crate::sandbox::handles;

/// Commands recorded per turn, and characters kept of each.
const COMMANDS_PER_TURN: usize = 200;
const COMMAND_CHARS: usize = 500;

/// How much rewind data is kept.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// A larger file is named as not kept.
    pub file_bytes: u64,
    /// A session's kept contents; its oldest are pruned beyond it.
    pub session_bytes: u64,
    /// All sessions' kept contents; the least recently used sessions' are pruned beyond it.
    pub total_bytes: u64,
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            file_bytes: 4 << 20,
            session_bytes: 128 << 20,
            total_bytes: 1 << 30,
        }
    }
}

/// One session's rewind data. Shared by the session's tool calls (which may run in
/// parallel), so the journal sits behind a lock.
pub struct Keeper {
    root: PathBuf,
    pub(super) dir: PathBuf,
    limits: Limits,
    pub(super) journal: Mutex<Option<Journal>>,
    /// Other sessions' data is pruned once per keeper: only this session grows meanwhile, and
    /// its own limit bounds that.
    others_pruned: std::sync::atomic::AtomicBool,
}

impl Keeper {
    /// The keeper of session `session` under `root` (the data directory's `rewind/`).
    pub fn new(root: PathBuf, session: &str, limits: Limits) -> Self {
        let dir = root.join(session_dir_name(session));
        Self {
            root,
            dir,
            limits,
            journal: Mutex::new(None),
            others_pruned: std::sync::atomic::AtomicBool::new(false),
        }
    }

    /// Runs `work` on the journal, loaded on first use.
    pub(super) fn with_journal<R>(
        &self,
        work: impl FnOnce(&mut Journal, &Path) -> Result<R, RewindError>,
    ) -> Result<R, RewindError> {
        let mut guard = self.journal.lock().unwrap_or_else(|e| e.into_inner());
        if guard.is_none() {
            *guard = Some(journal::load(&self.dir)?);
        }
        let journal = guard.get_or_insert_with(Journal::default);
        work(journal, &self.dir)
    }

    /// Records the start of turn `turn`, whose first message will be `first_seq`, and, at the
    /// session's first turn here, prunes other sessions' data when all of it is over the limit.
    pub fn begin_turn(
        &self,
        turn: u64,
        prompt: &str,
        first_seq: i64,
        started_at: i64,
    ) -> Result<(), RewindError> {
        self.begin_turn_with(turn, prompt, first_seq, started_at, None)
    }

    /// [`Keeper::begin_turn`] with the session's `context` at the start of the turn.
    pub fn begin_turn_with(
        &self,
        turn: u64,
        prompt: &str,
        first_seq: i64,
        started_at: i64,
        context: Option<String>,
    ) -> Result<(), RewindError> {
        self.with_journal(|journal, dir| {
            journal.turns.retain(|t| t.turn != turn);
            journal.turns.push(TurnEntry {
                turn,
                prompt: prompt.to_string(),
                first_seq: Some(first_seq),
                started_at,
                files: Vec::new(),
                commands: Vec::new(),
                context,
            });
            journal::save(dir, journal)
        })?;
        match self
            .others_pruned
            .swap(true, std::sync::atomic::Ordering::Relaxed)
        {
            true => Ok(()),
            false => self.prune_other_sessions(),
        }
    }

    /// Keeps the file at `relative` (beneath `workspace`) as it is now, unless turn `turn`
    /// already kept it. Call just before the write.
    pub fn keep(&self, turn: u64, workspace: &Path, relative: &Path) -> Result<(), RewindError> {
        let path = relative.display().to_string();
        let limits = self.limits;
        self.with_journal(|journal, dir| {
            let index = entry_index(journal, turn);
            let entry = &journal.turns[index];
            if entry.files.iter().any(|f| f.path == path) {
                return Ok(());
            }
            let blob = format!("{turn}-{}", entry.files.len());
            let before = snapshot(workspace, relative, &blob_path(dir, &blob), limits)?;
            let before = match before {
                Some(bytes) => Before::Content { blob, bytes },
                None => absent_or_unreadable(workspace, relative, limits),
            };
            journal.turns[index].files.push(KeptFile { path, before });
            prune_session(journal, dir, limits.session_bytes);
            journal::save(dir, journal)
        })
    }

    /// Records that turn `turn` ran the shell command `command`.
    pub fn command(&self, turn: u64, command: &str) -> Result<(), RewindError> {
        self.with_journal(|journal, dir| {
            let index = entry_index(journal, turn);
            let commands = &mut journal.turns[index].commands;
            if commands.len() >= COMMANDS_PER_TURN {
                return Ok(());
            }
            commands.push(crate::text::clip(command, COMMAND_CHARS));
            journal::save(dir, journal)
        })
    }

    /// The recorded turns, oldest first.
    pub fn turns(&self) -> Result<Vec<TurnEntry>, RewindError> {
        self.with_journal(|journal, _| Ok(journal.turns.clone()))
    }

    /// Removes the least recently used sessions' data until all of it fits `total_bytes`;
    /// this session's own stays (its limit is `session_bytes`).
    fn prune_other_sessions(&self) -> Result<(), RewindError> {
        let Ok(entries) = std::fs::read_dir(&self.root) else {
            return Ok(());
        };
        let mut sessions: Vec<(std::time::SystemTime, u64, PathBuf)> = entries
            .filter_map(Result::ok)
            .map(|e| e.path())
            .filter(|p| p.is_dir() && !p.is_symlink())
            .map(|p| {
                let used = journal::journal_path(&p)
                    .metadata()
                    .and_then(|m| m.modified())
                    .unwrap_or(std::time::UNIX_EPOCH);
                (used, dir_bytes(&p.join("blobs")), p)
            })
            .collect();
        let mut total: u64 = sessions.iter().map(|s| s.1).sum();
        sessions.sort_by_key(|s| s.0);
        for (_, bytes, path) in sessions {
            if total <= self.limits.total_bytes {
                break;
            }
            if path == self.dir {
                continue;
            }
            std::fs::remove_dir_all(&path).map_err(io_error(&path))?;
            total = total.saturating_sub(bytes);
        }
        Ok(())
    }
}

/// Deletes what session `session` kept for rewinding under `root` (the session was deleted).
pub fn forget_session(root: &Path, session: &str) -> Result<(), RewindError> {
    let dir = root.join(session_dir_name(session));
    match std::fs::remove_dir_all(&dir) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(io_error(&dir)(e)),
        _ => Ok(()),
    }
}

/// A session id as a directory name: anything but letters, digits and `-` becomes `_`.
fn session_dir_name(session: &str) -> String {
    session
        .chars()
        .map(|c| match c.is_ascii_alphanumeric() || c == '-' {
            true => c,
            false => '_',
        })
        .collect()
}

/// The index of turn `turn`'s entry, made when the turn was not begun here (a keeper set up
/// while the turn ran): such a turn's files can be rewound, not its conversation.
fn entry_index(journal: &mut Journal, turn: u64) -> usize {
    if let Some(index) = journal.turns.iter().position(|t| t.turn == turn) {
        return index;
    }
    journal.turns.push(TurnEntry {
        turn,
        prompt: String::new(),
        first_seq: None,
        started_at: now_ms(),
        files: Vec::new(),
        commands: Vec::new(),
        context: None,
    });
    journal.turns.len() - 1
}

/// Copies the regular file at `relative` to `blob` when it exists and is small enough,
/// returning its size; `None` when it was not copied.
fn snapshot(
    workspace: &Path,
    relative: &Path,
    blob: &Path,
    limits: Limits,
) -> Result<Option<u64>, RewindError> {
    let Ok(file) = handles::open_read(workspace, relative) else {
        return Ok(None);
    };
    let size = file.metadata().map(|m| m.len()).unwrap_or(u64::MAX);
    if size > limits.file_bytes {
        return Ok(None);
    }
    let mut content = Vec::with_capacity(size as usize);
    if file
        .take(limits.file_bytes + 1)
        .read_to_end(&mut content)
        .is_err()
        || content.len() as u64 > limits.file_bytes
    {
        return Ok(None);
    }
    if let Some(parent) = blob.parent() {
        std::fs::create_dir_all(parent).map_err(io_error(parent))?;
    }
    std::fs::write(blob, &content).map_err(io_error(blob))?;
    Ok(Some(content.len() as u64))
}

/// Why a file was not copied: it did not exist, it is too large, or it cannot be read.
fn absent_or_unreadable(workspace: &Path, relative: &Path, limits: Limits) -> Before {
    match handles::open_read(workspace, relative) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Before::Absent,
        Err(e) => Before::Unreadable { why: e.to_string() },
        Ok(file) => match file.metadata().map(|m| m.len()) {
            Ok(bytes) if bytes > limits.file_bytes => Before::TooLarge { bytes },
            Ok(_) | Err(_) => Before::Unreadable {
                why: "it could not be read when the turn changed it".into(),
            },
        },
    }
}

/// Prunes the oldest kept contents until the session's fit `limit`.
fn prune_session(journal: &mut Journal, dir: &Path, limit: u64) {
    let mut total: u64 = journal.turns.iter().map(TurnEntry::kept_bytes).sum();
    for file in journal.turns.iter_mut().flat_map(|t| t.files.iter_mut()) {
        if total <= limit {
            return;
        }
        if let Before::Content { blob, bytes } = &file.before {
            let _ = std::fs::remove_file(blob_path(dir, blob));
            total = total.saturating_sub(*bytes);
            file.before = Before::Pruned { bytes: *bytes };
        }
    }
}

/// Bytes of the files directly in `dir`.
fn dir_bytes(dir: &Path) -> u64 {
    std::fs::read_dir(dir)
        .map(|entries| {
            entries
                .filter_map(Result::ok)
                .filter_map(|e| e.metadata().ok())
                .map(|m| m.len())
                .sum()
        })
        .unwrap_or(0)
}

fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as i64)
}
