//! Snapshots of every visible state of the interactive front end. The state is driven with
//! protocol events, as the agent would drive it, and with keys, as a user would; the screen
//! (scrollback tail plus live area, or the pager) is rendered into a test buffer.

use crate::tui_support;

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use mnemo::host::LaunchError;
use mnemo::llm::Usage;
use mnemo::llm::reach::{Answer, Probe};
use mnemo::protocol::{CompactionKind, Event, Op, ToolStatus, TurnStatus, UserMessageKind};
use mnemo::tui::first_run::FirstRun;
use mnemo::tui::pager_view;
use mnemo::tui::setup::Offer;
use mnemo::tui::state::Effect;
use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use serde_json::json;
use tui_support::{Harness, TestResult, text, text_of};

#[test]
fn idle_session() {
    let mut harness = Harness::started();
    insta::assert_snapshot!(harness.screen(80, 8));
}

/// A session of `mnemo serve` seen through `mnemo attach`: the status bar says so, since
/// leaving only detaches from it.
#[test]
fn attached_session() {
    let mut harness = Harness::new();
    harness.state.status.attached = true;
    harness.event(Event::SessionStarted {
        session_id: "93ef695b-5b1d-4c2e-9f00-1234567890ab".into(),
        model: "claude-sonnet".into(),
        workspace: "/home/ada/project".into(),
    });
    insta::assert_snapshot!(harness.screen(80, 8));
}

#[test]
fn streaming_markdown_with_a_code_block() {
    let mut harness = Harness::started();
    harness.prompt("show me main");
    harness.events([
        Event::ReasoningDelta {
            text: "The user wants\nthe entry point.".into(),
        },
        text("## Entry point\n\nThe *binary* starts in `main`, see [docs](https://x.dev):\n"),
        text("\n```rust\nfn main() {\n    run();\n}\n```\n\n- parses flags\n- picks a front"),
        text(" end and then"),
    ]);
    insta::assert_snapshot!(harness.screen(80, 24));
}

#[test]
fn running_tool_pane() {
    let mut harness = Harness::started();
    harness.prompt("run the tests");
    harness.event(Event::ToolCallStarted {
        call_id: "c1".into(),
        name: "shell".into(),
        arguments: json!({"command": "cargo test --quiet"}),
    });
    for n in 1..=8 {
        harness.event(Event::ToolOutput {
            call_id: "c1".into(),
            chunk: format!("test case_{n} ... ok\n"),
        });
    }
    insta::assert_snapshot!(harness.screen(80, 16));
}

#[test]
fn finished_edit_shows_its_diff() {
    let mut harness = Harness::started();
    harness.prompt("rename the function");
    harness.events([
        Event::ToolCallStarted {
            call_id: "c1".into(),
            name: "edit_file".into(),
            arguments: json!({"path": "src/lib.rs", "old_string": "a", "new_string": "b"}),
        },
        Event::ToolCallFinished {
            call_id: "c1".into(),
            name: "edit_file".into(),
            status: ToolStatus::Ok,
            output: "edited src/lib.rs: +1 -1 lines\n--- a/src/lib.rs\n+++ b/src/lib.rs\n\
                     @@ -1,3 +1,3 @@\n use std::io;\n-fn old_name() {}\n+fn new_name() {}\n \n"
                .into(),
            duration_ms: 12,
        },
        Event::ToolCallStarted {
            call_id: "c2".into(),
            name: "read_file".into(),
            arguments: json!({"path": "missing.rs"}),
        },
        Event::ToolCallFinished {
            call_id: "c2".into(),
            name: "read_file".into(),
            status: ToolStatus::Error,
            output: "missing.rs: no such file in the workspace".into(),
            duration_ms: 1,
        },
    ]);
    insta::assert_snapshot!(harness.screen(80, 20));
}

