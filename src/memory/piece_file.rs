//! The piece index kept on disk beside the database, one file per embedding model, so a new
//! process reads its vectors in one go instead of decoding every stored piece again (at
//! 60,000 pieces: ~10 ms instead of ~350). It is a cache of `memory_pieces`: the database
//! stays the truth, and a file that is missing, damaged, from another database or from its
//! future is simply rebuilt from it.
//!
//! Layout: a header (magic, dimension, database id, model name) then the records exactly as
//! `PieceIndex` holds them, in increasing piece-row order. Processes only append whole records
//! under a lock and replace the file by renaming a new one, so a reader sees whole records
//! (a torn tail from a killed writer is cut off).

use std::fs::{File, OpenOptions};
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use super::piece_index::{PieceIndex, RECORD_HEAD};

const MAGIC: &[u8; 8] = b"MNEMOPI1";
/// Writers hold the lock for the time of one append; waiting longer than this means
/// something is wrong, and the file can be brought up to date by the next search.
const LOCK_WAIT: Duration = Duration::from_secs(2);

pub(super) struct PieceFile {
    path: PathBuf,
    lock: PathBuf,
    /// Which database the file belongs to (a random id kept in the database).
    db_id: String,
}

impl PieceFile {
    /// The file of `model`'s pieces for the database at `db_path`, whose id is `db_id`.
    pub(super) fn new(db_path: &Path, db_id: String, model: &str) -> PieceFile {
        let name: String = model
            .chars()
            .map(|c| match c {
                'a'..='z' | 'A'..='Z' | '0'..='9' | '-' | '.' => c,
                _ => '_',
            })
            .collect();
        let dir = db_path.parent().unwrap_or(Path::new("."));
        let stem = db_path
            .file_name()
            .map_or_else(|| "mnemo.db".into(), |n| n.to_string_lossy().into_owned());
        PieceFile {
            path: dir.join(format!("{stem}.pieces-{name}")),
            lock: dir.join(format!("{stem}.pieces-{name}.lock")),
            db_id,
        }
    }

    fn header(&self, model: &str, dim: usize) -> Vec<u8> {
        let mut header = MAGIC.to_vec();
        for text in [self.db_id.as_str(), model] {
            header.extend_from_slice(&(text.len() as u32).to_le_bytes());
            header.extend_from_slice(text.as_bytes());
        }
        header.extend_from_slice(&(dim as u32).to_le_bytes());
        header
    }

    /// The stored index, when the file is there and belongs to this database and model.
    pub(super) fn load(&self, model: &str, dim: usize) -> Option<PieceIndex> {
        let mut file = File::open(&self.path).ok()?;
        let header = self.header(model, dim);
        let mut found = vec![0; header.len()];
        file.read_exact(&mut found).ok()?;
        if found != header {
            return None;
        }
        let len = file.metadata().ok()?.len() as usize;
        let mut records = Vec::with_capacity(len.saturating_sub(header.len()));
        file.read_to_end(&mut records).ok()?;
        let record = RECORD_HEAD + dim;
        records.truncate(records.len() - records.len() % record);
        PieceIndex::from_records(model, dim, records)
    }

    /// Appends the records of `index` the file does not hold yet (another process may have
    /// appended some meanwhile); starts the file when there is none or it does not match.
    /// A cache: when it cannot be written, searches read the database instead.
    pub(super) fn append(&self, index: &PieceIndex) {
        let Some(_lock) = self.lock() else {
            return;
        };
        let _ = self.append_locked(index);
    }

