//! One process per session. Two `mnemo --continue` at once would both append to one history
//! and collide on its sequence numbers; the second must instead be told at once, before it sends
//! anything. A lock file per session (`<database>.locks/<id>`) held with `flock` does it: the
//! kernel releases it when the process ends, however it ends, so a crash never leaves a session
//! locked. The holder's pid is written into the file for the message.

use std::fs::{File, OpenOptions};
use std::io::{Read, Seek, Write};
use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};

use super::error::StoreError;

/// A held session lock; released when dropped.
#[derive(Debug)]
pub struct SessionLock {
    _file: File,
}

impl SessionLock {
    /// Takes the lock of session `id` in `dir`, or says which process holds it.
    pub fn acquire(dir: &Path, id: &str) -> Result<SessionLock, StoreError> {
        let io = |source| StoreError::Io {
            path: dir.to_path_buf(),
            source,
        };
        std::fs::create_dir_all(dir).map_err(io)?;
        let path: PathBuf = dir.join(id);
        let mut file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(&path)
            .map_err(io)?;
        // SAFETY: flock on a descriptor this function owns.
        if unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) } != 0 {
            let mut holder = String::new();
            let _ = file.read_to_string(&mut holder);
            return Err(StoreError::SessionBusy {
                id: id.chars().take(8).collect(),
                pid: holder.trim().parse().ok(),
            });
        }
        file.set_len(0).map_err(io)?;
        file.rewind().map_err(io)?;
        write!(file, "{}", std::process::id()).map_err(io)?;
        Ok(SessionLock { _file: file })
    }
}

/// Where a database's session locks live.
pub fn lock_dir(database: &Path) -> PathBuf {
    let mut name = database.as_os_str().to_owned();
    name.push(".locks");
    PathBuf::from(name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_second_holder_is_refused_until_the_first_lets_go() -> Result<(), StoreError> {
        let dir = tempfile::tempdir().map_err(|source| StoreError::Io {
            path: PathBuf::new(),
            source,
        })?;
        let first = SessionLock::acquire(dir.path(), "1959ed58-aaaa")?;
        let busy = SessionLock::acquire(dir.path(), "1959ed58-aaaa");
        let Err(StoreError::SessionBusy { id, pid }) = busy else {
            panic!("the second lock was granted: {busy:?}");
        };
        assert_eq!((id.as_str(), pid), ("1959ed58", Some(std::process::id())));
        SessionLock::acquire(dir.path(), "other-session")?;
        drop(first);
        SessionLock::acquire(dir.path(), "1959ed58-aaaa")?;
        Ok(())
    }
}
