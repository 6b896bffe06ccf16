//! The words the interactive front end uses where mnemo speaks for itself: why it wrote to the
//! model in the middle of a turn, and tool results that were written for the model.

use crate::tui_support;

use mnemo::protocol::{Event, ToolStatus, UserMessageKind};
use serde_json::json;
use tui_support::Harness;

#[test]
fn each_message_mnemo_writes_to_the_model_says_why_it_was_sent() {
    let mut harness = Harness::started();
    harness.prompt("tidy the repository");
    for (kind, text) in [
        (UserMessageKind::Continuation, "[mnemo] go on"),
        (UserMessageKind::SkillRequest, "[mnemo] distil a skill?"),
        (UserMessageKind::StepLimit, "[mnemo] step limit reached"),
    ] {
        harness.event(Event::UserMessage {
            text: text.into(),
            kind,
            images: Vec::new(),
        });
    }
    let screen = harness.screen(90, 10);
    assert!(!screen.contains("[mnemo]"), "{screen}");
    insta::assert_snapshot!("mnemo_written_messages", screen);
}

#[test]
fn tool_results_written_for_the_model_read_as_one_line() {
    let mut harness = Harness::started();
    harness.prompt("count words from now on, and remind me at midnight");
    let created = json!({
        "created": {"name": "word-count", "tool": "cap_word_count", "version": 1,
                    "input_schema": {"type": "object"}},
        "smoke_test": {"passed": true, "output": "3"}
    });
    let calls = [
        (
            "capability_create",
            json!({"name": "word-count", "language": "bash"}),
            created.to_string(),
        ),
        (
            "schedule_create",
            json!({"when": "2020-01-02T00:29", "prompt": "say good night"}),
            "created schedule #1: once at 2020-01-02 00:29 UTC\nmnemo serve is not running, so \
             this schedule runs only once it is started (`mnemo serve`); tell the user."
                .to_string(),
        ),
    ];
    for (n, (name, arguments, output)) in calls.into_iter().enumerate() {
        harness.event(Event::ToolCallStarted {
            call_id: format!("c{n}"),
            name: name.into(),
            arguments,
        });
        harness.event(Event::ToolCallFinished {
            call_id: format!("c{n}"),
            name: name.into(),
            status: ToolStatus::Ok,
            output,
            duration_ms: 12,
        });
    }
    let screen = harness.screen(90, 12);
    assert!(!screen.contains("tell the user"), "{screen}");
    assert!(!screen.contains("input_schema"), "{screen}");
    insta::assert_snapshot!("tool_results_in_words", screen);
}

#[test]
fn a_session_announced_twice_is_welcomed_once() {
    let mut harness = Harness::new();
    let started = Event::SessionStarted {
        session_id: "43f5de42-0000".into(),
        model: "local".into(),
        workspace: "/tmp/project".into(),
    };
    // `mnemo attach` of a stored session: the gateway announces it, and so does its stream.
    harness.event(started.clone());
    harness.event(started);
    let screen = harness.screen(90, 12);
    assert_eq!(
        screen.matches("Enter send · Tab queue").count(),
        1,
        "{screen}"
    );
}
