//! One `mnemo serve` per data directory: it holds an exclusive `flock` on
//! `<data dir>/serve.lock` with its pid inside. The kernel lets go when the process ends,
//! however it ends, so a killed daemon never blocks the next one; anyone can ask whether one
//! runs by trying a shared lock.

use std::fs::{File, OpenOptions};
use std::io::{Read, Seek, Write};
use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};

/// The lock file of a data directory.
pub fn lock_path(data_dir: &Path) -> PathBuf {
    data_dir.join("serve.lock")
}

/// A held daemon lock; released when dropped.
#[derive(Debug)]
pub struct ServeLock {
    _file: File,
}

#[derive(Debug, thiserror::Error)]
pub enum LockError {
    #[error("mnemo serve already runs on this data directory (pid {pid})")]
    Running { pid: u32 },
    #[error("cannot use {path}: {source}")]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
}

fn open(path: &Path) -> std::io::Result<File> {
    OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .open(path)
}

fn try_flock(file: &File, operation: libc::c_int) -> bool {
    // SAFETY: flock on a descriptor the caller owns.
    unsafe { libc::flock(file.as_raw_fd(), operation | libc::LOCK_NB) == 0 }
}

fn holder_pid(file: &mut File) -> u32 {
    let mut text = String::new();
    let _ = file.rewind();
    let _ = file.read_to_string(&mut text);
    text.trim().parse().unwrap_or(0)
}

impl ServeLock {
    /// Makes this process the daemon of `data_dir`, or says which process is.
    pub fn acquire(data_dir: &Path) -> Result<ServeLock, LockError> {
        let path = lock_path(data_dir);
        let io = |source| LockError::Io {
            path: path.clone(),
            source,
        };
        std::fs::create_dir_all(data_dir).map_err(io)?;
        let mut file = open(&path).map_err(io)?;
        if !try_flock(&file, libc::LOCK_EX) {
            return Err(LockError::Running {
                pid: holder_pid(&mut file),
            });
        }
        file.set_len(0).map_err(io)?;
        file.rewind().map_err(io)?;
        write!(file, "{}", std::process::id()).map_err(io)?;
        file.flush().map_err(io)?;
        Ok(ServeLock { _file: file })
    }
}

/// Whether a daemon runs on `data_dir`.
pub fn serve_running(data_dir: &Path) -> bool {
    running(data_dir).is_some()
}

/// The pid of the daemon running on `data_dir`, if one runs.
pub fn running(data_dir: &Path) -> Option<u32> {
    let mut file = File::open(lock_path(data_dir)).ok()?;
    match try_flock(&file, libc::LOCK_SH) {
        true => None,
        false => Some(holder_pid(&mut file)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_daemon_per_data_directory_and_others_can_tell() -> Result<(), Box<dyn std::error::Error>>
    {
        let dir = tempfile::tempdir()?;
        assert_eq!(running(dir.path()), None);
        let held = ServeLock::acquire(dir.path())?;
        assert_eq!(running(dir.path()), Some(std::process::id()));
        let again = ServeLock::acquire(dir.path());
        assert!(
            matches!(again, Err(LockError::Running { pid }) if pid == std::process::id()),
            "{again:?}"
        );
        drop(held);
        assert_eq!(running(dir.path()), None);
        ServeLock::acquire(dir.path())?;
        Ok(())
    }
}
