//! Events in words for people, worded once. The front ends (the terminal of `mnemo run`, the
//! TUI, Telegram) only lay these lines out: colours, widgets, markdown. Only protocol values
//! come in, so a front end cannot word an event its own way by reaching into the agent.

use crate::protocol::{
    AgentStatus, CompactionKind, TodoItem, TodoStatus, TurnStatus, UserMessageKind,
};

#[cfg(test)]
mod tests;

/// A model call failed and is tried again.
pub fn retry(model: &str, attempt: u32, delay_ms: u64, reason: &str) -> String {
    format!(
        "{model}: {reason}; attempt {attempt} in {:.1} s",
        delay_ms as f64 / 1000.0
    )
}

/// The session goes on with another model (`/model`, or another client's `set_model`).
pub fn model_changed(model: &str) -> String {
    format!("Now using {model}")
}

/// A model gave up and the next one in the chain answers.
pub fn fallback(from: &str, to: &str, reason: &str) -> String {
    format!("{from} failed ({reason}); {to} takes over")
}

/// Said where text already shown cannot be taken back when the attempt that streamed it
/// is retried.
pub const ANSWER_STARTS_OVER: &str = "the answer above broke off and starts over";

/// Why mnemo wrote to the model itself, for a message of `kind`; `None` for what the person
/// wrote.
pub fn written_by_mnemo(kind: UserMessageKind) -> Option<&'static str> {
    match kind {
        UserMessageKind::Continuation => {
            Some("the reply was cut off by the output limit; asking it to go on")
        }
        UserMessageKind::StepLimit => {
            Some("the turn reached its step limit; asking for what is done and what is left")
        }
        UserMessageKind::SkillRequest => {
            Some("asking whether this work is worth keeping as a skill")
        }
        UserMessageKind::Prompt | UserMessageKind::Injected | UserMessageKind::Queued => None,
    }
}

/// A tool call that failed, by its first line of output.
pub fn tool_failed(name: &str, output: &str) -> String {
    let first = output.lines().next().unwrap_or_default();
    format!("{name}: {first}")
}

/// A tool call that succeeded, with how long it took and, where the result is written for the
/// model, what it did in words.
pub fn tool_succeeded(name: &str, duration_ms: u64, output: &str) -> String {
    match crate::tools::describe::result_line(name, output) {
        Some(line) => format!("{name} ({duration_ms} ms): {line}"),
        None => format!("{name} ({duration_ms} ms)"),
    }
}

/// A sub-agent started.
pub fn agent_started(run_id: &str, label: &str) -> String {
    format!("sub-agent {run_id}: {label}")
}

/// A sub-agent finished, with the first line of its answer or why it stopped.
pub fn agent_finished(run_id: &str, status: AgentStatus, summary: &str) -> String {
    format!("sub-agent {run_id} {}: {summary}", status.label())
}

/// "1 sub-agent", "3 sub-agents".
pub fn sub_agents(count: u32) -> String {
    match count {
        1 => "1 sub-agent".to_string(),
        n => format!("{n} sub-agents"),
    }
}

/// The line a turn that did not simply complete ends with; `None` for a completed turn.
/// `message` says why, when the agent knows.
pub fn turn_ending(status: TurnStatus, message: Option<&str>) -> Option<String> {
    let what = match status {
        TurnStatus::Completed => return None,
        TurnStatus::Interrupted => return Some("Stopped.".to_string()),
        TurnStatus::LoopDetected => "Stopped: a repeated call",
        TurnStatus::StepLimit => "Stopped: the step limit",
        TurnStatus::Failed => "The turn failed",
        TurnStatus::CutOff => "Cut off by the output limit",
        TurnStatus::Refused => "Refused",
    };
    Some(match message {
        Some(why) => format!("{what}: {why}"),
        None => what.to_string(),
    })
}

/// Tokens as "950", "12.3k", "1.2M".
pub fn compact_count(n: u64) -> String {
    match n {
        0..1_000 => n.to_string(),
        1_000..1_000_000 => format!("{:.1}k", n as f64 / 1e3),
        _ => format!("{:.1}M", n as f64 / 1e6),
    }
}

/// Older conversation moved to an archive entry and a summary replaced it.
pub fn compacted(before: u64, after: u64, archive_id: i64, kind: CompactionKind) -> String {
    let how = match kind {
        CompactionKind::Model => "",
        CompactionKind::Mechanical => " (mechanically)",
    };
    format!(
        "Compacted the conversation{how}: {} → {} tokens; the older part is archive entry \
         {archive_id}",
        compact_count(before),
        compact_count(after)
    )
}

/// The agent's plan's heading: how far it is.
pub fn todo_heading(items: &[TodoItem]) -> String {
    let done = items
        .iter()
        .filter(|i| i.status == TodoStatus::Done)
        .count();
    match items.len() {
        0 => "Plan cleared".into(),
        n => format!("Plan · {done} of {n} done"),
    }
}

/// One step of the plan as a line: its box and its text.
pub fn todo_step(item: &TodoItem) -> String {
    format!("{} {}", item.status.mark(), item.step)
}

/// Plan mode went on or off.
pub fn plan_mode(on: bool) -> &'static str {
    match on {
        true => "plan mode: the agent reads and thinks but changes nothing, and ends with a plan",
        false => "plan mode is off",
    }
}

/// Said under a proposed plan where no picker can offer the choices (`mnemo run`).
pub const PLAN_PROPOSED: &str = "the plan above was proposed and nothing was changed; carry it \
    out with `mnemo --continue run --approve-plan`, or answer with what to change";
