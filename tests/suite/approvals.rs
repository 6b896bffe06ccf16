//! Approvals through the protocol: the agent asks with `Event::ApprovalRequested`, the front
//! end answers with `Op::Approval`, and the call runs or is denied accordingly. Commands run
//! with full access here so these tests need no bubblewrap; tests/sandbox.rs covers the
//! sandbox itself.

use crate::agent_support;

use std::sync::Arc;
use std::time::Duration;

use agent_support::{Harness, start};
use mnemo::llm::ContentBlock;
use mnemo::protocol::{ApprovalAction, ApprovalDecision, Event, Op, ToolStatus, TurnStatus};
use mnemo::sandbox::{ApprovalMode, Escalation, SandboxConfig, SandboxPolicy};
use mnemo::tools::Approvals;
use serde_json::{Value, json};

const UNSANDBOXED: SandboxConfig = SandboxConfig {
    policy: SandboxPolicy::FullAccess,
    network: false,
};

/// A session in `mode` whose front end answers questions.
async fn session(script: Value, mode: ApprovalMode, interactive: bool) -> Harness {
    start(script, |settings| {
        let approvals = Approvals::new(UNSANDBOXED, mode);
        if interactive {
            approvals.enable_questions();
        }
        settings.approvals = Arc::new(approvals);
        settings.tool_timeout = Duration::from_secs(1);
    })
    .await
}

fn write_then_done(path: &str) -> Value {
    json!({"turns": [
        {"tool_calls": [{"name": "write_file", "arguments": {"path": path, "content": "new\n"}}]},
        {"text": "done"}
    ]})
}

fn requests(events: &[Event]) -> Vec<(String, ApprovalAction)> {
    events
        .iter()
        .filter_map(|e| match e {
            Event::ApprovalRequested { id, action, .. } => Some((id.clone(), action.clone())),
            _ => None,
        })
        .collect()
}

fn results(events: &[Event]) -> Vec<(ToolStatus, String)> {
    events
        .iter()
        .filter_map(|e| match e {
            Event::ToolCallFinished { status, output, .. } => Some((*status, output.clone())),
            _ => None,
        })
        .collect()
}

/// Every tool result the session stored, in order.
fn stored_outputs(session: &mnemo::agent::Session) -> Vec<String> {
    session
        .history()
        .iter()
        .flat_map(|m| m.content.iter())
        .filter_map(|block| match block {
            ContentBlock::ToolResult { content, .. } => Some(content.clone()),
            _ => None,
        })
        .collect()
}

async fn next_request(h: &mut Harness) -> (String, ApprovalAction) {
    let events = h
        .until(|e| matches!(e, Event::ApprovalRequested { .. }))
        .await;
    requests(&events).remove(0)
}

#[tokio::test]
async fn ask_shows_the_diff_and_an_allowed_write_happens() {
    let mut h = session(write_then_done("notes.txt"), ApprovalMode::Ask, true).await;
    std::fs::write(h.workspace().join("notes.txt"), "old\n").unwrap_or_else(|e| panic!("{e}"));
    h.send(Op::user_input("go")).await;
    let (id, action) = next_request(&mut h).await;
    let ApprovalAction::Write { path, diff } = action else {
        panic!("expected a write, got {action:?}");
    };
    assert_eq!(path, "notes.txt");
    assert!(diff.contains("-old\n+new"), "{diff}");
    assert_eq!(
        std::fs::read_to_string(h.workspace().join("notes.txt")).ok(),
        Some("old\n".into()),
        "nothing is written before the answer"
    );
    h.send(Op::Approval {
        id: id.clone(),
        decision: ApprovalDecision::AllowOnce,
    })
    .await;
    let events = h.until_turn_finished().await;
    assert!(events.contains(&Event::ApprovalResolved {
        id,
        decision: ApprovalDecision::AllowOnce
    }));
    assert_eq!(results(&events)[0].0, ToolStatus::Ok);
    assert_eq!(
        std::fs::read_to_string(h.workspace().join("notes.txt")).ok(),
        Some("new\n".into())
    );
}

