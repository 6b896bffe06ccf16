//! Snapshots of the session features of the interactive front end: the picker of stored
//! sessions, and a resumed session whose transcript is rebuilt from a real store (the most
//! recent turns in the scrollback under a note, the whole session in the pager).

use crate::tui_support;

use std::time::Instant;

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use mnemo::host::replay::{self, RECENT_MESSAGES};
use mnemo::llm::{ContentBlock, Message, Role};
use mnemo::memory::{Db, NewArchiveEntry, NewSession, SessionRow};
use mnemo::protocol::Event;
use mnemo::tui::cells::Cell;
use mnemo::tui::history::{Restored, cells};
use mnemo::tui::live::render_screen;
use mnemo::tui::pager::Pager;
use mnemo::tui::pager_view;
use mnemo::tui::picker::{PickerCancel, SessionPicker};
use mnemo::tui::state::{AppState, Effect};
use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::text::Line;
use serde_json::json;
use tui_support::{TestResult, text_of};

const MINUTE: i64 = 60_000;
/// "Now" for the picker: a fixed moment, so the ages in the snapshot do not drift.
const NOW: i64 = 1_750_000_000_000;

/// The screen: the scrollback written so far with the live area under it.
fn screen(
    state: &mut AppState,
    history: &mut Vec<Line<'static>>,
    width: u16,
    height: u16,
) -> String {
    history.extend(state.take_scrollback());
    let area = Rect::new(0, 0, width, height);
    let mut buf = Buffer::empty(area);
    render_screen(state, history, area, &mut buf, Instant::now());
    text_of(&buf)
}

fn started(state: &mut AppState, session_id: &str) {
    state.handle_event(
        Event::SessionStarted {
            session_id: session_id.into(),
            model: "claude-sonnet".into(),
            workspace: "/home/ada/project".into(),
        },
        Instant::now(),
    );
}

fn row(
    id: &str,
    title: &str,
    subtitle: Option<&str>,
    age_minutes: i64,
    messages: u64,
) -> SessionRow {
    SessionRow {
        id: id.into(),
        parent_id: None,
        created_at: NOW - age_minutes * MINUTE - 5 * MINUTE,
        updated_at: NOW - age_minutes * MINUTE,
        cwd: "/home/ada/project".into(),
        title: title.into(),
        subtitle: subtitle.map(str::to_string),
        model: "claude-sonnet".into(),
        status: "active".into(),
        message_count: messages,
        preview: None,
    }
}

fn picker_rows() -> Vec<SessionRow> {
    let mut rows = vec![
        row(
            "0f3c9a7e",
            "Fix the flaky pty test",
            Some("waiting for the screen"),
            0,
            42,
        ),
        row(
            "1a2b3c4d",
            "Port the config loader to layers",
            None,
            12,
            118,
        ),
        row("2b3c4d5e", "", None, 3 * 60, 1),
        row(
            "3c4d5e6f",
            "A very long title that goes on and on about the archive search ranking",
            Some("bm25 weights"),
            26 * 60,
            9_876,
        ),
        row(
            "4d5e6f70",
            "Benchmarks",
            Some("resume under 150 ms"),
            5 * 24 * 60,
            230,
        ),
    ];
    rows[1].preview = Some(
        "Done: the loader now reads the defaults, the user file and the workspace file in \
         that order, and every test passes.\nNext: the migration notes."
            .into(),
    );
    rows
}

#[test]
fn session_picker() {
    let mut state = AppState::new();
    let mut history = Vec::new();
    state.picker = Some(SessionPicker::new(
        picker_rows(),
        NOW,
        None,
        PickerCancel::NewSession,
    ));
    let now = Instant::now();
    state.handle_key(KeyEvent::new(KeyCode::Down, KeyModifiers::NONE), now);
    insta::assert_snapshot!(screen(&mut state, &mut history, 90, 14));
}

#[test]
fn ctrl_r_in_the_picker_renames_the_chosen_session_and_the_picker_stays() -> TestResult {
    let now = Instant::now();
    let key = |code| KeyEvent::new(code, KeyModifiers::NONE);
    let mut state = AppState::new();
    state.picker = Some(SessionPicker::new(
        picker_rows(),
        NOW,
        None,
        PickerCancel::Close,
    ));
    state.handle_key(key(KeyCode::Down), now);
    state.handle_key(
        KeyEvent::new(KeyCode::Char('r'), KeyModifiers::CONTROL),
        now,
    );
    for _ in "layers".chars() {
        state.handle_key(key(KeyCode::Backspace), now);
    }
    for c in "profiles".chars() {
        state.handle_key(key(KeyCode::Char(c)), now);
    }
    let mut history = Vec::new();
    let typing = screen(&mut state, &mut history, 90, 16);
    assert!(
        typing.contains("new title: Port the config loader to profiles"),
        "{typing}"
    );
    assert_eq!(
        state.handle_key(key(KeyCode::Enter), now),
        [Effect::RenameSession {
            id: "1a2b3c4d".into(),
            title: "Port the config loader to profiles".into()
        }]
    );
    let mut renamed = picker_rows().swap_remove(1);
    renamed.title = "Port the config loader to profiles".into();
    let picker = state.picker.as_mut().ok_or("the picker closed")?;
    picker.renamed(renamed);
    let shown = screen(&mut state, &mut history, 90, 16);
    assert!(
        shown.contains("› Port the config loader to profiles"),
        "{shown}"
    );
    assert_eq!(
        state.handle_key(key(KeyCode::Enter), now),
        [Effect::Resume("1a2b3c4d".into())]
    );
    Ok(())
}

