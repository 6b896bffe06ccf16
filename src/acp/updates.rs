//! Session events as ACP `session/update`s: text and thoughts as chunks, tool calls with
//! their kind, status, locations and diffs.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use agent_client_protocol::v1::schema::{
    ConfigOptionUpdate, Content, ContentBlock, ContentChunk, CurrentModeUpdate, Diff, Plan,
    PlanEntry, PlanEntryPriority, PlanEntryStatus, SessionConfigOption,
    SessionConfigOptionCategory, SessionConfigSelectOption, SessionUpdate, Terminal, TerminalId,
    ToolCall, ToolCallContent, ToolCallLocation, ToolCallStatus, ToolCallUpdate,
    ToolCallUpdateFields, ToolKind,
};
use serde_json::Value;

use crate::present;
use crate::protocol::{ApprovalAction, Event, TodoItem, TodoStatus, ToolStatus};
use crate::tools::describe::key_argument;

/// What a tool call's result shows in the editor, at most (the model's copy is capped too).
const OUTPUT_SHOWN: usize = 16 * 1024;

fn text(text: impl Into<String>) -> ContentChunk {
    ContentChunk::new(ContentBlock::from(text.into()))
}

/// The updates of an event of a running session. The client's own prompts are not echoed.
pub(super) fn live(event: &Event, workspace: &Path) -> Vec<SessionUpdate> {
    match event {
        Event::TextDelta { text: delta } => vec![SessionUpdate::AgentMessageChunk(text(delta))],
        Event::ReasoningDelta { text: delta } => {
            vec![SessionUpdate::AgentThoughtChunk(text(delta))]
        }
        Event::ToolCallStarted {
            call_id,
            name,
            arguments,
        } => vec![SessionUpdate::ToolCall(started(
            call_id, name, arguments, workspace,
        ))],
        Event::ToolCallFinished {
            call_id,
            status,
            output,
            ..
        } => vec![SessionUpdate::ToolCallUpdate(finished(
            call_id, *status, output,
        ))],
        Event::ApprovalModeChanged { mode } => vec![SessionUpdate::CurrentModeUpdate(
            CurrentModeUpdate::new(mode.label()),
        )],
        Event::ModelChanged { model, .. } => note(&present::model_changed(model)),
        Event::TodoUpdated { items } => vec![SessionUpdate::Plan(plan(items))],
        Event::Retry {
            discard_partial: true,
            ..
        }
        | Event::ModelFallback {
            discard_partial: true,
            ..
        } => note(present::ANSWER_STARTS_OVER),
        Event::Notice { message } => note(message),
        Event::Hook { event, message } => note(&format!("hook {event}: {message}")),
        Event::Reminder { title, body } => note(&format!("{title}: {body}")),
        Event::Error { message } => note(&format!("error: {message}")),
        _ => Vec::new(),
    }
}

/// The agent's plan as the editor's plan view takes it: the whole list each time.
fn plan(items: &[TodoItem]) -> Plan {
    let entries = items
        .iter()
        .map(|item| {
            let status = match item.status {
                TodoStatus::Pending => PlanEntryStatus::Pending,
                TodoStatus::InProgress => PlanEntryStatus::InProgress,
                TodoStatus::Done => PlanEntryStatus::Completed,
            };
            PlanEntry::new(item.step.clone(), PlanEntryPriority::Medium, status)
        })
        .collect();
    Plan::new(entries)
}

/// The updates of an event of a stored session's history (`session/load`).
pub(super) fn replayed(event: &Event, workspace: &Path) -> Vec<SessionUpdate> {
    match event {
        Event::UserMessage {
            text: said, kind, ..
        } if !kind.by_mnemo() => {
            vec![SessionUpdate::UserMessageChunk(text(said))]
        }
        Event::AssistantMessage { text: said } => {
            vec![SessionUpdate::AgentMessageChunk(text(said))]
        }
        Event::ReasoningDelta { .. }
        | Event::ToolCallStarted { .. }
        | Event::ToolCallFinished { .. } => live(event, workspace),
        _ => Vec::new(),
    }
}

/// A line of its own in the agent's message.
fn note(message: &str) -> Vec<SessionUpdate> {
    vec![SessionUpdate::AgentMessageChunk(text(format!(
        "\n{message}\n"
    )))]
}

fn kind(name: &str) -> ToolKind {
    match name {
        "read_file" | "list_dir" | "read_skill_resource" => ToolKind::Read,
        "write_file" | "edit_file" => ToolKind::Edit,
        "shell" => ToolKind::Execute,
        "grep" | "glob" | "memory_search" | "capability_query" | "mcp_tool_search" => {
            ToolKind::Search
        }
        "web_fetch" => ToolKind::Fetch,
        _ => ToolKind::Other,
    }
}

fn path_in(workspace: &Path, arguments: &Value) -> Option<PathBuf> {
    let path = arguments.get("path").and_then(Value::as_str)?;
    Some(workspace.join(path))
}