#[tokio::test]
async fn a_denied_write_does_not_happen_and_the_model_is_told() {
    let mut h = session(write_then_done("x.txt"), ApprovalMode::Ask, true).await;
    h.send(Op::user_input("go")).await;
    let (id, _) = next_request(&mut h).await;
    h.send(Op::Approval {
        id,
        decision: ApprovalDecision::Deny,
    })
    .await;
    let events = h.until_turn_finished().await;
    let (status, output) = results(&events).remove(0);
    assert_eq!(status, ToolStatus::Error);
    assert!(output.contains("the user denied this action"), "{output}");
    assert!(!h.workspace().join("x.txt").exists());
    let session = h.finish().await;
    let stored = stored_outputs(&session);
    assert!(stored[0].contains("denied"), "{stored:?}");
}

#[tokio::test]
async fn allow_for_this_session_covers_the_same_command_prefix_only() {
    let call = |command: &str| json!({"tool_calls": [{"name": "shell", "arguments": {"command": command}}]});
    let script = json!({"turns": [
        call("echo one"),
        call("echo one more"),
        call("printf three"),
        {"text": "done"}
    ]});
    let mut h = session(script, ApprovalMode::Ask, true).await;
    h.send(Op::user_input("go")).await;
    let (id, action) = next_request(&mut h).await;
    assert!(matches!(&action, ApprovalAction::Command { command, .. } if command == "echo one"));
    h.send(Op::Approval {
        id,
        decision: ApprovalDecision::AllowSession,
    })
    .await;
    // `echo one more` runs unasked (the grant covers `echo one`); `printf` is another program and is asked for.
    let (id, action) = next_request(&mut h).await;
    assert!(
        matches!(&action, ApprovalAction::Command { command, .. } if command == "printf three")
    );
    h.send(Op::Approval {
        id,
        decision: ApprovalDecision::AllowOnce,
    })
    .await;
    let events = h.until_turn_finished().await;
    assert_eq!(requests(&events).len(), 0);
    let outputs = stored_outputs(&h.finish().await);
    assert_eq!(outputs.len(), 3);
    assert!(outputs[1].starts_with("one more"), "{outputs:?}");
    assert!(outputs[2].starts_with("three"), "{outputs:?}");
}

#[tokio::test]
async fn auto_runs_sandboxed_work_unasked_and_asks_for_the_network() {
    let script = json!({"turns": [
        {"tool_calls": [{"name": "write_file", "arguments": {"path": "a.txt", "content": "a"}}]},
        {"tool_calls": [{"name": "shell", "arguments": {"command": "echo hi"}}]},
        {"tool_calls": [{"name": "shell", "arguments": {"command": "curl example.com", "escalation": "network"}}]},
        {"text": "done"}
    ]});
    let mut h = start(script, |settings| {
        let sandbox = SandboxConfig::default();
        let approvals = Approvals::new(sandbox, ApprovalMode::Auto);
        approvals.enable_questions();
        settings.approvals = Arc::new(approvals);
    })
    .await;
    h.send(Op::user_input("go")).await;
    let events = h
        .until(|e| matches!(e, Event::ApprovalRequested { .. }))
        .await;
    assert_eq!(
        results(&events).len(),
        2,
        "two calls ran without a question"
    );
    let (id, action) = requests(&events).remove(0);
    let ApprovalAction::Command {
        escalation,
        sandbox,
        ..
    } = action
    else {
        panic!("expected a command");
    };
    assert_eq!(escalation, Some(Escalation::Network));
    assert_eq!(sandbox, "workspace-write, network on");
    h.send(Op::Approval {
        id,
        decision: ApprovalDecision::Deny,
    })
    .await;
    let events = h.until_turn_finished().await;
    assert!(results(&events)[0].1.contains("denied"));
}

