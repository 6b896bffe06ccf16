//! Sub-agents on the scripted provider: spawn and the answer it returns, the depth limit,
//! cancellation through three levels, the elastic timeout and the later injection, read-only
//! children and the child sessions in the store (forks: `tests/subagent_forks.rs`). Script turns with
//! `when` answer only the session whose latest user text contains it.

use crate::agent_support;
use crate::subagent_support;

use std::time::{Duration, Instant};

use agent_support::start;
use mnemo::llm::ContentBlock;
use mnemo::protocol::{AgentActivity, AgentStatus, Event, Op, TurnStatus, UserMessageKind};
use serde_json::{Value, json};
use subagent_support::*;

#[tokio::test]
async fn a_spawned_agent_answers_and_is_stored_as_a_child_session() {
    let script = json!({"turns": [
        turn("PARENT", json!({"tool_calls": [call("spawn_agent", json!({"prompt": "CHILD: count the files"}))]})),
        turn("CHILD", json!({"text": "There are 42 files."})),
        turn("PARENT", json!({"text": "The child counted 42."}))
    ]});
    let mut h = start(script, |_| {}).await;
    let events = run_prompt(&mut h, "PARENT: delegate").await;
    let result = output_json(&events, "spawn_agent");
    assert_eq!(result["status"], "completed");
    assert_eq!(result["response"], "There are 42 files.");
    let started = events.iter().find_map(|e| match e {
        Event::AgentStarted {
            run_id,
            depth,
            label,
            parent_run,
            session_id,
            ..
        } => Some((
            run_id.clone(),
            *depth,
            label.clone(),
            parent_run.clone(),
            session_id.clone(),
        )),
        _ => None,
    });
    let Some((run_id, depth, label, parent_run, child_id)) = started else {
        panic!("no AgentStarted in {events:#?}");
    };
    assert_eq!((run_id.as_str(), depth, parent_run), ("a1", 1, None));
    assert_eq!(label, "CHILD: count the files");
    assert_eq!(
        finished(&events),
        [("a1".to_string(), AgentStatus::Completed)]
    );

    let session = h.finish().await;
    let kids = children(&session, &session.id).await;
    assert_eq!(kids.len(), 1);
    assert_eq!(kids[0].id, child_id);
    assert_eq!(kids[0].title, "CHILD: count the files");
    let stored = texts(&messages(&session, &child_id).await);
    assert_eq!(stored, ["CHILD: count the files", "There are 42 files."]);
    // The parent's history holds the call and its result, not the child's conversation.
    assert!(
        texts(session.history())
            .iter()
            .all(|t| !t.contains("42 files"))
    );
}

#[tokio::test]
async fn the_depth_limit_stops_nesting_in_the_tool_layer() {
    let spawn =
        |prompt: &str| json!({"tool_calls": [call("spawn_agent", json!({"prompt": prompt}))]});
    let script = json!({"turns": [
        turn("LEVEL0", spawn("LEVEL1 go deeper")),
        turn("LEVEL1", spawn("LEVEL2 go deeper")),
        turn("LEVEL2", spawn("LEVEL3 too deep")),
        turn("LEVEL2", json!({"text": "level 2 could not go deeper"})),
        turn("LEVEL1", json!({"text": "level 1 done"})),
        turn("LEVEL0", json!({"text": "all done"}))
    ]});
    let mut h = start(script, |s| s.max_agent_depth = 2).await;
    let events = run_prompt(&mut h, "LEVEL0 start").await;
    let depths: Vec<u32> = events
        .iter()
        .filter_map(|e| match e {
            Event::AgentStarted { depth, .. } => Some(*depth),
            _ => None,
        })
        .collect();
    assert_eq!(depths, [1, 2], "a third level must not start");
    let session = h.finish().await;
    let level1 = &children(&session, &session.id).await[0];
    let level2 = &children(&session, &level1.id).await[0];
    assert!(children(&session, &level2.id).await.is_empty());
    let refused: Vec<String> = messages(&session, &level2.id)
        .await
        .iter()
        .flat_map(|m| m.content.clone())
        .filter_map(|b| match b {
            ContentBlock::ToolResult {
                content, is_error, ..
            } => is_error.then_some(content),
            _ => None,
        })
        .collect();
    assert_eq!(refused.len(), 1);
    assert!(
        refused[0].contains("the sub-agent depth limit (2) is reached"),
        "{refused:?}"
    );
}