#[test]
fn pending_injection_and_queued_message() {
    let mut harness = Harness::started();
    harness.prompt("fix the bug");
    harness.event(text("Looking at the code"));
    harness.type_text("also check the tests");
    harness.key(KeyCode::Enter, KeyModifiers::NONE);
    harness.type_text("then write a summary");
    harness.key(KeyCode::Tab, KeyModifiers::NONE);
    let pending = harness.screen(80, 14);
    harness.events([
        Event::AssistantMessage {
            text: "Looking at the code".into(),
        },
        Event::UserMessage {
            text: "also check the tests".into(),
            kind: UserMessageKind::Injected,
            images: Vec::new(),
        },
        text("Tests checked.\n"),
    ]);
    let injected = harness.screen(80, 14);
    insta::assert_snapshot!("pending_injection_and_queued_message", pending);
    insta::assert_snapshot!("injection_applied_queue_waiting", injected);
}

#[test]
fn provider_error_and_failed_turn() {
    let mut harness = Harness::started();
    harness.prompt("hello");
    let message = "anthropic failed: rate limited (retry after 30 s)";
    harness.events([
        text("Partial ans"),
        Event::Error {
            message: message.into(),
        },
        Event::TurnFinished {
            turn: 1,
            status: TurnStatus::Failed,
            message: Some(message.into()),
            usage: Default::default(),
            cost_usd: 0.0,
        },
    ]);
    insta::assert_snapshot!(harness.screen(80, 12));
}

#[test]
fn interrupted_turn_and_usage() {
    let mut harness = Harness::started();
    harness.prompt("long task");
    harness.events([
        Event::Usage {
            last: Usage::default(),
            total: Usage {
                input_tokens: 12_400,
                output_tokens: 850,
                cache_read_tokens: 3_000,
                cache_write_tokens: 0,
            },
            cost_usd: 0.0512,
            context_percent: 7.7,
        },
        text("Working on it\nstill"),
    ]);
    harness.key(KeyCode::Esc, KeyModifiers::NONE);
    let interrupting = harness.screen(80, 10);
    harness.event(Event::TurnFinished {
        turn: 1,
        status: TurnStatus::Interrupted,
        message: None,
        usage: Default::default(),
        cost_usd: 0.0,
    });
    insta::assert_snapshot!("interrupting", interrupting);
    insta::assert_snapshot!("interrupted", harness.screen(80, 10));
}

#[test]
fn pager_shows_the_whole_transcript() -> TestResult {
    let mut harness = Harness::started();
    for turn in 0..6 {
        harness.prompt(&format!("question {turn}"));
        harness.events([
            Event::ToolCallStarted {
                call_id: format!("c{turn}"),
                name: "grep".into(),
                arguments: json!({"pattern": "TODO", "path": "src"}),
            },
            Event::ToolCallFinished {
                call_id: format!("c{turn}"),
                name: "grep".into(),
                status: ToolStatus::Ok,
                output: (1..=9)
                    .map(|n| format!("src/f{n}.rs:{n}: TODO\n"))
                    .collect(),
                duration_ms: 40,
            },
            Event::AssistantMessage {
                text: format!("Answer **{turn}**."),
            },
            Event::TurnFinished {
                turn,
                status: TurnStatus::Completed,
                message: None,
                usage: Default::default(),
                cost_usd: 0.0,
            },
        ]);
    }
    harness.key(KeyCode::Char('t'), KeyModifiers::CONTROL);
    let area = Rect::new(0, 0, 80, 20);
    let render = |harness: &mut Harness| -> Result<String, String> {
        let mut buf = Buffer::empty(area);
        let pager = harness
            .state
            .pager
            .as_mut()
            .ok_or("the pager is not open")?;
        pager_view::render(pager, &harness.state.transcript, area, &mut buf);
        Ok(text_of(&buf))
    };
    let end = render(&mut harness)?;
    harness.key(KeyCode::BackTab, KeyModifiers::NONE);
    harness.key(KeyCode::Enter, KeyModifiers::NONE);
    let expanded = render(&mut harness)?;
    harness.key(KeyCode::Home, KeyModifiers::NONE);
    harness.key(KeyCode::Char('/'), KeyModifiers::NONE);
    harness.type_text("question 3");
    harness.key(KeyCode::Enter, KeyModifiers::NONE);
    let searched = render(&mut harness)?;
    insta::assert_snapshot!("pager_end", end);
    insta::assert_snapshot!("pager_expanded_tool", expanded);
    insta::assert_snapshot!("pager_search", searched);
    harness.key(KeyCode::Char('q'), KeyModifiers::NONE);
    assert!(harness.state.pager.is_none());
    Ok(())
}

