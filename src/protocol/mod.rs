//! The only contract between a front end and the agent: `Op`s go in, `Event`s come out.
//! Both are serde types, so `mnemo run --json` prints the event stream as JSON lines.

use serde::{Deserialize, Serialize};
use serde_json::Value;

mod front_end;
mod rewind;
mod user_commands;
mod values;

pub use front_end::{FrontEndReply, FrontEndRequest, FrontEndServices};
pub use rewind::{NotRestored, RewindReport, RewindWhat, TurnSummary};
pub use user_commands::UserCommandInfo;
pub use values::{ApprovalMode, Attachment, Escalation, TodoItem, TodoStatus, Usage};

/// An event as it leaves the session host: which session, and its place in that session's
/// stream (1 for the first event the host handed out).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SessionEvent {
    pub session: String,
    pub seq: u64,
    pub event: Event,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "op", rename_all = "snake_case")]
pub enum Op {
    /// A new user message. Starts a turn, or waits for the running one to end (a queued
    /// message).
    UserInput {
        text: String,
        /// Images the person attached (a path named with `@`, dropped or pasted).
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        images: Vec<Attachment>,
    },
    /// Text for the running turn: it becomes a user message before the next model call.
    Inject { text: String },
    /// Takes back a queued message (`UserInput` sent during a turn) that has not started yet;
    /// answered by `Event::QueuedWithdrawn` when it was still waiting.
    Withdraw { text: String },
    /// Cancels the step in flight and ends the turn as `Interrupted`.
    Interrupt,
    /// Compacts the working set now (or at the next step of a running turn).
    Compact,
    /// The user's answer to `Event::ApprovalRequested` with the same id.
    Approval {
        id: String,
        decision: ApprovalDecision,
    },
    /// Changes when the agent asks before acting, from the next tool call on.
    SetApprovalMode { mode: ApprovalMode },
    /// Goes on with the configured model `model` (and its fallbacks) from the next model call
    /// on, keeping the history; answered by `Event::ModelChanged`, or `Event::Error` when that
    /// model cannot be prepared (the session keeps its model).
    SetModel { model: String },
    /// Asks for the MCP servers' states, answered by `Event::McpServers`.
    ListMcpServers,
    /// The front end offers these services to the session's tools from now on (sent once,
    /// right after opening): they use them instead of reading, writing and running
    /// themselves, always after mnemo's own checks.
    OfferServices { services: FrontEndServices },
    /// The front end's answer to `Event::FrontEndRequest` with the same id.
    FrontEndReply { id: String, reply: FrontEndReply },
    /// Ends the agent task after cancelling any running turn.
    Shutdown,
    /// Asks for the turns a rewind can go back to, answered by `Event::Turns`.
    ListTurns,
    /// Takes back turn `turn` and every later one: the files the agent changed, the
    /// conversation, or both. Answered by `Event::Rewound`, or `Event::Error` (refused while a
    /// turn runs: interrupt it first).
    Rewind { turn: u64, what: RewindWhat },
    /// Plan mode on or off. In plan mode the agent reads, searches and thinks but writes
    /// nothing (the read-only mode), and ends its turn with a plan (`Event::PlanProposed`);
    /// off, the mode before it comes back. Answered by `Event::PlanModeChanged`.
    SetPlanMode { on: bool },
    /// Carries out the proposed plan (`plan`: the person's edited text of it instead): plan
    /// mode ends and a turn starts with the plan. Between turns only.
    ApprovePlan { plan: Option<String> },
    /// The answer to `Event::QuestionAsked` with the same id.
    AnswerQuestion { id: String, answer: QuestionAnswer },
}

impl Op {
    /// A user message of text alone.
    pub fn user_input(text: impl Into<String>) -> Self {
        Self::UserInput {
            text: text.into(),
            images: Vec::new(),
        }
    }
}

/// What became of a question the model put to the person (`ask_user`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum QuestionAnswer {
    /// The choice picked, or the text typed.
    Text { text: String },
    /// The person closed the question without answering (or the call was interrupted).
    Dismissed,
    /// Nobody can answer through this front end (`mnemo run`, an editor).
    Unavailable,
}

/// One configured MCP server as `/mcp` shows it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct McpServerStatus {
    pub name: String,
    /// "starting", "ready with 12 tools", "failed: …", "disabled",
    /// "not started: workspace not trusted".
    pub state: String,
    pub ready: bool,
    /// Its tools are too many to list: the model finds them with `mcp_tool_search`.
    pub deferred: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum UserMessageKind {
    /// Started a turn.
    Prompt,
    /// Sent while a turn ran and added before its next model call.
    Injected,
    /// Sent while a turn ran and started the next turn.
    Queued,
    /// Written by mnemo, not the user: asks the model to go on with a reply the output limit
    /// cut off.
    Continuation,
    /// Written by mnemo: the turn reached its step limit, so the model is asked for a last
    /// answer without tools.
    StepLimit,
    /// Written by mnemo: asks the model whether the work just done is worth keeping as a skill.
    SkillRequest,
}

