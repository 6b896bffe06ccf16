//! The database handle: opening a file (pragmas, migrations) and the small settings table.
//! The typed operations live beside it, one file per table family, each adding to `impl Db`.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use rusqlite::config::DbConfig;
use rusqlite::{Connection, OptionalExtension, params};

use super::error::StoreError;
use super::piece_index::PieceIndex;
use super::schema;
use super::types::Millis;

/// How long a write waits for another process holding the lock before failing.
const BUSY_TIMEOUT: Duration = Duration::from_secs(5);

/// Enough for every statement of this module, so hot paths never re-prepare.
const STATEMENT_CACHE: usize = 64;

/// Page cache per connection, in KiB (SQLite's default is 2 MiB): keeps the hot part of the
/// full-text index in memory between searches.
const PAGE_CACHE_KIB: i64 = 32 * 1024;

/// One connection to the store. Synchronous: run it on the store thread (`Store`), never on
/// the async runtime.
pub struct Db {
    pub(super) conn: Connection,
    /// The embedded pieces, loaded on the first search by meaning and topped up on each.
    pub(super) pieces: Option<PieceIndex>,
    /// The database file, beside which the piece index is kept (`None` in memory).
    pub(super) path: Option<PathBuf>,
}

impl Db {
    /// Opens (creating it and its directory when needed) and upgrades the database at `path`.
    pub fn open(path: &Path) -> Result<Db, StoreError> {
        if let Some(dir) = path.parent().filter(|dir| !dir.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir).map_err(|source| StoreError::Io {
                path: dir.to_path_buf(),
                source,
            })?;
        }
        // SQLite answers "busy" without waiting when two connections would deadlock (both
        // reading the new file, both wanting its write lock to switch it to WAL), so processes
        // starting together retry the whole opening, within the same limit as any other wait.
        let deadline = Instant::now() + BUSY_TIMEOUT;
        let mut pause = Duration::from_millis(5);
        loop {
            match Db::open_once(path) {
                Err(err) if err.is_busy() && Instant::now() + pause < deadline => {
                    std::thread::sleep(pause);
                    pause = (pause * 2).min(Duration::from_millis(100));
                }
                result => return result,
            }
        }
    }

    fn open_once(path: &Path) -> Result<Db, StoreError> {
        let conn = Connection::open(path)?;
        conn.busy_timeout(BUSY_TIMEOUT)?;
        let _mode: String = conn.query_row("PRAGMA journal_mode = WAL", [], |row| row.get(0))?;
        conn.pragma_update(None, "synchronous", "NORMAL")?;
        let mut db = Db::configure(conn)?;
        db.path = Some(path.to_path_buf());
        Ok(db)
    }

    /// A private database that disappears when dropped; for tests and one-off runs.
    pub fn open_in_memory() -> Result<Db, StoreError> {
        Db::configure(Connection::open_in_memory()?)
    }

    fn configure(mut conn: Connection) -> Result<Db, StoreError> {
        conn.pragma_update(None, "foreign_keys", "ON")?;
        conn.busy_timeout(BUSY_TIMEOUT)?;
        conn.pragma_update(None, "cache_size", -PAGE_CACHE_KIB)?;
        conn.set_prepared_statement_cache_capacity(STATEMENT_CACHE);
        // Plans that never depend on the values bound: SQLite otherwise re-prepared a cached
        // join for every new value (a search looks up dozens of hits that way). mnemo runs no
        // ANALYZE, so no plan had anything to gain from the values.
        conn.set_db_config(DbConfig::SQLITE_DBCONFIG_ENABLE_QPSG, true)?;
        schema::migrate(&mut conn)?;
        Ok(Db {
            conn,
            pieces: None,
            path: None,
        })
    }

    /// SQLite's own check of the file: `ok`, or what is damaged.
    pub fn integrity_check(&self) -> Result<String, StoreError> {
        let mut stmt = self.conn.prepare("PRAGMA integrity_check")?;
        let lines = stmt
            .query_map([], |row| row.get::<_, String>(0))?
            .collect::<Result<Vec<_>, _>>()?;
        Ok(lines.join("; "))
    }

    /// The schema version of the open database (`PRAGMA user_version`).
    pub fn schema_version(&self) -> Result<i64, StoreError> {
        Ok(self
            .conn
            .query_row("PRAGMA user_version", [], |row| row.get(0))?)
    }

    pub fn kv_get(&self, key: &str) -> Result<Option<String>, StoreError> {
        let mut stmt = self
            .conn
            .prepare_cached("SELECT value FROM kv WHERE key = ?1")?;
        Ok(stmt.query_row([key], |row| row.get(0)).optional()?)
    }

    pub fn kv_set(&mut self, key: &str, value: &str) -> Result<(), StoreError> {
        let mut stmt = self.conn.prepare_cached(
            "INSERT INTO kv(key, value) VALUES (?1, ?2)
             ON CONFLICT(key) DO UPDATE SET value = excluded.value",
        )?;
        stmt.execute(params![key, value])?;
        Ok(())
    }

    /// Lets go of the piece index (read again from its file by the next search by meaning)
    /// and of the page cache: a long-lived process going idle after large reads.
    pub fn release_memory(&mut self) -> Result<(), StoreError> {
        self.pieces = None;
        self.conn.execute_batch("PRAGMA shrink_memory")?;
        Ok(())
    }

    /// Writes the WAL back into the main file and truncates it (for size measurements and
    /// before copying the file).
    pub fn checkpoint(&mut self) -> Result<(), StoreError> {
        let _busy: i64 = self
            .conn
            .query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |row| row.get(0))?;
        Ok(())
    }
}