#[test]
fn first_run_panel() {
    let mut harness = Harness::new();
    harness
        .state
        .set_offline(FirstRun::from_error(&LaunchError::MissingKey {
            model: "claude-sonnet".into(),
            var: "ANTHROPIC_API_KEY".into(),
        }));
    insta::assert_snapshot!(harness.screen(80, 18));
}

#[test]
fn first_run_panel_offers_keyed_models_and_a_local_server() {
    let mut harness = Harness::new();
    let panel = FirstRun::from_error(&LaunchError::MissingKey {
        model: "gpt".into(),
        var: "OPENAI_API_KEY".into(),
    })
    .with_offers(vec![Offer {
        name: "claude-sonnet".into(),
        var: "ANTHROPIC_API_KEY".into(),
    }]);
    harness.state.set_offline(panel);
    insta::assert_snapshot!(harness.screen(80, 20));
}

#[test]
fn first_run_panel_asks_the_model_of_a_server_that_answers() {
    let mut harness = Harness::new();
    let mut panel = FirstRun::from_error(&LaunchError::MissingKey {
        model: "claude-sonnet".into(),
        var: "ANTHROPIC_API_KEY".into(),
    });
    let url = "http://127.0.0.1:8080/v1";
    let answered = Probe {
        server: "127.0.0.1:8080".into(),
        answer: Answer::Answers {
            status: 200,
            models: vec!["qwen3-coder".into(), "llama-3.3".into()],
        },
    };
    if let Some(setup) = panel.setup_mut() {
        setup.answer("1");
        setup.answer(url);
        setup.checked(url, &answered);
    }
    harness.state.set_offline(panel);
    insta::assert_snapshot!(harness.screen(80, 12));
}

#[test]
fn narrow_terminal_of_60_columns() {
    let mut harness = Harness::started();
    harness.prompt("explain the layout of this repository in a few words please");
    harness.events([
        Event::AssistantMessage {
            text: "The crate has **three** parts:\n\n1. the agent core, which runs the tool \
                   loop against the model\n2. the front ends (a TUI and a headless runner)\n\
                   3. memory, kept in SQLite"
                .into(),
        },
        Event::ToolCallStarted {
            call_id: "c1".into(),
            name: "glob".into(),
            arguments: json!({"pattern": "src/**/*.rs"}),
        },
    ]);
    harness.type_text("/");
    insta::assert_snapshot!(harness.screen(60, 30));
}

#[test]
fn retry_drops_the_partial_answer_and_fallback_names_the_new_model() {
    let mut harness = Harness::started();
    harness.prompt("hello");
    harness.event(text("First line of an answer\nand half"));
    harness.screen(80, 12);
    harness.event(Event::Retry {
        model: "claude-sonnet".into(),
        attempt: 2,
        delay_ms: 4000,
        reason: "overloaded".into(),
        discard_partial: true,
    });
    let retrying = harness.screen(80, 12);
    harness.events([
        Event::ModelFallback {
            from: "claude-sonnet".into(),
            to: "gpt".into(),
            reason: "overloaded".into(),
            discard_partial: false,
        },
        text("Answer from the fallback"),
    ]);
    insta::assert_snapshot!("retrying", retrying);
    insta::assert_snapshot!("fallback", harness.screen(80, 14));
}

#[test]
fn slash_commands_cost_compact_and_the_model_list() {
    let mut harness = Harness::started();
    harness.state.models = vec!["claude-sonnet".into(), "gpt-5".into()];
    harness.event(Event::Compacted {
        tokens_before: 151_000,
        tokens_after: 12_500,
        archive_id: 7,
        kind: CompactionKind::Model,
    });
    harness.event(Event::Notice {
        message: "AGENTS.md changed; the new instructions apply from the next turn".into(),
    });
    harness.type_text("/compact");
    let effects = harness.state.handle_key(
        KeyEvent::new(KeyCode::Enter, KeyModifiers::NONE),
        harness.now,
    );
    assert_eq!(effects, [Effect::Send(Op::Compact)]);
    for command in ["/cost", "/model"] {
        harness.type_text(command);
        harness.key(KeyCode::Enter, KeyModifiers::NONE);
    }
    insta::assert_snapshot!(harness.screen(80, 16));
}