impl UserMessageKind {
    /// Whether mnemo wrote the message rather than the person.
    pub fn by_mnemo(self) -> bool {
        matches!(
            self,
            UserMessageKind::Continuation
                | UserMessageKind::StepLimit
                | UserMessageKind::SkillRequest
        )
    }
}

/// Who wrote a compaction's summary.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CompactionKind {
    /// The compressor model.
    Model,
    /// Mechanically (message limit, or the compressor failed).
    Mechanical,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ApprovalDecision {
    AllowOnce,
    /// Allow, and do not ask again this session for the same command prefix or path.
    AllowSession,
    Deny,
}

/// What the agent asks to do, with what the user needs to judge it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum ApprovalAction {
    Command {
        command: String,
        /// More than the sandbox gives, when the model asked for it.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        escalation: Option<Escalation>,
        /// The sandbox the command would run in ("workspace-write, network off").
        sandbox: String,
    },
    Write {
        /// Relative to the workspace.
        path: String,
        /// Unified diff of the change.
        diff: String,
    },
    /// A remembered experience added or removed (later sessions see it).
    Memory {
        /// "remember for this project: …", "forget #12: …".
        change: String,
    },
    /// A schedule made or removed (`mnemo serve` runs it later, unwatched).
    Schedule {
        /// "every 2h from 09:00: check the deploy", "delete #3: …".
        change: String,
    },
    /// A call to an MCP server's tool that is not marked read-only.
    McpCall {
        server: String,
        /// The server's own name for the tool.
        tool: String,
        /// The arguments as pretty JSON, cut to a readable length.
        arguments: String,
    },
    /// A command's connection to a domain the sandbox's proxy does not let through yet.
    Network { host: String, port: u16 },
}

/// What a running sub-agent does now.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "state", rename_all = "snake_case")]
pub enum AgentActivity {
    Thinking,
    Responding,
    Retrying,
    Tool { name: String, arguments: Value },
}

/// How a sub-agent was started.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AgentKind {
    /// `spawn_agent`: its own prompt and context mode.
    Spawn,
    /// `fork`: a copy of the parent's context, gathered with `gather_all`.
    Fork,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AgentStatus {
    Running,
    Completed,
    Failed,
    Cancelled,
}

