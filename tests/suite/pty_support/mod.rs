//! The real `mnemo` binary in a pseudo-terminal: a reader thread feeds its output to a vt100
//! screen (answering cursor position queries as a terminal does) and tests type and read.

// Each test binary uses a different part of this module.
#![allow(dead_code)]

use std::io::{Read, Write};
use std::num::NonZeroU16;
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use portable_pty::{Child, CommandBuilder, MasterPty, PtySize, native_pty_system};

pub type TestResult = Result<(), Box<dyn std::error::Error>>;

/// The binary outside a pty (a daemon, a one-shot run beside the terminal), with its config
/// and data directories under `dir` as the terminal's are; output piped.
pub fn command(dir: &Path, args: &[&str]) -> std::process::Command {
    let mut command = std::process::Command::new(env!("CARGO_BIN_EXE_mnemo"));
    command
        .args(args)
        .current_dir(dir)
        .env("MNEMO_CONFIG_DIR", dir.join("config"))
        .env("MNEMO_DATA_DIR", dir.join("data"))
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
    command
}

pub const ROWS: u16 = 30;
pub const COLS: u16 = 100;

/// The binary running in a pty; a reader thread feeds its output to a vt100 screen and
/// answers cursor position queries the way a terminal does.
pub struct Terminal {
    screen: Arc<Mutex<vt100::Parser>>,
    writer: Arc<Mutex<Box<dyn Write + Send>>>,
    master: Arc<Mutex<Box<dyn MasterPty + Send>>>,
    child: Box<dyn Child + Send + Sync>,
}

impl Terminal {
    pub fn spawn(args: &[&str], dir: &Path) -> Result<Self, Box<dyn std::error::Error>> {
        Self::spawn_with(args, dir, &[])
    }

    /// Like [`Terminal::spawn`], with `env` added to the environment.
    pub fn spawn_with(
        args: &[&str],
        dir: &Path,
        env: &[(&str, &str)],
    ) -> Result<Self, Box<dyn std::error::Error>> {
        Self::spawn_sized(args, dir, env, (ROWS, COLS))
    }

    /// Like [`Terminal::spawn_with`], in a terminal of `(rows, cols)`.
    pub fn spawn_sized(
        args: &[&str],
        dir: &Path,
        env: &[(&str, &str)],
        (rows, cols): (u16, u16),
    ) -> Result<Self, Box<dyn std::error::Error>> {
        let pair = native_pty_system().openpty(PtySize {
            rows,
            cols,
            pixel_width: 0,
            pixel_height: 0,
        })?;
        let mut command = CommandBuilder::new(env!("CARGO_BIN_EXE_mnemo"));
        command.args(args);
        command.cwd(dir);
        command.env("TERM", "xterm-256color");
        command.env("MNEMO_CONFIG_DIR", dir.join("config"));
        command.env("MNEMO_DATA_DIR", dir.join("data"));
        for (name, value) in env {
            command.env(name, value);
        }
        let child = pair.slave.spawn_command(command)?;
        drop(pair.slave);
        let (Some(rows), Some(cols)) = (NonZeroU16::new(rows), NonZeroU16::new(cols)) else {
            return Err("the terminal size must not be zero".into());
        };
        let screen = Arc::new(Mutex::new(vt100::Parser::new(rows, cols, 5000)));
        let master = Arc::new(Mutex::new(pair.master));
        let (writer, mut reader) = {
            let master = master.lock().map_err(|_| "master lock poisoned")?;
            (master.take_writer()?, master.try_clone_reader()?)
        };
        let writer = Arc::new(Mutex::new(writer));
        let (thread_screen, thread_writer) = (screen.clone(), writer.clone());
        std::thread::spawn(move || {
            let mut buf = [0u8; 8192];
            let mut carry: Vec<u8> = Vec::new();
            while let Ok(n) = reader.read(&mut buf) {
                if n == 0 {
                    break;
                }
                let Ok(mut parser) = thread_screen.lock() else {
                    break;
                };
                parser.process(&buf[..n]);
                carry.extend_from_slice(&buf[..n]);
                let queries = carry.windows(4).filter(|w| *w == b"\x1b[6n").count();
                carry.drain(..carry.len().saturating_sub(3));
                for _ in 0..queries {
                    let (row, col) = parser.screen().cursor_position();
                    if let Ok(mut writer) = thread_writer.lock() {
                        let _ = write!(writer, "\x1b[{};{}R", row + 1, col + 1);
                    }
                }
            }
        });
        Ok(Self {
            screen,
            writer,
            master,
            child,
        })
    }

