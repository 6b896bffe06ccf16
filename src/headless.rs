//! `mnemo run`: one prompt, no TUI. The reply streams to stdout, a compact tool log to
//! stderr; with `--json` every event is printed as one JSON line instead.

// A new event must be worded here on purpose, not dropped by a `_` arm.
#![deny(
    clippy::wildcard_enum_match_arm,
    clippy::match_wildcard_for_single_variants
)]

use std::io::Write;

use crate::host::Attachment;
use crate::present;
use crate::protocol::{Event, Op, QuestionAnswer, ToolStatus, TurnStatus};
use crate::signals::{Signals, Stop};

/// How long an interrupted turn may take to stop before `mnemo run` stops waiting for it.
const STOP_GRACE: std::time::Duration = std::time::Duration::from_secs(5);

async fn sleep_until(deadline: Option<tokio::time::Instant>) {
    match deadline {
        Some(deadline) => tokio::time::sleep_until(deadline).await,
        None => std::future::pending().await,
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OutputMode {
    Text,
    Json,
}

/// How the turn ended, for the exit status and the one-line reason.
#[derive(Debug, Clone, PartialEq)]
pub struct RunReport {
    pub status: TurnStatus,
    pub message: Option<String>,
    /// The signal that stopped the run, if one did: it decides the exit status.
    pub stopped_by: Option<Stop>,
    /// Whether `message` was already printed as the turn's error (it is then not said twice).
    pub shown: bool,
}

impl RunReport {
    pub fn exit_code(&self) -> i32 {
        if let Some(stop) = self.stopped_by {
            return i32::from(stop.exit_code());
        }
        match self.status {
            TurnStatus::Completed => 0,
            TurnStatus::Failed => 1,
            TurnStatus::StepLimit => 3,
            TurnStatus::LoopDetected => 4,
            TurnStatus::CutOff => 5,
            TurnStatus::Refused => 6,
            TurnStatus::Interrupted => 130,
        }
    }
}

/// Sends `opening` (the prompt, and what goes before it) to the attached session and prints
/// events until the turn ends, then detaches (the caller stops a session of its own). Ctrl+C, SIGTERM and SIGHUP interrupt the
/// turn (what was streamed is kept, commands are killed); a second one stops waiting at once.
pub async fn run_prompt(
    mut handle: Attachment,
    opening: Vec<Op>,
    mode: OutputMode,
    out: &mut impl Write,
    err: &mut impl Write,
) -> std::io::Result<RunReport> {
    let send_failed = || std::io::Error::other("the agent task ended unexpectedly");
    for op in opening {
        handle.ops.send(op).await.map_err(|_| send_failed())?;
    }
    let mut at_line_start = true;
    // Sub-agents still running in the background report back in another turn: wait for it.
    let mut agents_pending = false;
    let mut between_turns = false;
    let mut signals = Signals::new()?;
    let mut stopped_by: Option<Stop> = None;
    // After a signal the turn has this long to stop; a turn stuck in a step is left behind.
    let mut give_up: Option<tokio::time::Instant> = None;
    // The last error printed, so that the turn's ending does not repeat it.
    let mut last_error: Option<String> = None;
    let report = loop {
        let event = tokio::select! {
            event = handle.events.recv() => event.map(|numbered| numbered.event),
            () = sleep_until(give_up), if give_up.is_some() => {
                let name = stopped_by.map_or("a signal", Stop::name);
                break RunReport {
                    status: TurnStatus::Interrupted,
                    message: Some(format!(
                        "stopped by {name}; the turn did not stop within {} s",
                        STOP_GRACE.as_secs()
                    )),
                    stopped_by,
                    shown: false,
                };
            }
            stop = signals.recv() => {
                let _ = handle.ops.send(Op::Interrupt).await;
                give_up.get_or_insert_with(|| tokio::time::Instant::now() + STOP_GRACE);
                let again = stopped_by.replace(stop).is_some();
                if between_turns || again {
                    // The interrupt cancels the sub-agents; no turn will follow.
                    break RunReport {
                        status: TurnStatus::Interrupted,
                        message: Some(format!("stopped by {}", stop.name())),
                        stopped_by,
                        shown: false,
                    };
                }
                continue;
            }
        };
        let Some(event) = event else {
            let record = crate::crash::last_record()
                .map(|path| format!("; a crash record was written to {}", path.display()))
                .unwrap_or_default();
            break RunReport {
                status: TurnStatus::Failed,
                message: Some(format!("the agent task ended unexpectedly{record}")),
                stopped_by,
                shown: false,
            };
        };
        if let Event::Error { message } = &event
            && mode == OutputMode::Text
        {
            last_error = Some(message.clone());
        }
        if mode == OutputMode::Json {
            serde_json::to_writer(&mut *out, &event)?;
            out.write_all(b"\n")?;
        } else {
            print_event(&event, out, err, &mut at_line_start)?;
        }
        match event {
            Event::AgentsPending { .. } => agents_pending = true,
            // Attached to a host that lets its sessions ask: nobody here answers.
            Event::QuestionAsked { id, .. } => {
                let answer = QuestionAnswer::Unavailable;
                let _ = handle.ops.send(Op::AnswerQuestion { id, answer }).await;
            }
            Event::TurnStarted { .. } => between_turns = false,
            Event::TurnFinished { .. } if std::mem::take(&mut agents_pending) => {
                between_turns = true;
            }
            Event::TurnFinished {
                status, message, ..
            } => {
                let message = message.or(stopped_by.map(|s| format!("stopped by {}", s.name())));
                let shown = message.is_some() && message == last_error;
                break RunReport {
                    status,
                    message,
                    stopped_by,
                    shown,
                };
            }
            Event::SessionStarted { .. }
            | Event::QueuedWithdrawn { .. }
            | Event::UserMessage { .. }
            | Event::TextDelta { .. }
            | Event::ReasoningDelta { .. }
            | Event::AssistantMessage { .. }
            | Event::ToolCallStarted { .. }
            | Event::ApprovalRequested { .. }
            | Event::ApprovalModeChanged { .. }
            | Event::ApprovalResolved { .. }
            | Event::AgentStarted { .. }
            | Event::AgentActivity { .. }
            | Event::AgentFinished { .. }
            | Event::ToolOutput { .. }
            | Event::ToolCallFinished { .. }
            | Event::Usage { .. }
            | Event::Retry { .. }
            | Event::ModelFallback { .. }
            | Event::Compacted { .. }
            | Event::Notice { .. }
            | Event::Hook { .. }
            | Event::Reminder { .. }
            | Event::ToolsChanged { .. }
            | Event::McpServers { .. }
            | Event::FrontEndRequest { .. }
            | Event::FrontEndWithdrawn { .. }
            | Event::ModelChanged { .. }
            | Event::TodoUpdated { .. }
            | Event::PlanModeChanged { .. }
            | Event::PlanProposed { .. }
            | Event::Turns { .. }
            | Event::Rewound { .. }
            | Event::UserCommands { .. }
            | Event::QuestionResolved { .. }
            | Event::Error { .. } => {}
        }
    };
    if mode == OutputMode::Text && !at_line_start {
        out.write_all(b"\n")?;
    }
    out.flush()?;
    drop(handle);
    Ok(report)
}

fn print_event(
    event: &Event,
    out: &mut impl Write,
    err: &mut impl Write,
    at_line_start: &mut bool,
) -> std::io::Result<()> {
    match event {
        Event::TextDelta { text } => {
            out.write_all(text.as_bytes())?;
            out.flush()?;
            *at_line_start = text.ends_with('\n');
        }
        Event::AssistantMessage { text } if !text.is_empty() && !*at_line_start => {
            out.write_all(b"\n")?;
            *at_line_start = true;
        }
        Event::ToolCallStarted {
            name, arguments, ..
        } => {
            writeln!(
                err,
                "• {name} {}",
                crate::tools::describe::key_argument(name, arguments)
            )?;
        }
        Event::ToolCallFinished {
            name,
            status,
            output,
            duration_ms,
            ..
        } => match status {
            ToolStatus::Ok => writeln!(
                err,
                "  ✓ {}",
                present::tool_succeeded(name, *duration_ms, output)
            )?,
            ToolStatus::Error => writeln!(err, "  ✗ {}", present::tool_failed(name, output))?,
        },
        Event::UserMessage { kind, .. } if kind.by_mnemo() => {
            if let Some(why) = present::written_by_mnemo(*kind) {
                writeln!(err, "… {why}")?;
            }
        }
        Event::UserMessage { text, kind, .. }
            if *kind != crate::protocol::UserMessageKind::Prompt =>
        {
            writeln!(err, "» {text}")?;
        }
        Event::AgentStarted {
            run_id,
            depth,
            label,
            ..
        } => {
            let indent = "  ".repeat(*depth as usize);
            writeln!(err, "{indent}⇢ {}", present::agent_started(run_id, label))?;
        }
        Event::AgentFinished {
            run_id,
            status,
            summary,
        } => writeln!(
            err,
            "  ⇠ {}",
            present::agent_finished(run_id, *status, summary)
        )?,
        Event::AgentsPending { count } => writeln!(
            err,
            "… waiting for {} in the background",
            present::sub_agents(*count)
        )?,
        Event::ApprovalModeChanged { mode } => writeln!(err, "note: approval {}", mode.explain())?,
        Event::ModelChanged { model, .. } => {
            writeln!(err, "note: {}", present::model_changed(model))?;
        }
        Event::TodoUpdated { items } => {
            writeln!(err, "☰ {}", present::todo_heading(items))?;
            for item in items {
                writeln!(err, "  {}", present::todo_step(item))?;
            }
        }
        Event::PlanModeChanged { on } => writeln!(err, "note: {}", present::plan_mode(*on))?,
        Event::PlanProposed { .. } => writeln!(err, "note: {}", present::PLAN_PROPOSED)?,
        Event::Error { message } => writeln!(err, "error: {message}")?,
        Event::Rewound { report, .. } => writeln!(err, "{}", report.describe())?,
        Event::Turns { turns } => writeln!(err, "{}", crate::rewind::describe_turns(turns))?,
        Event::Notice { message } => writeln!(err, "note: {message}")?,
        Event::Hook { event, message } => writeln!(err, "hook {event}: {message}")?,
        Event::Reminder { title, body } => writeln!(err, "note: {title}: {body}")?,
        Event::ToolsChanged { added, removed } => writeln!(
            err,
            "note: {}",
            crate::capabilities::describe_change(added, removed)
        )?,
        Event::Compacted {
            tokens_before,
            tokens_after,
            archive_id,
            kind,
        } => writeln!(
            err,
            "⇣ {}",
            present::compacted(*tokens_before, *tokens_after, *archive_id, *kind)
        )?,
        Event::Retry {
            model,
            attempt,
            delay_ms,
            reason,
            discard_partial,
        } => {
            end_partial(out, err, *discard_partial, at_line_start)?;
            writeln!(
                err,
                "↻ {}",
                present::retry(model, *attempt, *delay_ms, reason)
            )?;
        }
        Event::ModelFallback {
            from,
            to,
            reason,
            discard_partial,
        } => {
            end_partial(out, err, *discard_partial, at_line_start)?;
            writeln!(err, "↪ {}", present::fallback(from, to, reason))?;
        }
        Event::SessionStarted { .. }
        | Event::TurnStarted { .. }
        | Event::UserMessage { .. }
        | Event::ReasoningDelta { .. }
        | Event::AssistantMessage { .. }
        | Event::ToolOutput { .. }
        | Event::ApprovalRequested { .. }
        | Event::ApprovalResolved { .. }
        | Event::AgentActivity { .. }
        | Event::Usage { .. }
        | Event::QueuedWithdrawn { .. }
        | Event::McpServers { .. }
        | Event::FrontEndRequest { .. }
        | Event::FrontEndWithdrawn { .. }
        | Event::UserCommands { .. }
        | Event::QuestionAsked { .. }
        | Event::QuestionResolved { .. }
        | Event::TurnFinished { .. } => {}
    }
    Ok(())
}

/// Printed text cannot be taken back; when an attempt that streamed is retried, close its
/// line and say that the answer starts over.
fn end_partial(
    out: &mut impl Write,
    err: &mut impl Write,
    discard: bool,
    at_line_start: &mut bool,
) -> std::io::Result<()> {
    if discard {
        if !*at_line_start {
            out.write_all(b"\n")?;
            out.flush()?;
            *at_line_start = true;
        }
        writeln!(err, "({})", present::ANSWER_STARTS_OVER)?;
    }
    Ok(())
}
