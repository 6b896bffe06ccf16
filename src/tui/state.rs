//! The front end's model of the session, built only from protocol events: the transcript
//! cells, the message being streamed, running tool calls, input waiting to be applied and the
//! status. It knows nothing of the terminal; the app loop renders it and writes the lines it
//! hands out to the scrollback.

use std::time::{Duration, Instant};

use ratatui::text::Line;
use serde_json::Value;

use super::agents::AgentPane;
use super::approval::ApprovalPrompt;
use super::cells::{Cell, Detail, NoticeLevel};
use super::composer::Composer;
use super::first_run::FirstRun;
use super::model_picker::{ModelInfo, ModelPicker};
use super::pager::Pager;
use super::picker::SessionPicker;
use super::question::QuestionPrompt;
use super::status::{Activity, Status};
use super::stream::StreamCollector;
use super::tool_pane::{RunningTool, ToolCell};
use crate::protocol::{
    AgentActivity, AgentStatus, Event, Op, ToolStatus, TurnStatus, UserMessageKind,
};
use crate::sandbox::SandboxConfig;

/// How long a first Ctrl+C waits for the second one.
pub const QUIT_WINDOW: Duration = Duration::from_secs(2);

#[path = "state_events.rs"]
mod events;

/// What the app loop must do after a key or command.
#[derive(Debug, Clone, PartialEq)]
pub enum Effect {
    Send(Op),
    Quit,
    /// Shut the agent down and prepare a fresh session.
    NewSession,
    /// `/clear`: a fresh session on a cleared screen.
    ClearSession,
    /// List this directory's sessions in the picker.
    OpenPicker,
    /// Shut the agent down and continue the stored session with this id.
    Resume(String),
    /// Give stored session `id` the title `title` (from the picker, which stays open).
    RenameSession {
        id: String,
        title: String,
    },
    /// `/sessions`: the recent sessions of every directory.
    ListSessions,
    /// Search the memory archive and show the hits.
    SearchMemory(String),
    /// `/capabilities`: the tools offered now and the capability store.
    ListCapabilities,
    /// `/skills`: the skills found, with their origin, uses and state.
    ListSkills,
    /// `/schedule`: the schedules and heartbeats `mnemo serve` runs.
    ListSchedules,
    /// The set-up panel: check that a server answers at this base URL.
    CheckServer(String),
    /// The set-up panel: make this model the default (writing its entry when `served`) and
    /// start a session with it.
    UseModel {
        name: String,
        served: Option<crate::config::user_file::ServedModel>,
    },
}

/// Text the user sent that the agent has not applied yet.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PendingInput {
    pub text: String,
    pub kind: UserMessageKind,
    /// Typed before the session was ready: sent once it is.
    pub waiting: bool,
    /// The large pastes in `text`, `(text, label)`, shown as their chips.
    pub folds: Vec<(String, String)>,
}

pub struct AppState {
    pub transcript: Vec<Cell>,
    /// Lines for the terminal's scrollback that the app loop has not written yet.
    pub(super) scrollback: Vec<Line<'static>>,
    pub(super) wrote_any: bool,
    pub(super) stream: StreamCollector,
    pub(super) reasoning: String,
    pub running: Vec<RunningTool>,
    pub pending: Vec<PendingInput>,
    /// Running sub-agents, in start order.
    pub agents: Vec<AgentPane>,
    /// A plan proposed in plan mode, offered until the person chooses.
    pub plan_offer: Option<String>,
    /// The box holds a proposed plan the person edits: sending it carries it out.
    pub(super) editing_plan: bool,
    /// The agent's plan as it last stood (the `todo` tool).
    pub todo: Vec<crate::protocol::TodoItem>,
    /// Questions from the agent, oldest first; the first one is shown and answered.
    pub approvals: Vec<ApprovalPrompt>,
    /// The model's questions (`ask_user`) waiting for an answer; the first one shows.
    pub questions: Vec<QuestionPrompt>,
    pub status: Status,
    pub composer: Composer,
    pub pager: Option<Pager>,
    pub first_run: Option<FirstRun>,
    pub picker: Option<SessionPicker>,
    pub model_picker: Option<ModelPicker>,
    pub rewind_picker: Option<super::rewind_picker::RewindPicker>,
    /// When Esc was last pressed on an empty, idle box: a second Esc soon after opens rewind.
    pub(super) esc_armed: Option<Instant>,
    /// The configured model names, for `/model`.
    pub models: Vec<String>,
    /// The configured models with their keys, for the model picker.
    pub model_info: Vec<ModelInfo>,
    pub(super) quit_armed: Option<Instant>,
    /// Ops the app loop sends next (messages held until the session was ready).
    pub(super) outbox: Vec<Op>,
    /// The terminal's width: replies' tables and code frames are laid out for it.
    pub(super) width: u16,
    /// The capability tools the session offers now, in the order they entered.
    pub offered_tools: Vec<String>,
    /// The sandbox the configuration asks for, before the approval mode changes it.
    pub sandbox: SandboxConfig,
    /// Reminders (title, body) for the terminal's desktop notification, not yet written.
    pub(super) desktop: Vec<(String, String)>,
    dirty: bool,
}

