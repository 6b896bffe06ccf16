//! Whether `mnemo serve` runs for a data directory. The daemon holds an exclusive `flock` on
//! `<data dir>/serve.lock` (with its pid written in it) for as long as it runs; the kernel
//! drops the lock however the process ends, so a crash never leaves a stale "running".
//! Anyone else asks by trying a shared lock without waiting.

use std::fs::{File, OpenOptions};
use std::io::{Read, Seek, Write};
use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};

pub const LOCK_FILE: &str = "serve.lock";

#[derive(Debug, thiserror::Error)]
pub enum ServeLockError {
    #[error(
        "mnemo serve already runs for this data directory{}",
        .pid.map(|p| format!(" (process {p})")).unwrap_or_default()
    )]
    Running { pid: Option<u32> },
    #[error("cannot use {}: {source}", .path.display())]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
}

/// Whether a `mnemo serve` holds the lock of `data_dir`.
pub fn serve_running(data_dir: &Path) -> bool {
    let Ok(file) = File::open(data_dir.join(LOCK_FILE)) else {
        return false;
    };
    // SAFETY: flock on a descriptor this function owns; closing it drops a granted lock.
    unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_SH | libc::LOCK_NB) != 0 }
}

/// The daemon's lock; released when dropped (or when the process ends).
#[derive(Debug)]
pub struct ServeLock {
    _file: File,
}

impl ServeLock {
    /// Takes the lock of `data_dir`, or says which process holds it.
    pub fn acquire(data_dir: &Path) -> Result<ServeLock, ServeLockError> {
        let path = data_dir.join(LOCK_FILE);
        let io = |source| ServeLockError::Io {
            path: path.clone(),
            source,
        };
        std::fs::create_dir_all(data_dir).map_err(io)?;
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
            return Err(ServeLockError::Running {
                pid: holder.trim().parse().ok(),
            });
        }
        file.set_len(0).map_err(io)?;
        file.rewind().map_err(io)?;
        write!(file, "{}", std::process::id()).map_err(io)?;
        Ok(ServeLock { _file: file })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn serve_runs_while_its_lock_is_held() -> Result<(), Box<dyn std::error::Error>> {
        let dir = tempfile::tempdir()?;
        assert!(!serve_running(dir.path()));
        let lock = ServeLock::acquire(dir.path())?;
        assert!(serve_running(dir.path()));
        let again = ServeLock::acquire(dir.path());
        assert!(
            matches!(again, Err(ServeLockError::Running { pid: Some(p) }) if p == std::process::id())
        );
        drop(lock);
        assert!(!serve_running(dir.path()));
        Ok(())
    }
}
