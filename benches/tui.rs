//! Figures for the interactive front end (`cargo bench --bench tui`): launch to first frame and
//! idle cost of the real binary in a pseudo-terminal, resume of a 10,000-message session to a
//! ready prompt, CPU while streaming fast and while streaming a markdown reply with tables and
//! code at 100 tokens/s, and in-process frame times (streaming frame, the markdown reply drawn
//! a frame per token, keystroke to frame after 100 turns, pager over 10,000 cells at 200x60),
//! and CPU for a 4,000-token markdown reply streamed as fast as it comes. It prints the
//! figures with their targets; it does not fail on them. Names after `--` (launch, mcp,
//! resume, streaming, markdown, unpaced, frames) pick figures; `$MNEMO_BENCH_BIN` runs an
//! older binary in the pseudo-terminal instead of this build's.

#[path = "../tests/suite/mcp_support/mod.rs"]
mod mcp_support;
mod tui_markdown;
mod tui_pty;

use std::path::Path;
use std::time::{Duration, Instant};

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use mnemo::llm::{ContentBlock, Message, Role};
use mnemo::memory::{Db, NewArchiveEntry, NewSession};
use mnemo::protocol::{Event, ToolStatus, TurnStatus, UserMessageKind};
use mnemo::tui::live::live_view;
use mnemo::tui::pager::Pager;
use mnemo::tui::state::AppState;
use mnemo::tui::{highlight, pager_view, wrap};
use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use serde_json::json;
use tui_pty::{Pty, Result, cpu_ticks, wakeups};

fn main() -> Result<()> {
    highlight::load_now();
    let dir = tempfile::tempdir()?;
    // `cargo bench --bench tui -- resume markdown` measures only the figures named so.
    let named: Vec<String> = std::env::args()
        .skip(1)
        .filter(|arg| !arg.starts_with('-'))
        .collect();
    let wanted = |figure: &str| named.is_empty() || named.iter().any(|n| n == figure);
    if wanted("launch") {
        launch_and_idle(dir.path())?;
        ready_with_skills(0)?;
        ready_with_skills(500)?;
    }
    if wanted("mcp") {
        ready_with_mcp_servers()?;
    }
    if wanted("resume") {
        resume_large_session()?;
    }
    if wanted("streaming") {
        streaming_cpu(dir.path())?;
    }
    if wanted("markdown") {
        tui_markdown::streaming_cpu(dir.path())?;
    }
    if wanted("unpaced") {
        tui_markdown::unpaced_cpu(dir.path())?;
    }
    if wanted("frames") {
        streaming_frame();
        markdown_frames();
        keystroke_to_frame();
        pager_frames();
    }
    Ok(())
}

/// Launch to a ready prompt ("● idle") with `count` user skills for the catalogue.
fn ready_with_skills(count: usize) -> Result<()> {
    let dir = tempfile::tempdir()?;
    for n in 0..count {
        let name = format!("skill-number-{n}");
        let folder = dir.path().join("config/skills").join(&name);
        std::fs::create_dir_all(&folder)?;
        let text = format!(
            "---\nname: {name}\ndescription: Does task {n} the way that worked: build, test, \
             deploy and check the logs\n---\n\n# Steps\n\n1. First.\n2. Second.\n"
        );
        std::fs::write(folder.join("SKILL.md"), text)?;
    }
    let what = format!("launch to a ready prompt with {count} skills");
    time_launches(dir.path(), "● idle", &what)
}