impl Default for AppState {
    fn default() -> Self {
        Self::new()
    }
}

impl AppState {
    pub fn new() -> Self {
        Self {
            transcript: Vec::new(),
            scrollback: Vec::new(),
            wrote_any: false,
            stream: StreamCollector::default(),
            reasoning: String::new(),
            running: Vec::new(),
            pending: Vec::new(),
            approvals: Vec::new(),
            questions: Vec::new(),
            agents: Vec::new(),
            todo: Vec::new(),
            plan_offer: None,
            editing_plan: false,
            status: Status::default(),
            composer: Composer::new(),
            pager: None,
            first_run: None,
            picker: None,
            model_picker: None,
            rewind_picker: None,
            esc_armed: None,
            models: Vec::new(),
            model_info: Vec::new(),
            quit_armed: None,
            outbox: Vec::new(),
            width: 80,
            offered_tools: Vec::new(),
            sandbox: SandboxConfig::default(),
            desktop: Vec::new(),
            dirty: true,
        }
    }

    /// The terminal is `width` columns wide (lines committed from now on are laid out for it).
    pub fn set_width(&mut self, width: u16) {
        self.width = width;
    }

    /// Adds a finished cell to the transcript and its lines to the scrollback.
    pub fn commit_cell(&mut self, cell: Cell) {
        let lines = cell.lines(Detail::Collapsed, self.width);
        self.emit(lines, true);
        self.transcript.push(cell);
        self.dirty = true;
    }

    pub fn notice(&mut self, level: NoticeLevel, text: &str) {
        self.commit_cell(Cell::Notice {
            level,
            text: text.to_string(),
        });
    }

    pub(super) fn emit(&mut self, lines: Vec<Line<'static>>, starts_cell: bool) {
        if lines.is_empty() {
            return;
        }
        if starts_cell && self.wrote_any {
            self.scrollback.push(Line::default());
        }
        self.wrote_any = true;
        self.scrollback.extend(lines);
    }

    pub(super) fn finish_reasoning(&mut self) {
        if !self.reasoning.trim().is_empty() {
            let text = std::mem::take(&mut self.reasoning);
            self.commit_cell(Cell::Reasoning { text });
        }
        self.reasoning.clear();
    }

    /// Commits what is left of the streamed message as one assistant cell.
    pub(super) fn finish_stream(&mut self) {
        if self.stream.is_empty() {
            return;
        }
        let starts = !self.stream.has_committed();
        let (lines, text) = self.stream.finish(self.width);
        self.emit(lines, starts);
        if !text.trim().is_empty() {
            self.transcript.push(Cell::Assistant { text });
        }
    }

    /// The lines to write above the live area now: finished cells and the newline-complete
    /// part of the streamed message.
    pub fn take_scrollback(&mut self) -> Vec<Line<'static>> {
        let starts = !self.stream.has_committed();
        let lines = self.stream.commit_complete(self.width);
        self.emit(lines, starts);
        std::mem::take(&mut self.scrollback)
    }

    /// Whether anything changed since the last call.
    pub fn take_dirty(&mut self) -> bool {
        std::mem::replace(&mut self.dirty, false)
    }

    pub fn mark_dirty(&mut self) {
        self.dirty = true;
    }

    /// What a session's first screen says: the version, the model and workspace, what the
    /// agent may do (approval, sandbox, network) and the keys to start with.
    pub(super) fn welcome(&self, model: &str, workspace: &str) -> String {
        let version = env!("CARGO_PKG_VERSION");
        let mode = self.status.approval_mode;
        let rules = crate::sandbox::approval::effective(mode, &self.sandbox, None);
        let network = if rules.network_allowed() { "on" } else { "off" };
        format!(
            "mnemo {version} · {model} · {workspace}\n{mode} · {} · network {network}\n\
             Enter send · Tab queue · Esc interrupt · / commands",
            rules.policy
        )
    }

    pub fn is_busy(&self) -> bool {
        self.status.activity.is_busy()
    }
}
