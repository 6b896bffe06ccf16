//! Forks on the scripted provider: they see the conversation at the fork (with what the
//! model said as it forked), gather_all returns every answer, and a fork never gathered
//! reports back after the turn instead of being dropped.

use crate::agent_support;
use crate::subagent_support;

use agent_support::start;
use mnemo::llm::{Message, Role};
use mnemo::protocol::{Event, TurnStatus};
use serde_json::json;
use subagent_support::*;

#[tokio::test]
async fn forks_see_the_context_at_the_fork_and_gather_all_returns_every_answer() {
    let script = json!({"turns": [
        turn("PARENT", json!({"tool_calls": [
            call("fork", json!({"task": "alpha", "instruction": "do alpha"})),
            call("fork", json!({"task": "beta", "instruction": "do beta"}))
        ]})),
        turn("Task: alpha", json!({"text": "alpha result", "delay_ms": 100})),
        turn("Task: beta", json!({"text": "beta result", "delay_ms": 100})),
        turn("PARENT", json!({"tool_calls": [call("gather_all", json!({}))]})),
        turn("PARENT", json!({"text": "both done"})),
        turn("LATER", json!({"text": "a later answer"}))
    ]});
    let mut h = start(script, |_| {}).await;
    let events = run_prompt(&mut h, "PARENT: split the work").await;
    let gathered = output_json(&events, "gather_all");
    assert_eq!(
        gathered,
        json!({
            "f1": {"status": "completed", "response": "alpha result"},
            "f2": {"status": "completed", "response": "beta result"}
        })
    );
    run_prompt(&mut h, "LATER: more").await;
    let session = h.finish().await;
    let forks = children(&session, &session.id).await;
    assert_eq!(forks.len(), 2);
    for fork in &forks {
        let stored = messages(&session, &fork.id).await;
        let first = stored.first().map(Message::text);
        assert_eq!(first.as_deref(), Some("PARENT: split the work"));
        let all = texts(&stored).join("\n");
        assert!(
            !all.contains("LATER"),
            "a later parent message reached a fork"
        );
        assert_eq!(stored.last().map(|m| m.role), Some(Role::Assistant));
    }
    // And the forks changed nothing in the parent.
    assert!(
        texts(session.history())
            .iter()
            .all(|t| !t.contains("alpha result"))
    );
}

#[tokio::test]
async fn a_fork_sees_what_the_model_said_as_it_forked() {
    let script = json!({"turns": [
        turn("PARENT", json!({
            "text": "The failing test is in parser.rs; I'll have a fork check the lexer.",
            "tool_calls": [call("fork", json!({"task": "check the lexer", "instruction": ""}))]
        })),
        turn("Task: check the lexer", json!({"text": "the lexer is fine"})),
        turn("PARENT", json!({"tool_calls": [call("gather_all", json!({}))]})),
        turn("PARENT", json!({"text": "done"}))
    ]});
    let mut h = start(script, |_| {}).await;
    run_prompt(&mut h, "PARENT: find the bug").await;
    let session = h.finish().await;
    let fork = &children(&session, &session.id).await[0];
    let seen = texts(&messages(&session, &fork.id).await).join("\n");
    assert!(seen.contains("I'll have a fork check the lexer."), "{seen}");
}

#[tokio::test]
async fn a_fork_never_gathered_reports_back_after_the_turn() {
    let script = json!({"turns": [
        turn("PARENT", json!({"tool_calls": [call("fork", json!({"task": "count the todos", "instruction": ""}))]})),
        turn("Task: count the todos", json!({"text": "there are 7 todos", "delay_ms": 200})),
        turn("PARENT", json!({"text": "I moved on without waiting"})),
        turn("[fork f1 completed", json!({"text": "the fork found 7 todos"}))
    ]});
    let mut h = start(script, |_| {}).await;
    let first = run_prompt(&mut h, "PARENT: start").await;
    assert!(
        first
            .iter()
            .any(|e| matches!(e, Event::AgentsPending { count: 1 })),
        "the open fork was not announced: {first:#?}"
    );
    let second = h.until_turn_finished().await;
    let injected = second.iter().any(|e| matches!(
        e,
        Event::UserMessage { text, .. } if text.starts_with("[fork f1 completed in the background]")
            && text.contains("there are 7 todos")
    ));
    assert!(injected, "{second:#?}");
    assert!(second.iter().any(|e| matches!(
        e,
        Event::TurnFinished {
            status: TurnStatus::Completed,
            ..
        }
    )));
    let session = h.finish().await;
    let last = texts(session.history()).pop().unwrap_or_default();
    assert_eq!(last, "the fork found 7 todos");
}