/// Launch to a ready prompt with three MCP servers configured (server-everything twice and
/// server-filesystem, from npm): they start in the background, so the prompt does not wait.
/// Then the idle cost once they run.
fn ready_with_mcp_servers() -> Result<()> {
    let dir = tempfile::tempdir()?;
    let everything = mcp_support::script("server-everything")?;
    let filesystem = mcp_support::script("server-filesystem")?;
    std::fs::create_dir_all(dir.path().join("config"))?;
    let config = format!(
        "[mcp_servers.one]\ncommand = \"node\"\nargs = [{e:?}, \"stdio\"]\n\n\
         [mcp_servers.two]\ncommand = \"node\"\nargs = [{e:?}, \"stdio\"]\n\n\
         [mcp_servers.files]\ncommand = \"node\"\nargs = [{f:?}, {d:?}]\n",
        e = everything.display().to_string(),
        f = filesystem.display().to_string(),
        d = dir.path().display().to_string(),
    );
    std::fs::write(dir.path().join("config/config.toml"), config)?;
    time_launches(
        dir.path(),
        "● idle",
        "launch to a ready prompt with 3 MCP servers",
    )?;
    let pty = Pty::spawn(dir.path(), r#"{"turns": [{"text": "hi"}]}"#, &[])?;
    pty.wait_for("tools of MCP server files", Duration::from_secs(30))?;
    std::thread::sleep(Duration::from_millis(1000));
    let pid = pty.pid()?;
    let (before, ticks) = (wakeups(pid)?, cpu_ticks(pid)?);
    std::thread::sleep(Duration::from_secs(3));
    println!(
        "idle for 3 s with 3 MCP servers running: {} wake-ups, {} CPU ticks (target: none)",
        wakeups(pid)? - before,
        cpu_ticks(pid)? - ticks
    );
    Ok(())
}

/// Ten launches in `dir` until the screen shows `marker`: prints median and max.
fn time_launches(dir: &Path, marker: &str, what: &str) -> Result<()> {
    let script = r#"{"turns": [{"text": "hi"}]}"#;
    let mut launches = Vec::new();
    for _ in 0..10 {
        let start = Instant::now();
        let pty = Pty::spawn(dir, script, &[])?;
        pty.wait_for(marker, Duration::from_secs(10))?;
        launches.push(start.elapsed());
    }
    launches.sort();
    println!(
        "{what}: median {:.1} ms, max {:.1} ms (target < 50 ms)",
        ms(launches[launches.len() / 2]),
        ms(launches[launches.len() - 1])
    );
    Ok(())
}

fn launch_and_idle(dir: &Path) -> Result<()> {
    time_launches(dir, "● ", "launch to first frame")?;
    let script = r#"{"turns": [{"text": "hi"}]}"#;
    let pty = Pty::spawn(dir, script, &[])?;
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

/// Messages of the resumed session, and how many of them are still active (the rest is
/// archived, in entries of 200 as compaction writes them).
const RESUME_MESSAGES: usize = 10_000;
const RESUME_ACTIVE: usize = 200;
const ARCHIVE_ENTRY: usize = 200;

/// `mnemo --resume ID` of a 10,000-message session until its prompt is ready: the store
/// opened, the whole session read for the pager, the recent turns drawn, the agent started.
fn resume_large_session() -> Result<()> {
    let dir = tempfile::tempdir()?;
    let id = stored_session(dir.path())?;
    let script = r#"{"turns": [{"text": "hi"}]}"#;
    let (mut ready, mut whole) = (Vec::new(), Vec::new());
    for _ in 0..10 {
        let start = Instant::now();
        let pty = Pty::spawn(dir.path(), script, &["--resume", &id])?;
        pty.wait_for("● idle", Duration::from_secs(10))?;
        ready.push(start.elapsed());
        let last_turn = RESUME_MESSAGES / 4 - 1;
        pty.wait_for(
            &format!("step {last_turn}: look at"),
            Duration::from_secs(1),
        )?;
        // The pager (Ctrl+T) at its top (g) shows the first message once the whole session
        // has been read.
        pty.send("\x14")?;
        pty.wait_sending("step 0: look at", Duration::from_secs(10), "g")?;
        whole.push(start.elapsed());
    }
    ready.sort();
    whole.sort();
    println!(
        "resume of a {RESUME_MESSAGES}-message session to a ready prompt: median {:.1} ms, max {:.1} ms (target < 150 ms); whole session in the pager after {:.1} ms",
        ms(ready[ready.len() / 2]),
        ms(ready[ready.len() - 1]),
        ms(whole[whole.len() / 2])
    );
    Ok(())
}

/// Writes the session straight into the database the binary will open; returns its id.
fn stored_session(dir: &Path) -> Result<String> {
    let mut db = Db::open(&dir.join("data").join("mnemo.db"))?;
    let id = "5e5510b0-0000-4000-8000-000000010000".to_string();
    db.create_session(NewSession {
        id: id.clone(),
        parent_id: None,
        cwd: dir.canonicalize()?.display().to_string(),
        model: "scripted".into(),
        title: "A long session".into(),
    })?;
    let messages: Vec<Message> = (0..RESUME_MESSAGES).map(bench_message).collect();
    let rows: Vec<(i64, &Message, u32)> = messages
        .iter()
        .enumerate()
        .map(|(seq, message)| (seq as i64, message, 60))
        .collect();
    db.append_messages(&id, &rows)?;
    let archived = RESUME_MESSAGES - RESUME_ACTIVE;
    let entries: Vec<NewArchiveEntry> = (0..archived)
        .step_by(ARCHIVE_ENTRY)
        .map(|first| {
            let last = (first + ARCHIVE_ENTRY).min(archived) - 1;
            NewArchiveEntry {
                session_id: id.clone(),
                topic: format!("modules {first} to {last}"),
                summary: format!("Fixed the warnings of modules {first} to {last}."),
                messages: messages[first..=last].to_vec(),
                token_count: (ARCHIVE_ENTRY * 60) as u64,
                importance: 0.5,
                first_seq: first as i64,
                last_seq: last as i64,
                started_at: 1,
                ended_at: 2,
            }
        })
        .collect();
    db.archive_many(&entries)?;
    db.checkpoint()?;
    Ok(id)
}

/// Message `seq` of a session of four-message turns: a request, an answer with a tool call,
/// the tool's result (30 lines), and a closing answer in markdown.
fn bench_message(seq: usize) -> Message {
    let turn = seq / 4;
    let call = format!("call{turn}");
    match seq % 4 {
        0 => Message::user_text(format!(
            "step {turn}: look at src/module_{turn}.rs and fix the warning"
        )),
        1 => Message::assistant(vec![
            ContentBlock::Text {
                text: format!("Reading **module {turn}** first."),
            },
            ContentBlock::ToolUse {
                id: call,
                name: "read_file".into(),
                input: json!({"path": format!("src/module_{turn}.rs")}),
            },
        ]),
        2 => Message {
            role: Role::User,
            content: vec![ContentBlock::ToolResult {
                tool_use_id: call,
                content: (0..30)
                    .map(|n| format!("{n:>4}  let value_{n} = compute({turn}, {n});\n"))
                    .collect(),
                is_error: false,
            }],
        },
        _ => Message::assistant(vec![ContentBlock::Text {
            text: format!(
                "Fixed: the unused import in `module_{turn}` is gone.\n\n- checked\n- built"
            ),
        }]),
    }
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
    let pty = Pty::spawn(dir, &script, &[])?;
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
    state.set_width(120);
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
            images: Vec::new(),
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

/// The markdown reply of the pty benchmark drawn in-process, one frame per token (more
/// frames than the app draws: it merges tokens arriving within a frame interval).
fn markdown_frames() {
    let now = Instant::now();
    let mut state = streaming_state(now);
    let mut previous = Buffer::empty(Rect::default());
    let tokens = tui_markdown::tokens(tui_markdown::TOKENS);
    let start = Instant::now();
    for token in tokens {
        state.handle_event(Event::TextDelta { text: token }, now);
        std::hint::black_box(frame(&mut state, &mut previous, now));
    }
    state.handle_event(
        Event::TurnFinished {
            turn: 1,
            status: TurnStatus::Completed,
            message: None,
            usage: Default::default(),
            cost_usd: 0.0,
        },
        now,
    );
    std::hint::black_box(frame(&mut state, &mut previous, now));
    println!(
        "drawing the {}-token markdown reply a frame per token (120x40): {:.1} ms in all",
        tui_markdown::TOKENS,
        ms(start.elapsed())
    );
}

/// A session 100 turns long (a question, a tool call and a reply each), the 101st streaming.
fn state_after_100_turns(now: Instant) -> AppState {
    let mut state = AppState::new();
    state.set_width(120);
    for turn in 1..=100 {
        let call_id = format!("c{turn}");
        for event in [
            Event::TurnStarted { turn },
            Event::UserMessage {
                text: format!("question {turn}"),
                kind: UserMessageKind::Prompt,
                images: Vec::new(),
            },
            Event::ToolCallStarted {
                call_id: call_id.clone(),
                name: "shell".into(),
                arguments: json!({"command": format!("echo {turn}")}),
            },
            Event::ToolCallFinished {
                call_id,
                name: "shell".into(),
                status: ToolStatus::Ok,
                output: format!("{turn}\nexit code: 0"),
                duration_ms: 3,
            },
            Event::AssistantMessage {
                text: format!("An **answer** with `code` and a list:\n\n- one {turn}\n- two"),
            },
            Event::TurnFinished {
                turn,
                status: TurnStatus::Completed,
                message: None,
                usage: Default::default(),
                cost_usd: 0.0,
            },
        ] {
            state.handle_event(event, now);
        }
    }
    state.take_scrollback();
    state.handle_event(Event::TurnStarted { turn: 101 }, now);
    state
}

fn keystroke_to_frame() {
    let now = Instant::now();
    let mut state = state_after_100_turns(now);
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
        "keystroke to frame while streaming after 100 turns: median {:.3} ms, p99 {:.3} ms (target < 10 ms)",
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
                images: Vec::new(),
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
            usage: Default::default(),
            cost_usd: 0.0,
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
