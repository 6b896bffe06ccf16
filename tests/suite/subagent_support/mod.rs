//! What the sub-agent tests share: scripted turns for one session (by `when`), and reading
//! the events, the child sessions and their stored messages.

// Each test binary uses a different part of this module.
#![allow(dead_code)]

use mnemo::llm::{ContentBlock, Message};
use mnemo::memory::types::SessionRow;
use mnemo::protocol::{AgentStatus, Event, Op, ToolStatus};
use serde_json::{Value, json};

use super::agent_support::Harness;

pub fn call(name: &str, arguments: Value) -> Value {
    json!({"name": name, "arguments": arguments})
}

/// A turn for the session whose latest user text contains `when`.
pub fn turn(when: &str, body: Value) -> Value {
    let mut body = body;
    body["when"] = json!(when);
    body
}

pub fn tool_outputs(events: &[Event]) -> Vec<(String, ToolStatus, String)> {
    events
        .iter()
        .filter_map(|e| match e {
            Event::ToolCallFinished {
                name,
                status,
                output,
                ..
            } => Some((name.clone(), *status, output.clone())),
            _ => None,
        })
        .collect()
}

pub fn output_json(events: &[Event], tool: &str) -> Value {
    let (_, _, output) = tool_outputs(events)
        .into_iter()
        .find(|(name, ..)| name == tool)
        .unwrap_or_else(|| panic!("no {tool} result in {events:#?}"));
    serde_json::from_str(&output).unwrap_or_else(|e| panic!("{tool} output {output:?}: {e}"))
}

pub fn finished(events: &[Event]) -> Vec<(String, AgentStatus)> {
    events
        .iter()
        .filter_map(|e| match e {
            Event::AgentFinished { run_id, status, .. } => Some((run_id.clone(), *status)),
            _ => None,
        })
        .collect()
}

pub async fn children(session: &mnemo::agent::Session, id: &str) -> Vec<SessionRow> {
    let id = id.to_string();
    session
        .store()
        .call(move |db| db.child_sessions(&id))
        .await
        .unwrap_or_else(|e| panic!("{e}"))
}

pub async fn messages(session: &mnemo::agent::Session, id: &str) -> Vec<Message> {
    let id = id.to_string();
    session
        .store()
        .call(move |db| db.all_messages(&id))
        .await
        .unwrap_or_else(|e| panic!("{e}"))
        .into_iter()
        .map(|m| m.message)
        .collect()
}

pub fn texts<M: std::borrow::Borrow<Message>>(messages: &[M]) -> Vec<String> {
    messages
        .iter()
        .map(|m| m.borrow())
        .filter(|m| {
            m.content
                .iter()
                .any(|b| matches!(b, ContentBlock::Text { .. }))
        })
        .map(|m| m.text())
        .collect()
}

pub async fn run_prompt(h: &mut Harness, text: &str) -> Vec<Event> {
    h.send(Op::user_input(text)).await;
    h.until_turn_finished().await
}
