//! Figures for the interactive front end (`cargo bench --bench tui`): launch to first frame and
//! idle cost of the real binary in a pseudo-terminal, CPU while streaming fast, and in-process
//! frame times (streaming frame, keystroke to frame, pager over 10,000 cells at 200x60).
//! It prints the figures with their targets; it does not fail on them.

use std::io::{Read, Write};
use std::num::NonZeroU16;
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use mnemo::protocol::{Event, ToolStatus, TurnStatus, UserMessageKind};
use mnemo::tui::live::live_view;
use mnemo::tui::pager::Pager;
use mnemo::tui::state::AppState;
use mnemo::tui::{highlight, pager_view, wrap};
use portable_pty::{Child, CommandBuilder, PtySize, native_pty_system};
use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use serde_json::json;

type Result<T> = std::result::Result<T, Box<dyn std::error::Error>>;

fn main() -> Result<()> {
    highlight::load_now();
    let dir = tempfile::tempdir()?;
    launch_and_idle(dir.path())?;
    streaming_cpu(dir.path())?;
    streaming_frame();
    keystroke_to_frame();
    pager_frames();
    Ok(())
}

/// The binary in a pty whose output feeds a vt100 screen; cursor queries are answered.
struct Pty {
    screen: Arc<Mutex<vt100::Parser>>,
    writer: Arc<Mutex<Box<dyn Write + Send>>>,
    child: Box<dyn Child + Send + Sync>,
}

