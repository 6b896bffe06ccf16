//! The turn loop on the scripted provider: streaming, concurrent tools, guards, interrupt and
//! inject. Delays are real but short; every message goes through a real store.

use crate::agent_support;

use std::sync::atomic::Ordering;
use std::time::Duration;

use agent_support::start;
use mnemo::llm::{ContentBlock, Role};
use mnemo::protocol::{Event, Op, ToolStatus, TurnStatus, UserMessageKind};
use serde_json::json;
use std::time::Instant;

fn status_of(events: &[Event]) -> (TurnStatus, Option<String>) {
    match events.last() {
        Some(Event::TurnFinished {
            status, message, ..
        }) => (*status, message.clone()),
        other => panic!("expected TurnFinished, got {other:?}"),
    }
}

fn text_deltas(events: &[Event]) -> String {
    events
        .iter()
        .filter_map(|e| match e {
            Event::TextDelta { text } => Some(text.as_str()),
            _ => None,
        })
        .collect()
}

#[tokio::test]
async fn streamed_text_arrives_as_deltas_and_the_turn_completes() {
    let mut h = start(
        json!({"turns": [{"chunks": ["Hel", "lo ", "world"], "delay_ms": 50}]}),
        |_| {},
    )
    .await;
    h.send(Op::user_input("hi")).await;
    let events = h.until_turn_finished().await;
    assert_eq!(text_deltas(&events), "Hello world");
    let deltas = events
        .iter()
        .filter(|e| matches!(e, Event::TextDelta { .. }))
        .count();
    assert_eq!(deltas, 3);
    assert_eq!(status_of(&events).0, TurnStatus::Completed);
    let session = h.finish().await;
    assert_eq!(session.history().len(), 2);
    assert_eq!(session.history()[1].text(), "Hello world");
}

#[tokio::test]
async fn several_read_only_calls_in_one_response_run_concurrently() {
    let mut h = start(
        json!({"turns": [
            {"tool_calls": [
                {"name": "sleep", "arguments": {"ms": 300}},
                {"name": "sleep", "arguments": {"ms": 301}},
                {"name": "sleep", "arguments": {"ms": 302}}
            ]},
            {"text": "done"}
        ]}),
        |_| {},
    )
    .await;
    let started = Instant::now();
    h.send(Op::user_input("go")).await;
    let events = h.until_turn_finished().await;
    assert_eq!(status_of(&events).0, TurnStatus::Completed);
    let elapsed = started.elapsed();
    assert!(
        elapsed < Duration::from_millis(1500),
        "ran one after another: {elapsed:?}"
    );
    let session = h.finish().await;
    let results = &session.history()[2];
    assert_eq!(results.role, Role::User);
    assert_eq!(results.content.len(), 3);
}

#[tokio::test]
async fn the_same_call_three_times_in_a_row_ends_the_turn_as_loop_detected() {
    let call = json!({"tool_calls": [{"name": "sleep", "arguments": {"ms": 1}}]});
    let mut h = start(
        json!({"turns": [call, call, call, {"text": "never reached"}]}),
        |_| {},
    )
    .await;
    h.send(Op::user_input("loop")).await;
    let events = h.until_turn_finished().await;
    let (status, message) = status_of(&events);
    assert_eq!(status, TurnStatus::LoopDetected);
    assert!(message.unwrap_or_default().contains("3 times in a row"));
    assert_eq!(
        h.sleeper_calls.load(Ordering::SeqCst),
        2,
        "the third call must not run"
    );
    let session = h.finish().await;
    // The refused call still has a result, so the history stays valid for the next turn.
    let last = session
        .history()
        .last()
        .cloned()
        .unwrap_or_else(|| panic!("empty"));
    assert!(matches!(
        &last.content[0],
        ContentBlock::ToolResult { is_error: true, .. }
    ));
}

#[tokio::test]
async fn the_step_limit_stops_a_turn_that_keeps_calling_tools() {
    let turns: Vec<_> = (0..5)
        .map(|i| json!({"tool_calls": [{"name": "sleep", "arguments": {"ms": i}}]}))
        .collect();
    let mut h = start(json!({ "turns": turns }), |s| s.max_steps = 2).await;
    h.send(Op::user_input("work")).await;
    let events = h.until_turn_finished().await;
    let (status, message) = status_of(&events);
    assert_eq!(status, TurnStatus::StepLimit);
    assert!(message.unwrap_or_default().contains("2 model calls"));
    assert_eq!(h.sleeper_calls.load(Ordering::SeqCst), 2);
}