#[test]
fn the_picker_opens_the_chosen_session_or_starts_a_new_one() {
    let now = Instant::now();
    let enter = KeyEvent::new(KeyCode::Enter, KeyModifiers::NONE);
    let esc = KeyEvent::new(KeyCode::Esc, KeyModifiers::NONE);
    let mut state = AppState::new();
    state.picker = Some(SessionPicker::new(
        picker_rows(),
        NOW,
        None,
        PickerCancel::NewSession,
    ));
    state.handle_key(KeyEvent::new(KeyCode::End, KeyModifiers::NONE), now);
    assert_eq!(
        state.handle_key(enter, now),
        [Effect::Resume("4d5e6f70".into())]
    );
    assert!(state.picker.is_none());

    state.picker = Some(SessionPicker::new(
        picker_rows(),
        NOW,
        None,
        PickerCancel::NewSession,
    ));
    assert_eq!(state.handle_key(esc, now), [Effect::NewSession]);

    let current = Some("0f3c9a7e".to_string());
    state.picker = Some(SessionPicker::new(
        picker_rows(),
        NOW,
        current,
        PickerCancel::Close,
    ));
    assert!(state.handle_key(esc, now).is_empty());
    assert!(state.picker.is_none());
}

/// A stored session of `turns` turns (a question, an answer with a tool call, its result, a
/// closing answer), the first `archived` messages moved to the archive.
fn stored_session(
    db: &mut Db,
    turns: i64,
    archived: i64,
) -> Result<String, Box<dyn std::error::Error>> {
    let id = "0f3c9a7e-5b1d-4c2e-9f00-1234567890ab".to_string();
    db.create_session(NewSession {
        id: id.clone(),
        parent_id: None,
        cwd: "/home/ada/project".into(),
        model: "claude-sonnet".into(),
        title: "Tidy the build".into(),
    })?;
    let mut messages = Vec::new();
    for turn in 0..turns {
        let call = format!("call{turn}");
        messages.push(Message::user_text(format!("step {turn}: check the build")));
        messages.push(Message::assistant(vec![
            ContentBlock::Text {
                text: format!("Running **cargo check** for step {turn}."),
            },
            ContentBlock::ToolUse {
                id: call.clone(),
                name: "shell".into(),
                input: json!({"command": "cargo check"}),
            },
        ]));
        messages.push(Message {
            role: Role::User,
            content: vec![ContentBlock::ToolResult {
                tool_use_id: call,
                content: format!("Finished in 0.{turn}s"),
                is_error: false,
            }],
        });
        messages.push(Message::assistant(vec![ContentBlock::Text {
            text: format!("Step {turn} builds cleanly."),
        }]));
    }
    let rows: Vec<_> = messages
        .iter()
        .enumerate()
        .map(|(seq, message)| (seq as i64, message, 10))
        .collect();
    db.append_messages(&id, &rows)?;
    db.archive_messages(NewArchiveEntry {
        session_id: id.clone(),
        topic: "early steps".into(),
        summary: "the first steps of the build".into(),
        messages: messages[..archived as usize].to_vec(),
        token_count: 100,
        importance: 0.5,
        first_seq: 0,
        last_seq: archived - 1,
        started_at: 1,
        ended_at: 2,
    })?;
    Ok(id)
}

#[test]
fn resumed_session_with_its_note() -> TestResult {
    let mut db = Db::open_in_memory()?;
    let id = stored_session(&mut db, 8, 12)?;
    let active = db.active_messages(&id)?;
    let total = db.session(&id)?.message_count;
    assert_eq!((active.len(), total), (20, 32));
    // Resuming reads the working set: the archived messages count as earlier ones.
    let restored = Restored::from(replay::recent(&active, total, RECENT_MESSAGES));
    assert_eq!(restored.earlier, 12);
    let shown_cells = restored.cells.len();

    let mut state = AppState::new();
    let mut history = Vec::new();
    state.show_history("Tidy the build", restored);
    started(&mut state, &id);
    let shown = screen(&mut state, &mut history, 80, 54);
    assert!(
        shown.contains("12 earlier messages are in the pager (Ctrl+T)"),
        "{shown}"
    );
    assert!(
        !shown.contains("step 2: check"),
        "an archived turn reached the scrollback"
    );
    insta::assert_snapshot!(shown);

    // Then the whole session, archived messages included, arrives for the pager.
    state.pager = Some(Pager::new());
    let full = cells(&replay::events(&db.all_messages(&id)?));
    let count = full.len();
    state.replace_history(shown_cells, full);
    assert_eq!(state.transcript.len(), count + 1);
    assert!(matches!(
        state.transcript.first(),
        Some(Cell::User { text, .. }) if text == "step 0: check the build"
    ));
    assert!(matches!(
        state.transcript.last(),
        Some(Cell::Notice { text, .. })
            if text.starts_with(&format!("mnemo {} · claude-sonnet", env!("CARGO_PKG_VERSION")))
    ));
    let area = Rect::new(0, 0, 80, 12);
    let mut buf = Buffer::empty(area);
    let Some(pager) = state.pager.as_mut() else {
        return Err("the pager closed".into());
    };
    pager_view::render(pager, &state.transcript, area, &mut buf);
    pager.handle_key(
        KeyEvent::new(KeyCode::Home, KeyModifiers::NONE),
        &state.transcript,
    );
    pager_view::render(pager, &state.transcript, area, &mut buf);
    let text = text_of(&buf);
    assert!(text.contains("step 0: check the build"), "{text}");
    Ok(())
}