pub(super) fn now_ms() -> Millis {
    chrono::Utc::now().timestamp_millis()
}

/// SQLite integers are signed; counts beyond `i64::MAX` cannot occur in practice.
pub(super) fn to_sql_int(value: u64) -> i64 {
    i64::try_from(value).unwrap_or(i64::MAX)
}

/// The reverse of `to_sql_int`; a negative stored count reads as zero.
pub(super) fn from_sql_int(value: i64) -> u64 {
    u64::try_from(value).unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    type TestResult = Result<(), Box<dyn std::error::Error>>;

    #[test]
    fn connections_creating_one_database_together_all_open_it() -> TestResult {
        for _round in 0..30 {
            let dir = tempfile::tempdir()?;
            let path = dir.path().join("mnemo.db");
            let start = std::sync::Arc::new(std::sync::Barrier::new(12));
            let openers: Vec<_> = (0..12)
                .map(|_| {
                    let (path, start) = (path.clone(), start.clone());
                    std::thread::spawn(move || {
                        start.wait();
                        Db::open(&path).map(|db| db.schema_version())
                    })
                })
                .collect();
            for opener in openers {
                let version = opener.join().map_err(|_| "opener panicked")???;
                assert_eq!(version, i64::from(schema::SCHEMA_VERSION));
            }
        }
        Ok(())
    }

    #[test]
    fn kv_values_are_stored_and_overwritten() -> TestResult {
        let mut db = Db::open_in_memory()?;
        assert_eq!(db.kv_get("cursor")?, None);
        db.kv_set("cursor", "1")?;
        db.kv_set("cursor", "2")?;
        assert_eq!(db.kv_get("cursor")?.as_deref(), Some("2"));
        Ok(())
    }

    #[test]
    fn a_file_database_uses_wal_and_foreign_keys() -> TestResult {
        let dir = tempfile::tempdir()?;
        let mut db = Db::open(&dir.path().join("a").join("b.db"))?;
        let mode: String = db.conn.query_row("PRAGMA journal_mode", [], |r| r.get(0))?;
        let fk: i64 = db.conn.query_row("PRAGMA foreign_keys", [], |r| r.get(0))?;
        assert_eq!((mode.as_str(), fk), ("wal", 1));
        db.checkpoint()?;
        Ok(())
    }
}
