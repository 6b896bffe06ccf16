//! The real binary in a pseudo-terminal for the TUI benchmarks: its output feeds a vt100
//! screen, cursor position queries are answered, and /proc tells its CPU time and wake-ups.

// The TUI bench and the start-up order each use a different part of it.
#![allow(dead_code)]

use std::io::{Read, Write};
use std::num::NonZeroU16;
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use portable_pty::{Child, CommandBuilder, PtySize, native_pty_system};

pub type Result<T> = std::result::Result<T, Box<dyn std::error::Error>>;

/// The binary in a pty whose output feeds a vt100 screen; cursor queries are answered.
pub struct Pty {
    screen: Arc<Mutex<vt100::Parser>>,
    writer: Arc<Mutex<Box<dyn Write + Send>>>,
    child: Box<dyn Child + Send + Sync>,
}

impl Pty {
    /// `mnemo --model scripted:SCRIPT` with `extra` arguments, in `dir`.
    pub fn spawn(dir: &Path, script: &str, extra: &[&str]) -> Result<Self> {
        let path = dir.join("script.json");
        std::fs::write(&path, script)?;
        let mut command = CommandBuilder::new(binary());
        command.args(["--model", &format!("scripted:{}", path.display())]);
        command.args(extra);
        command.cwd(dir);
        command.env("MNEMO_CONFIG_DIR", dir.join("config"));
        command.env("MNEMO_DATA_DIR", dir.join("data"));
        Self::start(command)
    }

    /// `command` in a 120x40 pty.
    pub fn start(command: CommandBuilder) -> Result<Self> {
        let pair = native_pty_system().openpty(PtySize {
            rows: 40,
            cols: 120,
            pixel_width: 0,
            pixel_height: 0,
        })?;
        let child = pair.slave.spawn_command(command)?;
        drop(pair.slave);
        let (Some(rows), Some(cols)) = (NonZeroU16::new(40), NonZeroU16::new(120)) else {
            return Err("zero size".into());
        };
        let screen = Arc::new(Mutex::new(vt100::Parser::new(rows, cols, 0)));
        let writer = Arc::new(Mutex::new(pair.master.take_writer()?));
        let mut reader = pair.master.try_clone_reader()?;
        let (thread_screen, thread_writer) = (screen.clone(), writer.clone());
        std::thread::spawn(move || {
            let _master = pair.master;
            let mut buf = [0u8; 65536];
            while let Ok(n) = reader.read(&mut buf) {
                let Ok(mut parser) = thread_screen.lock() else {
                    break;
                };
                if n == 0 {
                    break;
                }
                parser.process(&buf[..n]);
                if buf[..n].windows(4).any(|w| w == b"\x1b[6n")
                    && let Ok(mut writer) = thread_writer.lock()
                {
                    let (row, col) = parser.screen().cursor_position();
                    let _ = write!(writer, "\x1b[{};{}R", row + 1, col + 1);
                }
            }
        });
        Ok(Self {
            screen,
            writer,
            child,
        })
    }

    pub fn send(&self, text: &str) -> Result<()> {
        let mut writer = self.writer.lock().map_err(|_| "writer lock poisoned")?;
        writer.write_all(text.as_bytes())?;
        Ok(writer.flush()?)
    }

    pub fn wait_for(&self, text: &str, limit: Duration) -> Result<Duration> {
        self.wait_sending(text, limit, "")
    }

    /// Waits for `text`, sending `keys` again every few milliseconds meanwhile.
    pub fn wait_sending(&self, text: &str, limit: Duration, keys: &str) -> Result<Duration> {
        let start = Instant::now();
        let mut sent = start;
        while start.elapsed() < limit {
            let shown = self
                .screen
                .lock()
                .map(|p| p.screen().contents().contains(text));
            if shown.unwrap_or(false) {
                return Ok(start.elapsed());
            }
            if !keys.is_empty() && sent.elapsed() > Duration::from_millis(5) {
                self.send(keys)?;
                sent = Instant::now();
            }
            std::thread::sleep(Duration::from_micros(200));
        }
        Err(format!("{text:?} never appeared").into())
    }

    /// Waits for the program to end by itself and says whether it succeeded.
    pub fn wait_exit(&mut self) -> Result<bool> {
        Ok(self.child.wait()?.success())
    }

    pub fn pid(&self) -> Result<u32> {
        self.child
            .process_id()
            .ok_or_else(|| "no process id".into())
    }
}

/// The binary measured: `$MNEMO_BENCH_BIN` when set (an older build, to compare in one
/// sitting), else the one this benchmark was built with.
pub fn binary() -> std::ffi::OsString {
    std::env::var_os("MNEMO_BENCH_BIN").unwrap_or_else(|| env!("CARGO_BIN_EXE_mnemo").into())
}

impl Drop for Pty {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// CPU ticks (user + system) of a process.
pub fn cpu_ticks(pid: u32) -> Result<u64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat"))?;
    let fields: Vec<&str> = stat
        .rsplit(')')
        .next()
        .unwrap_or_default()
        .split(' ')
        .collect();
    let field = |i: usize| {
        fields
            .get(i)
            .and_then(|f| f.parse::<u64>().ok())
            .unwrap_or(0)
    };
    Ok(field(12) + field(13))
}

/// Context switches over all threads: each one is a wake-up.
pub fn wakeups(pid: u32) -> Result<u64> {
    let mut total = 0;
    for task in std::fs::read_dir(format!("/proc/{pid}/task"))? {
        let status = std::fs::read_to_string(task?.path().join("status"))?;
        total += status
            .lines()
            .filter(|l| l.contains("ctxt_switches"))
            .filter_map(|l| l.split_whitespace().nth(1)?.parse::<u64>().ok())
            .sum::<u64>();
    }
    Ok(total)
}
