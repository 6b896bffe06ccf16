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
    /// What `Write` gathered until the next flush makes it one entry.
    pending: Arc<Mutex<Vec<u8>>>,
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
            pending: Arc::default(),
        })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Appends one timestamped entry (lines after the first indented, so every line of the
    /// file starts with a stamp or a space); a failing disk loses it, never the daemon.
    pub fn line(&self, text: &str) {
        let stamp = chrono::Local::now().format("%Y-%m-%dT%H:%M:%S%.3f%:z");
        let text = text.trim_end().replace('\n', "\n    ");
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

/// The jobs' reports are written through `Write`: each flush is one entry.
impl Write for ServeLog {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        if let Ok(mut pending) = self.pending.lock() {
            pending.extend_from_slice(bytes);
        }
        Ok(bytes.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        let text = match self.pending.lock() {
            Ok(mut pending) => String::from_utf8_lossy(&std::mem::take(&mut *pending)).into_owned(),
            Err(_) => return Ok(()),
        };
        if !text.trim().is_empty() {
            self.line(&text);
        }
        Ok(())
    }
}
