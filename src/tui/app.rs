//! The app loop: waits on the terminal, the agent and signals (never polls), drains whatever
//! is pending, applies the effects, then draws at most one frame, no sooner than a frame
//! interval after the previous one. Within a frame interval after a frame it does not wake for
//! the agent's events: they could not be drawn sooner, and a streamed reply sends many per
//! frame. Only this loop holds the agent's channels.

use std::io::{self, Write};
use std::sync::Arc;
use std::task::Poll;
use std::time::{Duration, Instant};

use crossterm::event::Event as TermEvent;
use futures_util::StreamExt;
use ratatui::layout::Size;
use ratatui::text::Line;
use tokio::sync::mpsc::error::{TryRecvError, TrySendError};

use super::TuiStart;
use super::cells::NoticeLevel;
use super::live::live_view;
use super::model_picker::{KeyNote, ModelInfo};
use super::pager_view;
use super::picker::PickerCancel;
use super::state::{AppState, Effect};
use super::switch::{FullHistory, HistoryRead};
use super::term_events::TermEvents;
use super::terminal::Screen;
use super::wrap::wrap_lines;
use crate::config::CliOverrides;
use crate::config::KeyStatus;
use crate::host::Attachment;
use crate::host::{HostApi, Loaded};
use crate::protocol::{Event, Op};
use crate::signals::{Signals, Stop};

/// At most about 60 frames per second after a key.
const FRAME: Duration = Duration::from_millis(16);
/// Frames that only show what the agent did during a turn come at most about 30 times a
/// second: streamed text looks no smoother at 60, and each frame lays out the reply's tail
/// again. Between turns (the session starting, a notice) events are few and someone waits for
/// them, so they get the faster pace.
const AGENT_FRAME: Duration = Duration::from_millis(33);
/// Frames wait this long after the last resize: while a window is dragged, a frame drawn for
/// a size the terminal has already left breaks the rows it lands on.
const RESIZE_SETTLE: Duration = Duration::from_millis(60);
/// Agent events handled before the loop checks the terminal again.
const DRAIN_LIMIT: usize = 4096;
/// How often a session open here looks for the results of its schedules (`mnemo serve` runs
/// them in another process).
const NOTICE_POLL: Duration = Duration::from_secs(3);

/// How long a session gets to shut down before it is abandoned.
const SHUTDOWN_WAIT: Duration = Duration::from_secs(3);

pub struct App<W: Write> {
    pub(super) state: AppState,
    screen: Screen<W>,
    /// Where the sessions live that this front end attaches to, and what it reads.
    pub(super) host: Arc<dyn HostApi>,
    pub(super) agent: Option<Attachment>,
    /// The session the agent works in (kept after the agent stops, for `/model`).
    pub(super) session_id: Option<String>,
    /// Whether `mnemo serve` may leave this session notices to look for (it made schedules):
    /// only then does the idle loop wake to look.
    pub(super) watch_notices: bool,
    pub(super) loaded: Arc<Loaded>,
    /// The overrides sessions are prepared with; `/model` replaces the model.
    pub(super) cli: CliOverrides,
    /// The whole history of a resumed session, being read for the pager.
    pub(super) full_history: Option<FullHistory>,
    /// The session the set-up panel stands in for, started once a model is chosen.
    pub(super) offline_choice: Option<crate::host::SessionChoice>,
    /// Scrollback lines that arrived while the pager covered the screen.
    held: Vec<Line<'static>>,
    /// When the terminal last changed size, until the next frame.
    resized_at: Option<Instant>,
}

enum Wake {
    Terminal(Option<io::Result<TermEvent>>),
    Agent(Option<Event>),
    History(HistoryRead),
    Signal(Stop),
    Timer,
    Notices,
}