#[tokio::test]
async fn a_tool_that_runs_too_long_becomes_an_error_result_and_the_turn_goes_on() {
    let mut h = start(
        json!({"turns": [
            {"tool_calls": [{"name": "sleep", "arguments": {"ms": 600000}}]},
            {"text": "the tool timed out"}
        ]}),
        |s| s.tool_timeout = Duration::from_secs(1),
    )
    .await;
    h.send(Op::user_input("go")).await;
    let events = h.until_turn_finished().await;
    assert_eq!(status_of(&events).0, TurnStatus::Completed);
    let finished = events.iter().find_map(|e| match e {
        Event::ToolCallFinished { status, output, .. } => Some((*status, output.clone())),
        _ => None,
    });
    let (status, output) = finished.unwrap_or_else(|| panic!("no tool result"));
    assert_eq!(status, ToolStatus::Error);
    assert!(output.contains("timed out after 1 s"), "{output}");
}

#[tokio::test]
async fn invalid_tool_arguments_and_unknown_tools_become_errors_the_model_sees() {
    let mut h = start(
        json!({"turns": [
            {"tool_calls": [
                {"name": "read_file", "arguments_raw": "{\"path\": \"a.txt\""},
                {"name": "read_file", "arguments": {"path": 42}},
                {"name": "teleport", "arguments": {}}
            ]},
            {"text": "recovered"}
        ]}),
        |_| {},
    )
    .await;
    h.send(Op::user_input("go")).await;
    let events = h.until_turn_finished().await;
    assert_eq!(status_of(&events).0, TurnStatus::Completed);
    let session = h.finish().await;
    let errors: Vec<String> = session.history()[2]
        .content
        .iter()
        .map(|b| match b {
            ContentBlock::ToolResult {
                content, is_error, ..
            } => {
                assert!(is_error);
                content.clone()
            }
            other => panic!("unexpected {other:?}"),
        })
        .collect();
    assert!(errors[0].contains("not valid JSON"), "{}", errors[0]);
    assert!(errors[1].contains("invalid type"), "{}", errors[1]);
    assert!(
        errors[2].contains("unknown tool `teleport`"),
        "{}",
        errors[2]
    );
    assert_eq!(session.history()[3].text(), "recovered");
}

#[tokio::test]
async fn interrupt_mid_stream_ends_the_turn_at_once_and_keeps_what_was_shown() {
    let chunks: Vec<String> = (0..50).map(|i| format!("w{i} ")).collect();
    let mut h = start(
        json!({"turns": [{"chunks": chunks, "delay_ms": 200}, {"text": "next"}]}),
        |_| {},
    )
    .await;
    h.send(Op::user_input("talk")).await;
    h.until(|e| matches!(e, Event::TextDelta { text } if text == "w1 "))
        .await;
    let asked = Instant::now();
    h.send(Op::Interrupt).await;
    let events = h.until_turn_finished().await;
    assert!(asked.elapsed() < Duration::from_millis(100));
    assert_eq!(status_of(&events).0, TurnStatus::Interrupted);
    // The session is still usable after the interrupt.
    h.send(Op::user_input("again")).await;
    let events = h.until_turn_finished().await;
    assert_eq!(status_of(&events).0, TurnStatus::Completed);
    let session = h.finish().await;
    assert_eq!(session.history()[1].text(), "w0 w1 ");
    assert_eq!(session.history()[3].text(), "next");
}

#[tokio::test]
async fn interrupt_during_a_tool_cancels_it_and_answers_the_call() {
    let mut h = start(
        json!({"turns": [{"tool_calls": [{"name": "sleep", "arguments": {"ms": 600000}}]}]}),
        |_| {},
    )
    .await;
    h.send(Op::user_input("go")).await;
    h.until(|e| matches!(e, Event::ToolCallStarted { .. }))
        .await;
    let asked = Instant::now();
    h.send(Op::Interrupt).await;
    let events = h.until_turn_finished().await;
    assert!(asked.elapsed() < Duration::from_millis(100));
    assert_eq!(status_of(&events).0, TurnStatus::Interrupted);
    let session = h.finish().await;
    let last = session
        .history()
        .last()
        .cloned()
        .unwrap_or_else(|| panic!("empty"));
    match &last.content[0] {
        ContentBlock::ToolResult {
            content, is_error, ..
        } => {
            assert!(is_error);
            assert!(content.contains("interrupted"), "{content}");
        }
        other => panic!("unexpected {other:?}"),
    }
}

