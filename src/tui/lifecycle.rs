//! Timers and session-level changes of the model: the quit hint and the turn clock (the
//! only reasons to redraw without an event), going offline, the agent stopping, `/clear`
//! and leaving a session for another.

use std::time::{Duration, Instant};

use ratatui::text::Line;

use super::cells::NoticeLevel;
use super::first_run::FirstRun;
use super::state::{AppState, QUIT_WINDOW};
use super::status::{Activity, Status};

impl AppState {
    /// The hint shown in the status line right now.
    pub fn hint(&self, now: Instant) -> Option<&'static str> {
        self.quit_armed
            .filter(|armed| now.saturating_duration_since(*armed) < QUIT_WINDOW)
            .map(|_| "Press Ctrl+C again to quit")
    }

    /// When the screen must change without any event: the quit hint expiring, or the next
    /// second of a running turn's clock. `None` when idle: no timer runs then.
    pub fn next_deadline(&self, now: Instant) -> Option<Instant> {
        let hint = self.quit_armed.map(|armed| armed + QUIT_WINDOW);
        let next_second = |start: Instant| {
            let elapsed = now.saturating_duration_since(start).as_secs();
            start + Duration::from_secs(elapsed + 1)
        };
        let clock = self
            .status
            .turn_started
            .filter(|_| self.is_busy())
            .map(next_second);
        // Sub-agent panes show their own running time, also between turns.
        let agents = self
            .agents
            .iter()
            .map(|pane| next_second(pane.started))
            .min();
        let clock = match (clock, agents) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        match (hint, clock) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    /// A deadline passed: expire the hint and redraw the clock.
    pub fn tick(&mut self, now: Instant) {
        if self.hint(now).is_none() {
            self.quit_armed = None;
        }
        self.mark_dirty();
    }

    /// No model could be prepared: show the first-run panel.
    pub fn set_offline(&mut self, first_run: FirstRun) {
        self.return_waiting();
        self.first_run = Some(first_run);
        self.status.activity = Activity::Offline;
        self.mark_dirty();
    }

    /// The agent task ended on its own.
    pub fn agent_stopped(&mut self) {
        self.finish_stream();
        self.running.clear();
        self.status.activity = Activity::Offline;
        self.status.turn_started = None;
        let text = match crate::crash::last_record() {
            Some(record) => format!(
                "The agent stopped: it crashed (record: {}); /clear starts a new session.",
                record.display()
            ),
            None => "The agent stopped; /clear starts a new session.".to_string(),
        };
        self.notice(NoticeLevel::Error, &text);
    }

    /// Forgets the old session before a new one starts (`/clear`).
    pub fn begin_new_session(&mut self) {
        self.forget_session();
        self.notice(NoticeLevel::Info, "New session");
    }

    /// Clears what belonged to the session shown so far; its lines stay in the scrollback
    /// above a blank line.
    pub fn forget_session(&mut self) {
        self.finish_reasoning();
        self.finish_stream();
        self.transcript.clear();
        self.running.clear();
        self.pending.clear();
        self.approvals.clear();
        self.questions.clear();
        self.agents.clear();
        self.first_run = None;
        self.status = Status {
            approval_mode: self.status.approval_mode,
            ..Status::default()
        };
        self.wrote_any = false;
        self.scrollback.push(Line::default());
    }
}