impl<W: Write> App<W> {
    pub fn new(
        screen: Screen<W>,
        loaded: Arc<Loaded>,
        cli: CliOverrides,
        host: Arc<dyn HostApi>,
    ) -> Self {
        let mut state = AppState::new();
        state.models = loaded.config.models.keys().cloned().collect();
        state.model_info = model_info(&loaded.config);
        state.status.approval_mode = loaded.config.approval;
        state.status.attached = host.served();
        state.sandbox = loaded.config.sandbox.config();
        Self {
            state,
            screen,
            host,
            agent: None,
            session_id: None,
            watch_notices: false,
            loaded,
            cli,
            full_history: None,
            offline_choice: None,
            held: Vec::new(),
            resized_at: None,
        }
    }

    /// Runs until the user quits (`None`) or a signal stops it; `start` says which session
    /// opens first.
    pub async fn run(&mut self, start: TuiStart) -> io::Result<Option<Stop>> {
        let mut terminal = TermEvents::new();
        let mut signals = Signals::new()?;
        self.draw(Instant::now())?;
        self.open(start).await;
        let mut last_frame = Instant::now();
        let mut draw_pending = true;
        // A key was handled since the last frame: the next one comes at the faster pace.
        let mut typed = false;
        let mut notices = tokio::time::interval(NOTICE_POLL);
        notices.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            let now = Instant::now();
            let settled = self.resized_at.map(|at| at + RESIZE_SETTLE);
            let paced = self.state.status.turn_started.is_some();
            let next_frame = last_frame + if typed || !paced { FRAME } else { AGENT_FRAME };
            let frame_due =
                draw_pending.then(|| settled.map_or(next_frame, |at| at.max(next_frame)));
            // Events that arrive meanwhile wait in the queue, drained at this wake.
            let agent_waits = paced && now < last_frame + AGENT_FRAME;
            let state_due = self.state.next_deadline(now);
            let deadline = [
                frame_due,
                agent_waits.then_some(last_frame + AGENT_FRAME),
                state_due,
            ]
            .into_iter()
            .flatten()
            .min();
            let wake = tokio::select! {
                event = terminal.next() => Wake::Terminal(event),
                event = next_event(&mut self.agent), if !agent_waits => Wake::Agent(event),
                read = next_history(&mut self.full_history) => Wake::History(read),
                stop = signals.recv() => Wake::Signal(stop),
                () = sleep_until(deadline) => Wake::Timer,
                // Not while a resumed session's whole history is read: the look would wait for
                // the store behind it, and the loop with it, holding the ready prompt back.
                _ = notices.tick(), if self.watch_notices && self.full_history.is_none() => {
                    Wake::Notices
                }
            };
            let now = Instant::now();
            let mut effects = Vec::new();
            let from_terminal = matches!(wake, Wake::Terminal(_));
            typed |= from_terminal;
            match wake {
                Wake::Terminal(Some(event)) => self.on_terminal(event?, now, &mut effects),
                Wake::Terminal(None) => return Ok(Some(Stop::Hangup)),
                Wake::Signal(stop) => return Ok(Some(stop)),
                Wake::Agent(Some(event)) => self.agent_event(event, now),
                Wake::Agent(None) => self.agent_stopped(),
                Wake::History(read) => self.history_arrived(read),
                Wake::Timer if state_due.is_some_and(|due| now >= due) => self.state.tick(now),
                Wake::Timer => {}
                Wake::Notices => {
                    self.watch_notices = match self.session_id.clone() {
                        Some(id) => self.host.show_notices(&id).await,
                        None => false,
                    };
                }
            }
            // Keys typed together (a paste without bracketed paste) are handled in one go.
            while from_terminal && let Some(event) = ready_event(&mut terminal).await {
                self.on_terminal(event?, now, &mut effects);
            }
            self.drain_agent(now);
            for op in self.state.take_outbox() {
                self.send(op);
            }
            for effect in effects {
                match effect {
                    Effect::Send(op) => self.send(op),
                    Effect::Quit => return Ok(None),
                    Effect::NewSession => self.new_session().await,
                    Effect::ClearSession => {
                        self.screen.clear()?;
                        self.new_session().await;
                    }
                    Effect::OpenPicker => self.open_picker(PickerCancel::Close).await,
                    Effect::Resume(id) => self.resume(id).await,
                    Effect::RenameSession { id, title } => self.rename_session(id, title).await,
                    Effect::ListSessions => self.list_sessions().await,
                    Effect::SearchMemory(query) => self.search_memory(query).await,
                    Effect::ListCapabilities => self.list_capabilities().await,
                    Effect::ListSkills => self.list_skills().await,
                    Effect::ListSchedules => self.list_schedules().await,
                    Effect::CheckServer(url) => self.check_server(url).await,
                    Effect::UseModel { name, served } => self.use_model(name, served).await,
                }
            }
            draw_pending |= self.state.take_dirty();
            let now = Instant::now();
            let paced = self.state.status.turn_started.is_some();
            let next_frame = last_frame + if typed || !paced { FRAME } else { AGENT_FRAME };
            // A resize whose event has not arrived yet: a frame drawn for the old size would
            // wrap on the terminal and leave broken rows behind. Asked only when a frame is
            // due.
            if draw_pending
                && now >= next_frame
                && let Ok((width, height)) = super::terminal::window_size()
                && Size::new(width, height) != self.screen.size()
            {
                self.resized(Size::new(width, height), now);
            }
            let settled = self.resized_at.is_none_or(|at| now >= at + RESIZE_SETTLE);
            if draw_pending && settled && now >= next_frame {
                self.resized_at = None;
                typed = false;
                if self.state.pager.is_none() && self.screen.in_pager() {
                    self.screen.leave_pager()?;
                }
                self.draw(now)?;
                last_frame = now;
                draw_pending = false;
            }
        }
    }

    /// The session to name on exit: the current one, when it holds a message.
    pub fn saved_session(&self) -> Option<String> {
        let has_messages = self
            .state
            .transcript
            .iter()
            .any(|cell| matches!(cell, super::cells::Cell::User { .. }));
        self.session_id.clone().filter(|_| has_messages)
    }

    /// Shuts the agent down and hands the screen back to the shell.
    pub async fn finish(&mut self) -> io::Result<()> {
        self.shutdown_agent().await;
        self.screen.finish()
    }

    fn on_terminal(&mut self, event: TermEvent, now: Instant, effects: &mut Vec<Effect>) {
        match event {
            TermEvent::Key(key) => effects.extend(self.state.handle_key(key, now)),
            TermEvent::Paste(text) => self.state.handle_paste(&text),
            TermEvent::Mouse(mouse) => self.state.handle_mouse(mouse),
            TermEvent::Resize(width, height) => self.resized(Size::new(width, height), now),
            TermEvent::FocusGained | TermEvent::FocusLost => {}
        }
    }

    fn resized(&mut self, size: Size, now: Instant) {
        self.screen.resize(size);
        self.state.set_width(size.width);
        self.resized_at = Some(now);
        self.state.mark_dirty();
    }

    fn drain_agent(&mut self, now: Instant) {
        for _ in 0..DRAIN_LIMIT {
            let Some(agent) = &mut self.agent else {
                return;
            };
            match agent.events.try_recv() {
                Ok(event) => self.agent_event(event.event, now),
                Err(TryRecvError::Empty) => return,
                Err(TryRecvError::Disconnected) => return self.agent_stopped(),
            }
        }
    }

    fn agent_stopped(&mut self) {
        self.agent = None;
        self.state.agent_stopped();
    }

    fn send(&mut self, op: Op) {
        let Some(agent) = &self.agent else {
            self.state.notice(
                NoticeLevel::Warning,
                "No session is running; /clear starts one",
            );
            return;
        };
        match agent.ops.try_send(op) {
            Ok(()) => {}
            Err(TrySendError::Full(op)) => {
                if let Op::UserInput { text, .. } | Op::Inject { text } = &op {
                    self.state.pending.retain(|p| p.text != *text);
                }
                self.state.notice(
                    NoticeLevel::Warning,
                    "The agent did not take the input (its queue is full); send it again",
                );
            }
            Err(TrySendError::Closed(_)) => self.agent_stopped(),
        }
    }

    pub(super) async fn shutdown_agent(&mut self) {
        if let Some(attached) = self.agent.take() {
            // Detached first: the agent's remaining events are dropped, not waited on.
            let id = attached.session.clone();
            drop(attached);
            self.host.stop(&id, SHUTDOWN_WAIT).await;
        }
    }

    /// One frame: scrollback lines first, then the live area (or the pager), all inside one
    /// synchronized update.
    pub(super) fn draw(&mut self, now: Instant) -> io::Result<()> {
        self.screen.begin_frame()?;
        let want_pager = self.state.pager.is_some();
        if want_pager && !self.screen.in_pager() {
            self.screen.enter_pager()?;
        } else if !want_pager && self.screen.in_pager() {
            self.screen.leave_pager()?;
        }
        let size = self.screen.size();
        self.state.set_width(size.width);
        if self.state.pager.is_some() {
            let lines = self.state.take_scrollback();
            self.held.extend(lines);
        }
        if let Some(pager) = self.state.pager.as_mut() {
            let cells = &self.state.transcript;
            self.screen
                .draw_pager(|area, buf| pager_view::render(pager, cells, area, buf))?;
        } else {
            let mut lines = std::mem::take(&mut self.held);
            lines.extend(self.state.take_scrollback());
            self.screen.insert_lines(&wrap_lines(&lines, size.width))?;
            let desktop = std::mem::take(&mut self.state.desktop);
            if !desktop.is_empty()
                && let Some(terminal) = super::notify::Terminal::from_env()
            {
                for (title, body) in desktop {
                    self.screen
                        .write_raw(&super::notify::desktop(terminal, &title, &body))?;
                }
            }
            let view = live_view(&self.state, size.width, size.height.saturating_sub(1), now);
            let state = &self.state;
            self.screen.draw_live(view.height(), |area, buf| {
                view.render(state, area, buf, now)
            })?;
        }
        self.screen.end_frame()
    }
}