impl AgentStatus {
    pub fn label(self) -> &'static str {
        match self {
            AgentStatus::Running => "running",
            AgentStatus::Completed => "completed",
            AgentStatus::Failed => "failed",
            AgentStatus::Cancelled => "cancelled",
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ToolStatus {
    Ok,
    Error,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TurnStatus {
    /// The model answered without asking for more tools.
    Completed,
    /// The user interrupted; everything completed before is kept.
    Interrupted,
    /// The same tool call came three times in a row.
    LoopDetected,
    /// The configured number of model calls per turn was reached.
    StepLimit,
    /// The provider failed and no fallback could answer.
    Failed,
    /// The reply was cut off by the output limit, even after asking the model to go on.
    CutOff,
    /// The model refused to answer.
    Refused,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Event {
    SessionStarted {
        session_id: String,
        model: String,
        workspace: String,
    },
    TurnStarted {
        turn: u64,
    },
    /// A queued message was taken back before it started (`Op::Withdraw`).
    QueuedWithdrawn {
        text: String,
    },
    /// A user message entered the history.
    UserMessage {
        text: String,
        kind: UserMessageKind,
        /// The images attached to it, each as its name and size (`shot.png 30×20`).
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        images: Vec<String>,
    },
    TextDelta {
        text: String,
    },
    ReasoningDelta {
        text: String,
    },
    /// The assistant message of one step is complete (its text, without tool calls).
    AssistantMessage {
        text: String,
    },
    ToolCallStarted {
        call_id: String,
        name: String,
        arguments: Value,
    },
    /// The tool call `call_id` waits until the front end answers with `Op::Approval`.
    ApprovalRequested {
        id: String,
        call_id: String,
        tool: String,
        action: ApprovalAction,
        /// Why the approval mode asks.
        reason: String,
        /// What "allow for this session" would cover ("commands starting with `cargo test`");
        /// `None` when this action can only be allowed once.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        session_grant: Option<String>,
        /// Why "allow for this session" is not offered, when it is not ("it has a pipe `|`").
        #[serde(default, skip_serializing_if = "Option::is_none")]
        only_once: Option<String>,
    },
    /// A tool call asks the front end for a service it offered (`Op::OfferServices`) and waits
    /// for `Op::FrontEndReply` with the same id, for a limited time.
    FrontEndRequest {
        id: String,
        call_id: String,
        request: FrontEndRequest,
    },
    /// The request `id` is no longer waited for (the call was interrupted or gave up): a
    /// command the front end runs for it must be stopped.
    FrontEndWithdrawn {
        id: String,
    },
    /// `Op::SetApprovalMode` took effect.
    ApprovalModeChanged {
        mode: ApprovalMode,
    },
    /// Plan mode went on or off (`Op::SetPlanMode`, an approved plan, a mode chosen).
    PlanModeChanged {
        on: bool,
    },
    /// A turn in plan mode ended with this plan, for the person to approve (`Op::ApprovePlan`),
    /// edit, or answer with what to change.
    PlanProposed {
        text: String,
    },
    /// `Op::SetModel` took effect: the next model call goes to `model`.
    ModelChanged {
        model: String,
        /// Its context window in tokens.
        context_window: u64,
    },
    /// The request `id` was answered (a request dropped by an interrupt counts as denied).
    ApprovalResolved {
        id: String,
        decision: ApprovalDecision,
    },
    /// A sub-agent started (at any depth below this session).
    AgentStarted {
        run_id: String,
        /// Its session in the store.
        session_id: String,
        /// The run that started it; `None` when this session did.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        parent_run: Option<String>,
        /// 1 for a sub-agent of this session, 2 for one of its sub-agents, and so on.
        depth: u32,
        kind: AgentKind,
        /// The first line of its task.
        label: String,
        model: String,
    },
    /// What a running sub-agent does now.
    AgentActivity {
        run_id: String,
        activity: AgentActivity,
    },
    AgentFinished {
        run_id: String,
        status: AgentStatus,
        /// The first line of its answer, or why it stopped.
        summary: String,
    },
    /// Sent just before `TurnFinished` when sub-agents of this session still run in the
    /// background: their results will start another turn.
    AgentsPending {
        count: u32,
    },
    /// Live output of a running tool.
    ToolOutput {
        call_id: String,
        chunk: String,
    },
    ToolCallFinished {
        call_id: String,
        name: String,
        status: ToolStatus,
        /// What the model sees (already capped).
        output: String,
        duration_ms: u64,
    },
    Usage {
        /// The last model call.
        last: Usage,
        /// Everything since the session started.
        total: Usage,
        cost_usd: f64,
        /// Share of the model's context window the last request filled, 0 to 100.
        context_percent: f32,
    },
    /// The model call failed and will be tried again after `delay_ms`. With
    /// `discard_partial`, the text and reasoning shown for the failed attempt must be dropped:
    /// the retry streams the whole message again.
    Retry {
        model: String,
        attempt: u32,
        delay_ms: u64,
        reason: String,
        discard_partial: bool,
    },
    /// `from` gave up (after its retries, or at once for errors a retry cannot fix) and `to`
    /// answers instead.
    ModelFallback {
        from: String,
        to: String,
        reason: String,
        discard_partial: bool,
    },
    /// Older conversation moved to archive entry `archive_id`; a summary replaces it.
    Compacted {
        tokens_before: u64,
        tokens_after: u64,
        archive_id: i64,
        kind: CompactionKind,
    },
    TurnFinished {
        turn: u64,
        status: TurnStatus,
        /// Why the turn ended, when it did not simply complete.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        message: Option<String>,
        /// What the turn's model calls used (attempts that broke off included): cache reads
        /// and writes show whether its prompt was read from the cache.
        #[serde(default)]
        usage: Usage,
        /// What the turn cost, in dollars.
        #[serde(default)]
        cost_usd: f64,
    },
    /// Capabilities or MCP tools entered or left the tool list (by tool name, `cap_*` or
    /// `mcp__*`): a query, a create or a tool search brought them, an MCP server announced a
    /// new list, or compaction or the token budget took them away.
    ToolsChanged {
        added: Vec<String>,
        removed: Vec<String>,
    },
    /// The answer to `Op::ListMcpServers`.
    McpServers {
        servers: Vec<McpServerStatus>,
    },
    /// A hook (the person's command on an event, such as `PreToolUse`) failed, timed out,
    /// blocked something or had a message for the person; the session goes on.
    Hook {
        event: String,
        message: String,
    },
    /// Something the user should know that is not an error.
    Notice {
        message: String,
    },
    /// The result of a schedule this session made (a run of `mnemo serve`), for the person:
    /// front ends show it, and a terminal that can raise a desktop notification does.
    Reminder {
        title: String,
        body: String,
    },
    Error {
        message: String,
    },
    /// The agent's plan for the task as it now stands (the `todo` tool): every step in order
    /// with its status. An empty list means the plan was cleared.
    TodoUpdated {
        items: Vec<TodoItem>,
    },
    /// The answer to `Op::ListTurns`, oldest first.
    Turns {
        turns: Vec<TurnSummary>,
    },
    /// `Op::Rewind` was carried out.
    Rewound {
        what: RewindWhat,
        report: RewindReport,
    },
    /// The person's own slash commands this session expands (sent after `SessionStarted`): a
    /// message `/NAME args` becomes the command's prompt.
    UserCommands {
        commands: Vec<UserCommandInfo>,
    },
    /// The tool call `call_id` (`ask_user`) waits until the front end answers with
    /// `Op::AnswerQuestion`; the person may pick one of `choices` or type an answer.
    QuestionAsked {
        id: String,
        call_id: String,
        question: String,
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        choices: Vec<String>,
    },
    /// The question `id` is closed: answered, or withdrawn (`Dismissed`) by an interrupt.
    QuestionResolved {
        id: String,
        answer: QuestionAnswer,
    },
}