    /// Resizes the terminal as a window manager does: the screen first, then the program is
    /// told (SIGWINCH).
    pub fn resize(&self, rows: u16, cols: u16) -> TestResult {
        let (Some(r), Some(c)) = (NonZeroU16::new(rows), NonZeroU16::new(cols)) else {
            return Err("the terminal size must not be zero".into());
        };
        self.screen
            .lock()
            .map_err(|_| "screen lock poisoned")?
            .screen_mut()
            .set_size(r, c);
        let master = self.master.lock().map_err(|_| "master lock poisoned")?;
        master.resize(PtySize {
            rows,
            cols,
            pixel_width: 0,
            pixel_height: 0,
        })?;
        Ok(())
    }

    /// Every row the terminal holds, scrollback first, trailing spaces trimmed.
    pub fn all_rows(&self) -> Vec<String> {
        let Ok(mut parser) = self.screen.lock() else {
            return Vec::new();
        };
        let screen = parser.screen_mut();
        let held = screen.scrollback_len();
        let mut rows = Vec::new();
        // Scrollback rows keep the width they were written at.
        for offset in (1..=held).rev() {
            screen.set_scrollback(offset);
            rows.extend(screen.rows(0, u16::MAX).next());
        }
        screen.set_scrollback(0);
        rows.extend(screen.rows(0, u16::MAX));
        rows.into_iter()
            .map(|row| row.trim_end().to_string())
            .collect()
    }

    pub fn send(&self, bytes: &str) -> TestResult {
        let mut writer = self.writer.lock().map_err(|_| "writer lock poisoned")?;
        writer.write_all(bytes.as_bytes())?;
        writer.flush()?;
        Ok(())
    }

    pub fn contents(&self) -> String {
        self.screen
            .lock()
            .map(|p| p.screen().contents())
            .unwrap_or_default()
    }

    /// Waits until the screen contains `text`.
    pub fn wait_for(&self, text: &str) -> TestResult {
        self.wait_sending(text, "")
    }

    /// Waits until the screen contains `text`, sending `keys` again meanwhile.
    pub fn wait_sending(&self, text: &str, keys: &str) -> TestResult {
        let deadline = Instant::now() + Duration::from_secs(15);
        while Instant::now() < deadline {
            if self.contents().contains(text) {
                return Ok(());
            }
            if !keys.is_empty() {
                self.send(keys)?;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        Err(format!(
            "the screen never showed {text:?}; it shows:\n{}",
            self.contents()
        )
        .into())
    }

    /// Waits until `text` has left the screen.
    pub fn wait_gone(&self, text: &str) -> TestResult {
        let deadline = Instant::now() + Duration::from_secs(15);
        while Instant::now() < deadline {
            if !self.contents().contains(text) {
                return Ok(());
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        Err(format!("{text:?} stayed on the screen:\n{}", self.contents()).into())
    }

    /// `/quit`, and a clean exit.
    pub fn quit(&mut self) -> TestResult {
        self.send("/quit\r")?;
        let status = self.wait_exit()?;
        assert!(status.success(), "exit status {status:?}");
        Ok(())
    }

    pub fn wait_exit(&mut self) -> Result<portable_pty::ExitStatus, Box<dyn std::error::Error>> {
        let deadline = Instant::now() + Duration::from_secs(10);
        while Instant::now() < deadline {
            if let Some(status) = self.child.try_wait()? {
                return Ok(status);
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        self.child.kill()?;
        Err("mnemo did not exit".into())
    }
}