    fn append_locked(&self, index: &PieceIndex) -> std::io::Result<()> {
        let header = self.header(index.model(), index.dim());
        let mut file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(&self.path)?;
        let len = file.metadata()?.len() as usize;
        let mut found = vec![0; header.len().min(len)];
        file.read_exact(&mut found)?;
        if found != header {
            return self.replace_locked(index);
        }
        let record = index.record_len();
        let whole = (len - header.len()) / record;
        let end = header.len() + whole * record;
        if end != len {
            file.set_len(end as u64)?;
        }
        let last_stored = match whole {
            0 => 0,
            _ => {
                let mut row = [0; 8];
                file.seek(SeekFrom::Start((end - record) as u64))?;
                file.read_exact(&mut row)?;
                i64::from_le_bytes(row)
            }
        };
        let first_new = (0..index.len()).find(|&at| index.row_at(at) > last_stored);
        if let Some(first_new) = first_new {
            file.seek(SeekFrom::Start(end as u64))?;
            file.write_all(index.records(first_new))?;
        }
        Ok(())
    }

    /// Writes `index` as the whole file (after pieces were deleted, or for another model).
    pub(super) fn replace(&self, index: &PieceIndex) {
        let Some(_lock) = self.lock() else {
            return;
        };
        let _ = self.replace_locked(index);
    }

    fn replace_locked(&self, index: &PieceIndex) -> std::io::Result<()> {
        let fresh = self
            .path
            .with_extension(format!("new{}", std::process::id()));
        let written = (|| {
            let mut file = File::create(&fresh)?;
            file.write_all(&self.header(index.model(), index.dim()))?;
            file.write_all(index.records(0))?;
            std::fs::rename(&fresh, &self.path)
        })();
        if written.is_err() {
            let _ = std::fs::remove_file(&fresh);
        }
        written
    }

    fn lock(&self) -> Option<File> {
        let file = OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&self.lock)
            .ok()?;
        let deadline = Instant::now() + LOCK_WAIT;
        loop {
            match file.try_lock() {
                Ok(()) => return Some(file),
                Err(std::fs::TryLockError::WouldBlock) if Instant::now() < deadline => {
                    std::thread::sleep(Duration::from_millis(5));
                }
                Err(_) => return None,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::memory::piece_index::Source;

    type TestResult = Result<(), Box<dyn std::error::Error>>;

    fn index(rows: std::ops::RangeInclusive<i64>) -> PieceIndex {
        let mut index = PieceIndex::new("local:m", 4);
        for row in rows {
            let x = row as f32;
            index.push(row, (Source::Archive, row * 10), &[x, 1.0, 0.0, -x]);
        }
        index
    }

    #[test]
    fn appended_records_are_read_back_by_the_next_process() -> TestResult {
        let dir = tempfile::tempdir()?;
        let file = PieceFile::new(&dir.path().join("mnemo.db"), "db1".into(), "local:m");
        assert!(file.load("local:m", 4).is_none(), "no file yet");
        file.append(&index(1..=3));
        file.append(&index(1..=5));
        file.append(&index(1..=5));
        let loaded = file.load("local:m", 4).ok_or("not loaded")?;
        assert_eq!(loaded.len(), 5, "each record once");
        assert_eq!(loaded.last_row, 5);
        assert_eq!(loaded.records(0), index(1..=5).records(0));
        Ok(())
    }

    #[test]
    fn a_file_of_another_database_model_or_with_a_torn_tail_is_not_trusted() -> TestResult {
        let dir = tempfile::tempdir()?;
        let db = dir.path().join("mnemo.db");
        let file = PieceFile::new(&db, "db1".into(), "local:m");
        file.append(&index(1..=4));
        assert!(
            PieceFile::new(&db, "db2".into(), "local:m")
                .load("local:m", 4)
                .is_none()
        );
        assert!(file.load("local:m", 8).is_none(), "another dimension");

        let mut torn = OpenOptions::new().append(true).open(&file.path)?;
        torn.write_all(&[1, 2, 3])?;
        let loaded = file.load("local:m", 4).ok_or("torn tail not cut")?;
        assert_eq!(loaded.len(), 4);
        file.append(&index(1..=6));
        assert_eq!(file.load("local:m", 4).ok_or("not loaded")?.len(), 6);

        std::fs::write(&file.path, b"garbage")?;
        assert!(file.load("local:m", 4).is_none());
        file.append(&index(1..=2));
        assert_eq!(file.load("local:m", 4).ok_or("not rebuilt")?.len(), 2);
        Ok(())
    }
}
