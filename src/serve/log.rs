//! The daemon's log, `<data dir>/serve.log`: one timestamped line per thing that happened
//! (start, runs, deliveries, failures, stop). Bounded: past `MAX_BYTES` the file moves to
//! `serve.log.1` (replacing the one before) and a new one starts.

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

const MAX_BYTES: u64 = 8 * 1024 * 1024;

#[derive(Clone)]
pub struct ServeLog {
    path: PathBuf,
    file: Arc<Mutex<Option<File>>>,
}

fn open(path: &Path) -> std::io::Result<File> {
    OpenOptions::new().create(true).append(true).open(path)
}

impl ServeLog {
    pub fn open(data_dir: &Path) -> std::io::Result<ServeLog> {
        let path = data_dir.join("serve.log");
        let file = open(&path)?;
        Ok(ServeLog {
            path,
            file: Arc::new(Mutex::new(Some(file))),
        })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Appends one line (newlines inside become spaces); a failing disk loses the line, never
    /// the daemon.
    pub fn line(&self, text: &str) {
        let stamp = chrono::Local::now().format("%Y-%m-%dT%H:%M:%S%.3f%:z");
        let text = text.replace('\n', " ");
        let Ok(mut guard) = self.file.lock() else {
            return;
        };
        let too_big = guard
            .as_ref()
            .and_then(|f| f.metadata().ok())
            .is_some_and(|m| m.len() > MAX_BYTES);
        if too_big {
            *guard = None;
            let _ = std::fs::rename(&self.path, self.path.with_extension("log.1"));
            *guard = open(&self.path).ok();
        }
        if let Some(file) = guard.as_mut() {
            let _ = writeln!(file, "{stamp} {text}");
        }
    }
}