/// A three-level chain of blocking spawns whose deepest agent streams slowly.
fn three_levels() -> Value {
    let spawn =
        |prompt: &str| json!({"tool_calls": [call("spawn_agent", json!({"prompt": prompt}))]});
    let words: Vec<String> = (0..50).map(|i| format!("word{i} ")).collect();
    json!({"turns": [
        turn("ROOT", spawn("ONE: delegate")),
        turn("ONE", spawn("TWO: delegate")),
        turn("TWO", spawn("THREE: work slowly")),
        turn("THREE", json!({"chunks": words, "delay_ms": 200}))
    ]})
}

#[tokio::test]
async fn interrupting_the_parent_cancels_three_levels_within_200_ms() {
    let mut h = start(three_levels(), |_| {}).await;
    h.send(Op::user_input("ROOT: go")).await;
    h.until(|e| matches!(e, Event::AgentActivity { run_id, activity } if run_id == "a1.a1.a1" && *activity == AgentActivity::Responding))
        .await;
    let interrupted = Instant::now();
    h.send(Op::Interrupt).await;
    let mut cancelled = Vec::new();
    let events = h
        .until(|e| {
            if let Event::AgentFinished { run_id, status, .. } = e {
                cancelled.push((run_id.clone(), *status));
            }
            cancelled.len() == 3
        })
        .await;
    let elapsed = interrupted.elapsed();
    assert!(elapsed < Duration::from_millis(200), "took {elapsed:?}");
    cancelled.sort_by(|a, b| a.0.cmp(&b.0));
    assert_eq!(
        cancelled,
        [
            ("a1".to_string(), AgentStatus::Cancelled),
            ("a1.a1".to_string(), AgentStatus::Cancelled),
            ("a1.a1.a1".to_string(), AgentStatus::Cancelled),
        ],
        "{events:#?}"
    );
    assert!(events.iter().any(|e| matches!(
        e,
        Event::TurnFinished {
            status: TurnStatus::Interrupted,
            ..
        }
    )));
}

#[tokio::test]
async fn cancel_agent_cancels_a_background_run_and_its_subtree() {
    let words: Vec<String> = (0..50).map(|i| format!("w{i} ")).collect();
    let script = json!({"turns": [
        turn("ROOT", json!({"tool_calls": [call("spawn_agent", json!({"prompt": "ONE: delegate", "background": true}))]})),
        turn("ROOT", json!({"text": "started it"})),
        turn("ONE", json!({"tool_calls": [call("spawn_agent", json!({"prompt": "TWO: slow"}))]})),
        turn("TWO", json!({"chunks": words, "delay_ms": 200})),
        turn("STOP", json!({"tool_calls": [
            call("list_agents", json!({})),
            call("cancel_agent", json!({"run_id": "a1"}))
        ]})),
        turn("STOP", json!({"text": "stopped"}))
    ]});
    let mut h = start(script, |_| {}).await;
    let events = run_prompt(&mut h, "ROOT: start in the background").await;
    assert_eq!(output_json(&events, "spawn_agent")["status"], "running");
    // On a busy machine the grandchild may start answering before the root's turn ends.
    let responding = |e: &Event| matches!(e, Event::AgentActivity { run_id, activity } if run_id == "a1.a1" && *activity == AgentActivity::Responding);
    if !events.iter().any(responding) {
        h.until(responding).await;
    }
    let events = run_prompt(&mut h, "STOP it").await;
    let listed = output_json(&events, "list_agents");
    assert_eq!(listed[0]["run_id"], "a1");
    assert_eq!(listed[0]["kind"], "spawn");
    assert_eq!(listed[0]["status"], "running");
    assert_eq!(listed[0]["task"], "ONE: delegate");
    let result = output_json(&events, "cancel_agent");
    assert_eq!(result["status"], "cancelled");
    let mut stopped = finished(&events);
    stopped.sort_by(|a, b| a.0.cmp(&b.0));
    // The parent stopped it: no report comes back to start another turn.
    let quiet = tokio::time::timeout(Duration::from_millis(500), async {
        while let Some(event) = h.handle.events.recv().await {
            if matches!(event, Event::TurnStarted { .. }) {
                return event;
            }
        }
        Event::Notice {
            message: "closed".into(),
        }
    })
    .await;
    assert!(quiet.is_err(), "a turn started by itself: {quiet:?}");
    assert_eq!(
        stopped,
        [
            ("a1".to_string(), AgentStatus::Cancelled),
            ("a1.a1".to_string(), AgentStatus::Cancelled)
        ]
    );
}