impl Pty {
    fn spawn(dir: &Path, script: &str) -> Result<Self> {
        let path = dir.join("script.json");
        std::fs::write(&path, script)?;
        let pair = native_pty_system().openpty(PtySize {
            rows: 40,
            cols: 120,
            pixel_width: 0,
            pixel_height: 0,
        })?;
        let mut command = CommandBuilder::new(env!("CARGO_BIN_EXE_mnemo"));
        command.args(["--model", &format!("scripted:{}", path.display())]);
        command.cwd(dir);
        command.env("MNEMO_CONFIG_DIR", dir.join("config"));
        command.env("MNEMO_DATA_DIR", dir.join("data"));
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

    fn send(&self, text: &str) -> Result<()> {
        let mut writer = self.writer.lock().map_err(|_| "writer lock poisoned")?;
        writer.write_all(text.as_bytes())?;
        Ok(writer.flush()?)
    }

    fn wait_for(&self, text: &str, limit: Duration) -> Result<Duration> {
        let start = Instant::now();
        while start.elapsed() < limit {
            let shown = self
                .screen
                .lock()
                .map(|p| p.screen().contents().contains(text));
            if shown.unwrap_or(false) {
                return Ok(start.elapsed());
            }
            std::thread::sleep(Duration::from_micros(200));
        }
        Err(format!("{text:?} never appeared").into())
    }

    fn pid(&self) -> Result<u32> {
        self.child
            .process_id()
            .ok_or_else(|| "no process id".into())
    }
}

impl Drop for Pty {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// CPU ticks (user + system) of a process.
fn cpu_ticks(pid: u32) -> Result<u64> {
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
fn wakeups(pid: u32) -> Result<u64> {
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

fn launch_and_idle(dir: &Path) -> Result<()> {
    let script = r#"{"turns": [{"text": "hi"}]}"#;
    let mut launches = Vec::new();
    for _ in 0..10 {
        let start = Instant::now();
        let pty = Pty::spawn(dir, script)?;
        pty.wait_for("● ", Duration::from_secs(10))?;
        launches.push(start.elapsed());
    }
    launches.sort();
    println!(
        "launch to first frame: median {:.1} ms, max {:.1} ms (target < 50 ms)",
        ms(launches[launches.len() / 2]),
        ms(launches[launches.len() - 1])
    );
    let pty = Pty::spawn(dir, script)?;
    pty.wait_for("● idle", Duration::from_secs(10))?;
    std::thread::sleep(Duration::from_millis(500));
    let pid = pty.pid()?;
    let status = std::fs::read_to_string(format!("/proc/{pid}/status"))?;
    let rss = status
        .lines()
        .find(|l| l.starts_with("VmRSS"))
        .unwrap_or("VmRSS: ?");
    println!(
        "idle RSS: {} (target < 25 MB)",
        rss.trim_start_matches("VmRSS:").trim()
    );
    let (before, ticks) = (wakeups(pid)?, cpu_ticks(pid)?);
    std::thread::sleep(Duration::from_secs(3));
    println!(
        "idle for 3 s: {} wake-ups, {} CPU ticks (target: none)",
        wakeups(pid)? - before,
        cpu_ticks(pid)? - ticks
    );
    Ok(())
}

fn streaming_cpu(dir: &Path) -> Result<()> {
    // 10 tokens per chunk, a chunk every millisecond or two: about 5,000 tokens per second,
    // with a code block and paragraphs, as a model writes.
    let chunks: Vec<String> = (0..1000)
        .map(|n| {
            let end = match n % 40 {
                11 | 23 => "\n\n",
                29 => "\n```rust\n",
                39 => "\n```\n\n",
                _ if n % 40 > 29 => "\n",
                _ => " ",
            };
            format!("word{n} alpha beta gamma delta epsilon zeta eta theta iota{end}")
        })
        .collect();
    let script = json!({"turns": [{"chunks": chunks, "delay_ms": 1}]}).to_string();
    let pty = Pty::spawn(dir, &script)?;
    pty.wait_for("● idle", Duration::from_secs(10))?;
    let pid = pty.pid()?;
    let ticks = cpu_ticks(pid)?;
    let start = Instant::now();
    pty.send("stream please\r")?;
    pty.wait_for("● responding", Duration::from_secs(10))?;
    pty.wait_for("● idle", Duration::from_secs(60))?;
    let wall = start.elapsed().as_secs_f64();
    let used = (cpu_ticks(pid)? - ticks) as f64 / 100.0;
    println!(
        "streaming 10,000 tokens in {wall:.2} s ({:.0} tokens/s): {:.0}% of one core (target < 100%)",
        10_000.0 / wall,
        used / wall * 100.0
    );
    Ok(())
}

fn ms(duration: Duration) -> f64 {
    duration.as_secs_f64() * 1000.0
}

/// A state with a transcript, mid-turn, streaming.
fn streaming_state(now: Instant) -> AppState {
    let mut state = AppState::new();
    state.handle_event(
        Event::SessionStarted {
            session_id: "s".into(),
            model: "m".into(),
            workspace: "/w".into(),
        },
        now,
    );
    state.handle_event(Event::TurnStarted { turn: 1 }, now);
    state.handle_event(
        Event::UserMessage {
            text: "go".into(),
            kind: UserMessageKind::Prompt,
        },
        now,
    );
    state
}

/// One frame as the app draws it: scrollback lines wrapped, live area laid out and rendered,
/// diffed against the previous frame.
fn frame(state: &mut AppState, previous: &mut Buffer, now: Instant) -> usize {
    let lines = state.take_scrollback();
    let wrapped = wrap::wrap_lines(&lines, 120);
    let view = live_view(state, 120, 39, now);
    let area = Rect::new(0, 0, 120, view.height());
    let mut buf = Buffer::empty(area);
    view.render(state, area, &mut buf, now);
    let changed = if previous.area == area {
        previous.diff(&buf).len()
    } else {
        area.area() as usize
    };
    *previous = buf;
    wrapped.len() + changed
}

fn delta(n: usize) -> Event {
    let text = match n % 9 {
        8 => "done.\n".to_string(),
        _ => format!("token{n} "),
    };
    Event::TextDelta { text }
}

fn streaming_frame() {
    let now = Instant::now();
    let mut state = streaming_state(now);
    let mut previous = Buffer::empty(Rect::default());
    let frames = 5000;
    let start = Instant::now();
    for n in 0..frames {
        state.handle_event(delta(n), now);
        std::hint::black_box(frame(&mut state, &mut previous, now));
    }
    let each = start.elapsed() / frames as u32;
    println!(
        "streaming frame (120x40, 5,000 frames): {:.3} ms each",
        ms(each)
    );
}

fn keystroke_to_frame() {
    let now = Instant::now();
    let mut state = streaming_state(now);
    let mut previous = Buffer::empty(Rect::default());
    let mut latencies = Vec::new();
    for n in 0..2000 {
        for k in 0..5 {
            state.handle_event(delta(n * 5 + k), now);
        }
        let start = Instant::now();
        let key = KeyEvent::new(KeyCode::Char('x'), KeyModifiers::NONE);
        state.handle_key(key, now);
        std::hint::black_box(frame(&mut state, &mut previous, now));
        latencies.push(start.elapsed());
    }
    latencies.sort();
    println!(
        "keystroke to frame while streaming: median {:.3} ms, p99 {:.3} ms (target < 20 ms)",
        ms(latencies[latencies.len() / 2]),
        ms(latencies[latencies.len() * 99 / 100])
    );
}

fn pager_frames() {
    let now = Instant::now();
    let mut state = streaming_state(now);
    for n in 0..3333 {
        let call_id = format!("c{n}");
        for event in [
            Event::UserMessage {
                text: format!("question {n}"),
                kind: UserMessageKind::Queued,
            },
            Event::AssistantMessage {
                text: format!("An **answer** with `code` and a list:\n\n- one {n}\n- two"),
            },
            Event::ToolCallStarted {
                call_id: call_id.clone(),
                name: "shell".into(),
                arguments: json!({"command": format!("echo {n}")}),
            },
            Event::ToolCallFinished {
                call_id,
                name: "shell".into(),
                status: ToolStatus::Ok,
                output: format!("{n}\nexit code: 0"),
                duration_ms: 3,
            },
        ] {
            state.handle_event(event, now);
        }
    }
    state.handle_event(
        Event::TurnFinished {
            turn: 1,
            status: TurnStatus::Completed,
            message: None,
        },
        now,
    );
    let cells = state.transcript.len();
    let mut pager = Pager::new();
    let area = Rect::new(0, 0, 200, 60);
    let start = Instant::now();
    let mut buf = Buffer::empty(area);
    pager_view::render(&mut pager, &state.transcript, area, &mut buf);
    let first = start.elapsed();
    let frames = 2000;
    let start = Instant::now();
    for n in 0..frames {
        let code = if n % 2 == 0 {
            KeyCode::PageUp
        } else {
            KeyCode::Up
        };
        pager.handle_key(KeyEvent::new(code, KeyModifiers::NONE), &state.transcript);
        let mut buf = Buffer::empty(area);
        pager_view::render(&mut pager, &state.transcript, area, &mut buf);
        std::hint::black_box(&buf);
    }
    let each = start.elapsed() / frames;
    println!(
        "pager over {cells} cells at 200x60: first frame (wraps all) {:.1} ms, then {:.3} ms per frame (target < 2 ms)",
        ms(first),
        ms(each)
    );
}