#[tokio::test]
async fn without_a_front_end_that_answers_questions_are_denied_at_once() {
    let mut h = session(write_then_done("y.txt"), ApprovalMode::Ask, false).await;
    h.send(Op::user_input("go")).await;
    let events = h.until_turn_finished().await;
    assert!(requests(&events).is_empty());
    let (status, output) = results(&events).remove(0);
    assert_eq!(status, ToolStatus::Error);
    assert!(output.contains("nobody can answer here"), "{output}");
    assert!(output.contains("--approval auto"), "{output}");
    assert!(!h.workspace().join("y.txt").exists());
}

#[tokio::test]
async fn read_only_refuses_writes_without_asking() {
    let mut h = session(write_then_done("z.txt"), ApprovalMode::ReadOnly, true).await;
    h.send(Op::user_input("go")).await;
    let events = h.until_turn_finished().await;
    assert!(requests(&events).is_empty());
    assert!(results(&events)[0].1.contains("this session is read-only"));
    assert!(!h.workspace().join("z.txt").exists());
}

#[tokio::test]
async fn interrupting_while_asked_withdraws_the_question() {
    let mut h = session(write_then_done("w.txt"), ApprovalMode::Ask, true).await;
    h.send(Op::user_input("go")).await;
    let (id, _) = next_request(&mut h).await;
    h.send(Op::Interrupt).await;
    let events = h.until_turn_finished().await;
    assert!(events.contains(&Event::ApprovalResolved {
        id: id.clone(),
        decision: ApprovalDecision::Deny
    }));
    assert!(matches!(
        events.last(),
        Some(Event::TurnFinished {
            status: TurnStatus::Interrupted,
            ..
        })
    ));
    // A late answer to the withdrawn question changes nothing.
    h.send(Op::Approval {
        id,
        decision: ApprovalDecision::AllowOnce,
    })
    .await;
    h.finish().await;
}

#[tokio::test]
async fn time_spent_waiting_for_the_user_is_neither_the_tools_timeout_nor_its_shown_time() {
    let mut h = session(write_then_done("slow.txt"), ApprovalMode::Ask, true).await;
    h.send(Op::user_input("go")).await;
    let (id, _) = next_request(&mut h).await;
    // Longer than the one-second tool timeout of these sessions.
    tokio::time::sleep(Duration::from_millis(1500)).await;
    h.send(Op::Approval {
        id,
        decision: ApprovalDecision::AllowOnce,
    })
    .await;
    let events = h.until_turn_finished().await;
    assert_eq!(results(&events)[0].0, ToolStatus::Ok);
    assert!(h.workspace().join("slow.txt").exists());
    let shown = events.iter().find_map(|e| match e {
        Event::ToolCallFinished { duration_ms, .. } => Some(*duration_ms),
        _ => None,
    });
    // The write itself takes milliseconds; the person's 1.5 s to answer is not its time.
    assert!(shown.is_some_and(|ms| ms < 1000), "{shown:?}");
}

#[tokio::test]
async fn the_mode_can_change_mid_session() {
    let script = json!({"turns": [
        {"tool_calls": [{"name": "write_file", "arguments": {"path": "m.txt", "content": "m"}}]},
        {"text": "done"}
    ]});
    let mut h = session(script, ApprovalMode::ReadOnly, true).await;
    h.send(Op::SetApprovalMode {
        mode: ApprovalMode::Auto,
    })
    .await;
    h.until(|e| {
        matches!(
            e,
            Event::ApprovalModeChanged {
                mode: ApprovalMode::Auto
            }
        )
    })
    .await;
    h.send(Op::user_input("go")).await;
    let events = h.until_turn_finished().await;
    assert_eq!(results(&events)[0].0, ToolStatus::Ok);
    assert!(h.workspace().join("m.txt").exists());
}