#[tokio::test]
async fn an_injection_becomes_a_user_message_before_the_next_model_call() {
    let mut h = start(
        json!({"turns": [
            {"tool_calls": [{"name": "sleep", "arguments": {"ms": 300}}]},
            {"text": "saw it"}
        ]}),
        |_| {},
    )
    .await;
    h.send(Op::user_input("start")).await;
    h.until(|e| matches!(e, Event::ToolCallStarted { .. }))
        .await;
    h.send(Op::Inject {
        text: "also check the tests".into(),
    })
    .await;
    let events = h.until_turn_finished().await;
    assert!(events.iter().any(|e| matches!(e,
        Event::UserMessage { text, kind: UserMessageKind::Injected, .. } if text == "also check the tests")));
    let session = h.finish().await;
    let history = session.history();
    assert_eq!(history.len(), 5);
    assert_eq!(history[3].role, Role::User);
    assert_eq!(history[3].text(), "also check the tests");
    assert_eq!(history[4].text(), "saw it");
    // The store remembers how each user message arrived, for a resumed transcript.
    let id = session.id.clone();
    let stored = session
        .store()
        .call(move |db| db.all_messages(&id))
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    let kinds: Vec<_> = stored.iter().map(|m| m.kind).collect();
    assert_eq!(
        kinds,
        [None, None, None, Some(UserMessageKind::Injected), None]
    );
}

#[tokio::test]
async fn an_injection_during_the_final_answer_starts_another_model_call_in_the_same_turn() {
    let mut h = start(
        json!({"turns": [
            {"chunks": ["all ", "done ", "here"], "delay_ms": 200},
            {"text": "ok, added"}
        ]}),
        |_| {},
    )
    .await;
    h.send(Op::user_input("start")).await;
    h.until(|e| matches!(e, Event::TextDelta { .. })).await;
    h.send(Op::Inject {
        text: "one more thing".into(),
    })
    .await;
    let events = h.until_turn_finished().await;
    assert_eq!(status_of(&events).0, TurnStatus::Completed);
    let answers = events
        .iter()
        .filter(|e| matches!(e, Event::AssistantMessage { .. }))
        .count();
    assert_eq!(answers, 2);
    let session = h.finish().await;
    assert_eq!(
        session.history().last().map(|m| m.text()),
        Some("ok, added".into())
    );
}

#[tokio::test]
async fn a_message_sent_during_a_turn_is_queued_as_the_next_turn() {
    let mut h = start(
        json!({"turns": [
            {"chunks": ["first ", "answer"], "delay_ms": 200},
            {"text": "second answer"}
        ]}),
        |_| {},
    )
    .await;
    h.send(Op::user_input("one")).await;
    let mut first = h.until(|e| matches!(e, Event::TextDelta { .. })).await;
    h.send(Op::user_input("two")).await;
    first.extend(h.until_turn_finished().await);
    assert_eq!(text_deltas(&first), "first answer");
    let second = h.until_turn_finished().await;
    assert!(second.iter().any(|e| matches!(e,
        Event::UserMessage { text, kind: UserMessageKind::Queued, .. } if text == "two")));
    assert_eq!(text_deltas(&second), "second answer");
}

#[tokio::test]
async fn a_provider_failure_fails_the_turn_with_the_reason() {
    let mut h = start(
        json!({"turns": [{"error": {"kind": "auth", "message": "invalid x-api-key"}}]}),
        |_| {},
    )
    .await;
    h.send(Op::user_input("hi")).await;
    let events = h.until_turn_finished().await;
    let (status, message) = status_of(&events);
    assert_eq!(status, TurnStatus::Failed);
    assert!(message.unwrap_or_default().contains("invalid x-api-key"));
}