#[tokio::test]
async fn the_elastic_timeout_moves_a_run_to_the_background_and_injects_its_result() {
    let script = json!({"turns": [
        turn("PARENT", json!({"tool_calls": [call("spawn_agent", json!({"prompt": "SLOW: think long", "timeout": 1}))]})),
        turn("SLOW", json!({"chunks": ["the slow ", "answer"], "delay_ms": 1200})),
        turn("PARENT", json!({"tool_calls": [call("read_agent_output", json!({"run_id": "a1"}))]})),
        turn("PARENT", json!({"text": "I will wait for it."})),
        turn("[sub-agent a1", json!({"text": "It answered."}))
    ]});
    let mut h = start(script, |_| {}).await;
    let started = Instant::now();
    let events = run_prompt(&mut h, "PARENT: ask the slow one").await;
    let moved = output_json(&events, "spawn_agent");
    assert_eq!(moved["run_id"], "a1");
    assert_eq!(moved["status"], "moved_to_background");
    assert_eq!(
        output_json(&events, "read_agent_output")["status"],
        "running"
    );
    assert!(started.elapsed() < Duration::from_millis(2000));
    // The next turn starts by itself with the result as an injected message.
    let next = h.until_turn_finished().await;
    let injected = next.iter().find_map(|e| match e {
        Event::UserMessage {
            text,
            kind: UserMessageKind::Injected,
            ..
        } => Some(text.clone()),
        _ => None,
    });
    assert_eq!(
        injected.as_deref(),
        Some("[sub-agent a1 completed in the background]\nthe slow answer")
    );
    assert!(
        next.iter()
            .any(|e| matches!(e, Event::AssistantMessage { text } if text == "It answered."))
    );
}

#[tokio::test]
async fn a_readonly_agent_has_no_tools_that_change_anything() {
    let script = json!({"turns": [
        turn("PARENT", json!({"tool_calls": [call("spawn_agent", json!({"prompt": "READER: look only", "readonly": true}))]})),
        turn("READER", json!({"tool_calls": [call("write_file", json!({"path": "x.txt", "content": "no"}))]})),
        turn("READER", json!({"text": "I could not write."})),
        turn("PARENT", json!({"text": "ok"}))
    ]});
    let mut h = start(script, |_| {}).await;
    run_prompt(&mut h, "PARENT: read something").await;
    assert!(!h.workspace().join("x.txt").exists());
    let session = h.finish().await;
    let child = &children(&session, &session.id).await[0];
    let refused: Vec<String> = messages(&session, &child.id)
        .await
        .iter()
        .flat_map(|m| m.content.clone())
        .filter_map(|b| match b {
            ContentBlock::ToolResult { content, .. } => Some(content),
            _ => None,
        })
        .collect();
    assert!(
        refused[0].starts_with("unknown tool `write_file`"),
        "{refused:?}"
    );
    assert!(!refused[0].contains("shell"), "{refused:?}");
}