fn started(call_id: &str, name: &str, arguments: &Value, workspace: &Path) -> ToolCall {
    let argument = key_argument(name, arguments);
    let title = if argument.is_empty() {
        name.to_string()
    } else {
        format!("{name} {argument}")
    };
    let path = path_in(workspace, arguments);
    let locations: Vec<ToolCallLocation> = path.iter().map(ToolCallLocation::new).collect();
    let field = |key: &str| arguments.get(key).and_then(Value::as_str);
    let diff = match (name, &path) {
        ("edit_file", Some(path)) => field("new_string")
            .map(|new| Diff::new(path, new).old_text(field("old_string").map(str::to_string))),
        ("write_file", Some(path)) => field("content").map(|new| Diff::new(path, new)),
        _ => None,
    };
    ToolCall::new(call_id.to_string(), title)
        .kind(kind(name))
        .status(ToolCallStatus::InProgress)
        .locations(locations)
        .content(diff.map(ToolCallContent::Diff).into_iter().collect())
        .raw_input(arguments.clone())
}

/// The live output of running tool calls, up to what the editor is shown of each.
#[derive(Default)]
pub(super) struct Outputs(HashMap<String, String>);

impl Outputs {
    /// The call's output so far with `chunk` added, as an update; `None` once the call has
    /// shown all it may.
    pub(super) fn add(&mut self, call_id: &str, chunk: &str) -> Option<SessionUpdate> {
        let shown = self.0.entry(call_id.to_string()).or_default();
        if shown.len() >= OUTPUT_SHOWN {
            return None;
        }
        shown.push_str(chunk);
        cap(shown);
        let content = vec![ToolCallContent::Content(Content::new(ContentBlock::from(
            shown.clone(),
        )))];
        Some(SessionUpdate::ToolCallUpdate(ToolCallUpdate::new(
            call_id.to_string(),
            ToolCallUpdateFields::new().content(content),
        )))
    }

    pub(super) fn finished(&mut self, call_id: &str) {
        self.0.remove(call_id);
    }
}

/// Cuts `text` to what the editor is shown.
fn cap(text: &mut String) {
    if text.len() > OUTPUT_SHOWN {
        let mut cut = OUTPUT_SHOWN;
        while !text.is_char_boundary(cut) {
            cut -= 1;
        }
        text.truncate(cut);
        text.push_str("\n…");
    }
}

fn finished(call_id: &str, status: ToolStatus, output: &str) -> ToolCallUpdate {
    let status = match status {
        ToolStatus::Ok => ToolCallStatus::Completed,
        ToolStatus::Error => ToolCallStatus::Failed,
    };
    let mut shown = output.to_string();
    cap(&mut shown);
    let content = vec![ToolCallContent::Content(Content::new(ContentBlock::from(
        shown,
    )))];
    ToolCallUpdate::new(
        call_id.to_string(),
        ToolCallUpdateFields::new().status(status).content(content),
    )
}

/// The tool call as a permission request shows it: what it would do and why it asks.
pub(super) fn asking(
    call_id: &str,
    action: &ApprovalAction,
    reason: &str,
    workspace: &Path,
) -> ToolCallUpdate {
    let (title, body, locations) = match action {
        ApprovalAction::Command {
            command, sandbox, ..
        } => (
            format!("Run `{command}`"),
            format!("```\n{command}\n```\nsandbox: {sandbox}"),
            Vec::new(),
        ),
        ApprovalAction::Write { path, diff } => (
            format!("Write {path}"),
            format!("```diff\n{diff}\n```"),
            vec![ToolCallLocation::new(workspace.join(path))],
        ),
        ApprovalAction::Memory { change } | ApprovalAction::Schedule { change } => {
            (change.clone(), change.clone(), Vec::new())
        }
        ApprovalAction::McpCall {
            server,
            tool,
            arguments,
        } => (
            format!("{server}: {tool}"),
            format!("```json\n{arguments}\n```"),
            Vec::new(),
        ),
        ApprovalAction::Network { host, port } => (
            format!("Reach {host}"),
            format!("A connection to {host}:{port}, which is not an allowed domain."),
            Vec::new(),
        ),
    };
    let content = vec![ToolCallContent::Content(Content::new(ContentBlock::from(
        format!("{body}\n\n{reason}"),
    )))];
    ToolCallUpdate::new(
        call_id.to_string(),
        ToolCallUpdateFields::new()
            .title(title)
            .status(ToolCallStatus::Pending)
            .content(content)
            .locations(locations),
    )
}

/// The id of the model picker among the session's config options.
pub(super) const MODEL_OPTION: &str = "model";

/// The model picker: `current` first, then the other configured models.
pub(super) fn model_option(current: &str, models: &[String]) -> SessionConfigOption {
    let others = models.iter().filter(|model| *model != current);
    let choices: Vec<SessionConfigSelectOption> = std::iter::once(current)
        .chain(others.map(String::as_str))
        .map(|model| SessionConfigSelectOption::new(model.to_string(), model.to_string()))
        .collect();
    SessionConfigOption::select(MODEL_OPTION, "Model", current.to_string(), choices)
        .category(SessionConfigOptionCategory::Model)
}

/// The session now uses `current`.
pub(super) fn model_update(current: &str, models: &[String]) -> SessionUpdate {
    SessionUpdate::ConfigOptionUpdate(ConfigOptionUpdate::new(vec![model_option(current, models)]))
}

/// A finished tool call's result shown below the terminal its command ran in (the editor
/// keeps showing a released terminal's output).
pub(super) fn keep_terminal(update: &mut SessionUpdate, call_id: &str, terminal: TerminalId) {
    if let SessionUpdate::ToolCallUpdate(finished) = update
        && *finished.tool_call_id.0 == *call_id
    {
        let shown = ToolCallContent::Terminal(Terminal::new(terminal));
        let mut content = vec![shown];
        content.extend(finished.fields.content.take().unwrap_or_default());
        finished.fields.content = Some(content);
    }
}