/// A terminal event that is already waiting, without waiting for one. It polls with this
/// task's own waker: crossterm's stream remembers the waker of a pending poll, so a
/// throwaway waker here would leave the loop deaf to the next key.
async fn ready_event(terminal: &mut TermEvents) -> Option<io::Result<TermEvent>> {
    std::future::poll_fn(|cx| match terminal.poll_next_unpin(cx) {
        Poll::Ready(event) => Poll::Ready(event),
        Poll::Pending => Poll::Ready(None),
    })
    .await
}

async fn next_event(agent: &mut Option<Attachment>) -> Option<Event> {
    match agent {
        Some(agent) => agent.events.recv().await.map(|numbered| numbered.event),
        None => std::future::pending().await,
    }
}

async fn next_history(pending: &mut Option<FullHistory>) -> HistoryRead {
    match pending {
        Some(pending) => (&mut pending.cells).await,
        None => std::future::pending().await,
    }
}

/// The configured models with where their key comes from, for the model picker.
pub(super) fn model_info(config: &crate::config::Config) -> Vec<ModelInfo> {
    let env = |name: &str| std::env::var(name).ok();
    config
        .models
        .keys()
        .filter_map(|name| crate::config::select::named(config, name).ok())
        .map(|model| {
            let key = match model.key_status(&env) {
                KeyStatus::Available(var) => KeyNote::Available(var),
                KeyStatus::Missing(_) | KeyStatus::NotNeeded if model.is_local() => {
                    KeyNote::NotNeeded
                }
                KeyStatus::Missing(var) => KeyNote::Missing(var),
                KeyStatus::NotNeeded => KeyNote::NotNeeded,
            };
            let host = crate::llm::http::host_of(&model.base_url).unwrap_or_default();
            let detail = match host.is_empty() {
                true => model.model.clone(),
                false => format!("{} on {host}", model.model),
            };
            ModelInfo {
                name: model.name,
                detail,
                key,
            }
        })
        .collect()
}

async fn sleep_until(deadline: Option<Instant>) {
    match deadline {
        Some(deadline) => tokio::time::sleep_until(deadline.into()).await,
        None => std::future::pending().await,
    }
}
