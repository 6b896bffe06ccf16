use serde_json::json;

use super::*;
use crate::llm::Message;

fn stored(seq: i64, message: Message) -> StoredMessage {
    StoredMessage {
        seq,
        message,
        tokens: 1,
        active: true,
        created_at: seq * 100,
        kind: None,
    }
}

fn tool_turn(seq: i64) -> Vec<StoredMessage> {
    let id = format!("c{seq}");
    vec![
        stored(seq, Message::user_text(format!("question {seq}"))),
        stored(
            seq + 1,
            Message::assistant(vec![
                ContentBlock::Thinking {
                    thinking: "The listing answers it.".into(),
                    signature: None,
                },
                ContentBlock::Text {
                    text: "Looking.".into(),
                },
                ContentBlock::ToolUse {
                    id: id.clone(),
                    name: "shell".into(),
                    input: json!({"command": "ls"}),
                },
            ]),
        ),
        stored(
            seq + 2,
            Message {
                role: Role::User,
                content: vec![ContentBlock::ToolResult {
                    tool_use_id: id,
                    content: "a.rs".into(),
                    is_error: false,
                }],
            },
        ),
    ]
}

#[test]
fn a_turn_replays_in_the_order_it_happened() {
    let events = events(&tool_turn(0));
    assert_eq!(
        events,
        [
            Event::UserMessage {
                text: "question 0".into(),
                kind: UserMessageKind::Prompt,
                images: Vec::new(),
            },
            Event::ReasoningDelta {
                text: "The listing answers it.".into(),
            },
            Event::AssistantMessage {
                text: "Looking.".into(),
            },
            Event::ToolCallStarted {
                call_id: "c0".into(),
                name: "shell".into(),
                arguments: json!({"command": "ls"}),
            },
            Event::ToolCallFinished {
                call_id: "c0".into(),
                name: "shell".into(),
                status: ToolStatus::Ok,
                output: "a.rs".into(),
                duration_ms: 100,
            },
        ]
    );
}

#[test]
fn the_recent_part_never_starts_at_a_tool_result() {
    let messages: Vec<_> = (0..10).flat_map(|n| tool_turn(n * 3)).collect();
    // The last 4 messages start with a result: the recent part starts one later.
    let replay = recent(&messages, 30, 4);
    assert_eq!(replay.earlier, 27);
    assert!(matches!(
        replay.events.first(),
        Some(Event::UserMessage { text, .. }) if text == "question 27"
    ));
}

#[test]
fn archived_messages_count_as_earlier() {
    let messages: Vec<_> = (0..2).flat_map(|n| tool_turn(n * 3)).collect();
    let replay = recent(&messages, 18, RECENT_MESSAGES);
    assert_eq!(replay.earlier, 12);
    assert_eq!(replay.events, events(&messages));
}

#[test]
fn a_call_without_result_finishes_as_failed() {
    let mut messages = tool_turn(0);
    messages.pop();
    let events = events(&messages);
    assert!(matches!(
        events.last(),
        Some(Event::ToolCallFinished { status: ToolStatus::Error, output, .. })
            if output == NO_RESULT
    ));
}

#[test]
fn injected_and_queued_messages_keep_their_mark() {
    let mut injected = stored(0, Message::user_text("also run clippy"));
    injected.kind = Some(UserMessageKind::Injected);
    let plain = stored(1, Message::user_text("hello"));
    let kinds: Vec<_> = events(&[injected, plain])
        .into_iter()
        .map(|event| match event {
            Event::UserMessage { kind, .. } => kind,
            other => panic!("unexpected event {other:?}"),
        })
        .collect();
    assert_eq!(kinds, [UserMessageKind::Injected, UserMessageKind::Prompt]);
}
