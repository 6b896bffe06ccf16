//! The TUI state driven as the agent and a user would drive it, rendered into a test buffer.

// Each test binary uses a different part of this module.
#![allow(dead_code)]

use std::time::Instant;

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use mnemo::protocol::{Event, UserMessageKind};
use mnemo::tui::live::render_screen;
use mnemo::tui::state::AppState;
use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::text::Line;

pub type TestResult = Result<(), Box<dyn std::error::Error>>;

/// The app state plus what has reached the scrollback so far.
pub struct Harness {
    pub state: AppState,
    pub history: Vec<Line<'static>>,
    pub now: Instant,
}

impl Harness {
    pub fn new() -> Self {
        Self {
            state: AppState::new(),
            history: Vec::new(),
            now: Instant::now(),
        }
    }

    /// A started session, as the agent announces it.
    pub fn started() -> Self {
        let mut harness = Self::new();
        harness.event(Event::SessionStarted {
            session_id: "0f3c9a7e-5b1d-4c2e-9f00-1234567890ab".into(),
            model: "claude-sonnet".into(),
            workspace: "/home/ada/project".into(),
        });
        harness
    }

    pub fn event(&mut self, event: Event) {
        self.state.handle_event(event, self.now);
    }

    pub fn events(&mut self, events: impl IntoIterator<Item = Event>) {
        for event in events {
            self.event(event);
        }
    }

    pub fn key(&mut self, code: KeyCode, modifiers: KeyModifiers) {
        self.state
            .handle_key(KeyEvent::new(code, modifiers), self.now);
    }

    pub fn type_text(&mut self, text: &str) {
        for c in text.chars() {
            self.key(KeyCode::Char(c), KeyModifiers::NONE);
        }
    }

    pub fn prompt(&mut self, text: &str) {
        self.events([
            Event::TurnStarted { turn: 1 },
            Event::UserMessage {
                text: text.into(),
                kind: UserMessageKind::Prompt,
                images: Vec::new(),
            },
        ]);
    }

    /// The screen as the terminal would show it.
    pub fn screen(&mut self, width: u16, height: u16) -> String {
        self.state.set_width(width);
        self.history.extend(self.state.take_scrollback());
        let area = Rect::new(0, 0, width, height);
        let mut buf = Buffer::empty(area);
        render_screen(&self.state, &self.history, area, &mut buf, self.now);
        text_of(&buf)
    }
}

pub fn text_of(buf: &Buffer) -> String {
    let area = buf.area;
    let mut rows = Vec::new();
    for y in area.top()..area.bottom() {
        let mut row = String::new();
        for x in area.left()..area.right() {
            row.push_str(buf[(x, y)].symbol());
        }
        rows.push(row.trim_end().to_string());
    }
    rows.join("\n")
}

pub fn text(text: &str) -> Event {
    Event::TextDelta { text: text.into() }
}