#[tokio::test]
async fn summary_mode_starts_the_agent_with_the_compressors_summary() {
    let summary = json!({"goal": "ship the parser", "current_status": "tests pass"}).to_string();
    let script = json!({"turns": [
        turn("PARENT", json!({"tool_calls": [call("spawn_agent", json!({"prompt": "SUMMARIZED: write docs", "context_mode": "summary"}))]})),
        turn("Conversation being removed", json!({"text": summary})),
        turn("SUMMARIZED", json!({"text": "docs written"})),
        turn("PARENT", json!({"text": "ok"}))
    ]});
    let mut h = start(script, |_| {}).await;
    let events = run_prompt(&mut h, "PARENT: we are shipping the parser").await;
    assert_eq!(
        output_json(&events, "spawn_agent")["response"],
        "docs written"
    );
    let session = h.finish().await;
    let child = &children(&session, &session.id).await[0];
    let first = texts(&messages(&session, &child.id).await).remove(0);
    assert!(first.contains("Goal: ship the parser"), "{first}");
    assert!(first.contains("Current status: tests pass"), "{first}");
    assert!(
        first.ends_with("Your task:\nSUMMARIZED: write docs"),
        "{first}"
    );
}

#[tokio::test]
async fn a_sub_agent_asks_the_same_user_under_the_parents_approval_mode() {
    use mnemo::protocol::ApprovalDecision;
    use mnemo::sandbox::{ApprovalMode, SandboxConfig};
    use mnemo::tools::Approvals;
    let script = json!({"turns": [
        turn("PARENT", json!({"tool_calls": [call("spawn_agent", json!({"prompt": "WRITER: save it"}))]})),
        turn("WRITER", json!({"tool_calls": [call("write_file", json!({"path": "saved.txt", "content": "kept"}))]})),
        turn("WRITER", json!({"text": "saved"})),
        turn("PARENT", json!({"text": "ok"}))
    ]});
    let mut h = start(script, |settings| {
        let approvals = Approvals::new(SandboxConfig::default(), ApprovalMode::Ask);
        approvals.enable_questions();
        settings.approvals = std::sync::Arc::new(approvals);
    })
    .await;
    h.send(Op::user_input("PARENT: save")).await;
    let events = h
        .until(|e| matches!(e, Event::ApprovalRequested { .. }))
        .await;
    let Some(Event::ApprovalRequested { id, tool, .. }) = events.last() else {
        panic!("no question");
    };
    assert_eq!(tool, "write_file");
    assert!(!h.workspace().join("saved.txt").exists());
    h.send(Op::Approval {
        id: id.clone(),
        decision: ApprovalDecision::AllowOnce,
    })
    .await;
    let events = h.until_turn_finished().await;
    assert_eq!(output_json(&events, "spawn_agent")["response"], "saved");
    assert_eq!(
        std::fs::read_to_string(h.workspace().join("saved.txt")).ok(),
        Some("kept".into())
    );
}

#[tokio::test]
async fn a_sub_agent_takes_the_results_of_its_own_background_agents_before_it_answers() {
    let script = json!({"turns": [
        turn("ROOT", json!({"tool_calls": [call("spawn_agent", json!({"prompt": "MIDDLE: delegate"}))]})),
        turn("MIDDLE", json!({"tool_calls": [call("spawn_agent", json!({"prompt": "LEAF: slow", "timeout": 1}))]})),
        turn("MIDDLE", json!({"text": "waiting for the leaf"})),
        turn("LEAF", json!({"chunks": ["leaf ", "answer"], "delay_ms": 900})),
        turn("[sub-agent a1.a1", json!({"text": "the leaf said: leaf answer"})),
        turn("ROOT", json!({"text": "done"}))
    ]});
    let mut h = start(script, |_| {}).await;
    let events = run_prompt(&mut h, "ROOT: go").await;
    let result = output_json(&events, "spawn_agent");
    assert_eq!(result["status"], "completed");
    assert_eq!(result["response"], "the leaf said: leaf answer");
}
