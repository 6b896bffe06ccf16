//! The person's PreToolUse and PostToolUse hooks around one tool call (`crate::hooks`): the
//! call reaches them under its mnemo name and Claude Code's, with Claude Code's input fields.

use serde_json::{Map, Value};
use tokio::sync::mpsc;

use super::{ToolContext, ToolError};
use crate::hooks::{self, HookEvent, Permission};
use crate::protocol::Event;

/// Runs the PreToolUse hooks of the call of `name`: a denial is the error the model is told,
/// otherwise what they answered for the approval gate.
pub async fn before(
    ctx: &ToolContext,
    name: &str,
    input: &Value,
) -> Result<Option<(Permission, Option<String>)>, ToolError> {
    let Some(hooks) = ctx
        .approvals
        .hooks()
        .filter(|h| h.has(HookEvent::PreToolUse))
    else {
        return Ok(None);
    };
    let (names, fields) = describe(ctx, name, input);
    let outcome = hooks
        .run(
            HookEvent::PreToolUse,
            &names,
            &ctx.session_id,
            ctx.approvals.mode(),
            fields,
        )
        .await;
    for note in &outcome.notes {
        ctx.emit_hook(HookEvent::PreToolUse, note.clone()).await;
    }
    match outcome.permission {
        Some(Permission::Deny) => {
            let why = outcome.block.unwrap_or_default();
            ctx.emit_hook(HookEvent::PreToolUse, format!("denied {name}: {why}"))
                .await;
            Err(ToolError::Denied(format!(
                "a PreToolUse hook denied this: {why}"
            )))
        }
        Some(permission) => Ok(Some((permission, outcome.reason))),
        None => Ok(None),
    }
}

/// Runs the PostToolUse hooks of a call of `name` that succeeded with `output`; what they
/// say for the model (a block's reason, added context) is added to the output.
pub async fn after(ctx: &ToolContext, name: &str, input: &Value, output: String) -> String {
    let Some(hooks) = ctx
        .approvals
        .hooks()
        .filter(|h| h.has(HookEvent::PostToolUse))
    else {
        return output;
    };
    let (names, mut fields) = describe(ctx, name, input);
    let mut response = Map::new();
    response.insert("output".into(), Value::String(output.clone()));
    fields.insert("tool_response".into(), Value::Object(response));
    let outcome = hooks
        .run(
            HookEvent::PostToolUse,
            &names,
            &ctx.session_id,
            ctx.approvals.mode(),
            fields,
        )
        .await;
    for note in &outcome.notes {
        ctx.emit_hook(HookEvent::PostToolUse, note.clone()).await;
    }
    let said: Vec<String> = outcome.block.into_iter().chain(outcome.context).collect();
    match said.is_empty() {
        true => output,
        false => format!("{output}\n\n[PostToolUse hook] {}", said.join("\n")),
    }
}

/// Runs the Notification hooks for the approval question about `tool` just put to the
/// person, beside it: the question does not wait for them. What they report goes to `events`.
pub fn question_put(ctx: &ToolContext, tool: &str, events: mpsc::Sender<Event>) {
    let Some(hooks) = ctx
        .approvals
        .hooks()
        .filter(|h| h.has(HookEvent::Notification))
    else {
        return;
    };
    let (hooks, session, mode) = (hooks.clone(), ctx.session_id.clone(), ctx.approvals.mode());
    let message = format!("mnemo needs your permission to use {tool}");
    tokio::spawn(async move {
        let mut fields = Map::new();
        fields.insert("message".into(), message.into());
        fields.insert("notification_type".into(), "permission_prompt".into());
        let outcome = hooks
            .run(
                HookEvent::Notification,
                &["permission_prompt"],
                &session,
                mode,
                fields,
            )
            .await;
        for message in outcome.notes {
            let event = HookEvent::Notification.name().to_string();
            let _ = events.send(Event::Hook { event, message }).await;
        }
    });
}

/// The names a matcher is tried on, and the call's fields of the hook's input.
fn describe<'a>(
    ctx: &ToolContext,
    name: &'a str,
    input: &Value,
) -> (Vec<&'a str>, Map<String, Value>) {
    let claude = hooks::claude_tool_name(name);
    let names: Vec<&str> = [name].into_iter().chain(claude).collect();
    let mut fields = Map::new();
    fields.insert("tool_name".into(), claude.unwrap_or(name).into());
    fields.insert("mnemo_tool_name".into(), name.into());
    fields.insert(
        "tool_input".into(),
        hooks::claude_tool_input(name, input, &ctx.workspace),
    );
    fields.insert("tool_use_id".into(), ctx.call_id.clone().into());
    (names, fields)
}
