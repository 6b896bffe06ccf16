//! Nothing typed is lost and every answer leaves a record: text sent while the session starts
//! waits for it, text that cannot be sent goes back into the box, keys typed while a question
//! is open are typed, Up takes a queued message back, Ctrl+U and Ctrl+Z edit as in a shell,
//! approvals are recorded in the transcript in words for the person, and the exit says how to
//! come back.

use crate::tui_support;

use std::time::Duration;

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use mnemo::host::LaunchError;
use mnemo::protocol::{ApprovalAction, ApprovalDecision, Event, Op, ToolStatus};
use mnemo::tui::first_run::FirstRun;
use mnemo::tui::pager_view;
use mnemo::tui::state::Effect;
use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use tui_support::Harness;

fn key(code: KeyCode) -> KeyEvent {
    KeyEvent::new(code, KeyModifiers::NONE)
}

fn ctrl(c: char) -> KeyEvent {
    KeyEvent::new(KeyCode::Char(c), KeyModifiers::CONTROL)
}

#[test]
fn text_sent_while_the_session_starts_is_sent_when_it_is_ready() {
    let mut harness = Harness::new();
    harness.type_text("fix the failing test");
    let effects = harness.state.handle_key(key(KeyCode::Enter), harness.now);
    assert!(effects.is_empty(), "nothing can be sent yet: {effects:?}");
    harness.type_text("then run clippy");
    harness.state.handle_key(key(KeyCode::Enter), harness.now);
    let waiting = harness.screen(80, 10);
    assert!(waiting.contains("fix the failing test"), "{waiting}");
    harness.event(Event::SessionStarted {
        session_id: "0f3c9a7e-5b1d-4c2e-9f00-1234567890ab".into(),
        model: "claude-sonnet".into(),
        workspace: "/home/ada/project".into(),
    });
    assert_eq!(
        harness.state.take_outbox(),
        [
            Op::user_input("fix the failing test"),
            Op::user_input("then run clippy")
        ]
    );
    insta::assert_snapshot!("typed_while_starting", waiting);
}

#[test]
fn text_that_cannot_be_sent_goes_back_into_the_box() {
    let mut harness = Harness::new();
    harness.type_text("hello there");
    harness.state.handle_key(key(KeyCode::Enter), harness.now);
    let error = LaunchError::NoDataDir;
    harness.state.set_offline(FirstRun::from_error(&error));
    assert_eq!(harness.state.composer.text(), "hello there");
    assert!(harness.state.pending.is_empty());
    // Sent again while no model is ready: still kept.
    harness.state.handle_key(key(KeyCode::Enter), harness.now);
    assert_eq!(harness.state.composer.text(), "hello there");
}

#[test]
fn up_takes_a_queued_message_back_to_edit() {
    let mut harness = Harness::started();
    harness.prompt("first");
    harness.type_text("second thing");
    let effects = harness.state.handle_key(key(KeyCode::Tab), harness.now);
    assert_eq!(effects, [Effect::Send(Op::user_input("second thing"))]);
    let effects = harness.state.handle_key(key(KeyCode::Up), harness.now);
    assert_eq!(
        effects,
        [Effect::Send(Op::Withdraw {
            text: "second thing".into()
        })]
    );
    assert_eq!(harness.state.composer.text(), "second thing");
    assert!(harness.state.pending.is_empty(), "shown as queued no more");
}

#[test]
fn ctrl_u_deletes_to_the_start_of_the_line_and_ctrl_z_undoes() {
    let mut harness = Harness::started();
    harness.type_text("keep this line");
    harness.state.handle_key(
        KeyEvent::new(KeyCode::Enter, KeyModifiers::ALT),
        harness.now,
    );
    harness.type_text("drop this");
    harness.state.handle_key(ctrl('u'), harness.now);
    assert_eq!(harness.state.composer.text(), "keep this line\n");
    harness.state.handle_key(ctrl('z'), harness.now);
    assert_eq!(harness.state.composer.text(), "keep this line\ndrop this");
}

fn ask(harness: &mut Harness, id: &str, action: ApprovalAction, grant: Option<&str>) {
    // Why a command can be allowed only once, as the agent says it.
    let only_once = match &action {
        ApprovalAction::Command { command, .. } => mnemo::sandbox::approval::command_grant(command)
            .err()
            .map(|why| why.describe()),
        _ => None,
    };
    harness.event(Event::ApprovalRequested {
        id: id.into(),
        call_id: format!("call-{id}"),
        tool: match &action {
            ApprovalAction::Command { .. } => "shell".into(),
            _ => "write_file".into(),
        },
        action,
        reason: "approval mode is ask".into(),
        session_grant: grant.map(String::from),
        only_once,
    });
    harness.now += Duration::from_secs(1);
}

#[test]
fn answers_are_recorded_in_words_for_the_person() {
    let mut harness = Harness::started();
    harness.prompt("set things up");
    let command = |text: &str| ApprovalAction::Command {
        command: text.into(),
        escalation: None,
        sandbox: "workspace-write, network off".into(),
    };
    ask(
        &mut harness,
        "q1",
        command("cargo test"),
        Some("commands starting with `cargo test`"),
    );
    harness
        .state
        .handle_key(key(KeyCode::Char('2')), harness.now);
    harness.event(Event::ApprovalResolved {
        id: "q1".into(),
        decision: ApprovalDecision::AllowSession,
    });
    // A command a grant cannot cover: `2` says why instead of doing nothing.
    ask(&mut harness, "q2", command("curl x | sh"), None);
    let effects = harness
        .state
        .handle_key(key(KeyCode::Char('2')), harness.now);
    assert!(effects.is_empty());
    let explained = harness.screen(100, 30);
    assert!(
        explained.contains(
            "2 (allow for this session) is not offered for this command: it has a pipe `|`"
        ),
        "{explained}"
    );
    harness
        .state
        .handle_key(key(KeyCode::Char('3')), harness.now);
    harness.event(Event::ApprovalResolved {
        id: "q2".into(),
        decision: ApprovalDecision::Deny,
    });
    harness.event(Event::ToolCallFinished {
        call_id: "call-q2".into(),
        name: "shell".into(),
        status: ToolStatus::Error,
        output: "not run: the user denied this action. Do not try it again another way; ask \
                 the user how to proceed if it is needed"
            .into(),
        duration_ms: 0,
    });
    ask(
        &mut harness,
        "q3",
        ApprovalAction::Write {
            path: "notes.md".into(),
            diff: "--- a/notes.md\n+++ b/notes.md\n@@ -0,0 +1 @@\n+hi\n".into(),
        },
        Some("writes to notes.md"),
    );
    harness
        .state
        .handle_key(key(KeyCode::Char('1')), harness.now);
    harness.event(Event::ApprovalResolved {
        id: "q3".into(),
        decision: ApprovalDecision::AllowOnce,
    });
    let screen = harness.screen(100, 30);
    assert!(!screen.contains("Do not try it again"), "{screen}");
    insta::assert_snapshot!("approval_records", screen);
}

#[test]
fn the_exit_line_names_the_session_and_how_to_resume_it() {
    insta::assert_snapshot!(
        "exit_line",
        mnemo::tui::exit_line("1959ed58-2f3a-4c1b-9d00-aaaaaaaaaaaa")
    );
}

#[test]
fn keys_typed_while_a_question_is_open_are_not_lost() {
    let mut harness = Harness::started();
    harness.prompt("deploy");
    harness.event(Event::ApprovalRequested {
        id: "q".into(),
        call_id: "c".into(),
        tool: "shell".into(),
        action: ApprovalAction::Command {
            command: "make deploy".into(),
            escalation: None,
            sandbox: "workspace-write, network off".into(),
        },
        reason: "approval mode is ask".into(),
        session_grant: Some("commands starting with `make deploy`".into()),
        only_once: None,
    });
    harness.type_text("why is");
    assert_eq!(harness.state.composer.text(), "why is");
    assert_eq!(harness.state.approvals[0].answered, None);
}

#[test]
fn the_model_picker_shows_keys_and_filters_as_you_type() {
    use mnemo::tui::model_picker::{KeyNote, ModelInfo};
    let mut harness = Harness::started();
    harness.state.model_info = vec![
        ModelInfo {
            name: "claude-sonnet".into(),
            detail: "claude-sonnet-4-5 on api.anthropic.com".into(),
            key: KeyNote::Available("ANTHROPIC_API_KEY".into()),
        },
        ModelInfo {
            name: "gpt".into(),
            detail: "gpt-5.1 on api.openai.com".into(),
            key: KeyNote::Missing("OPENAI_API_KEY".into()),
        },
        ModelInfo {
            name: "ollama".into(),
            detail: "qwen3-coder on localhost".into(),
            key: KeyNote::NotNeeded,
        },
    ];
    harness.state.models = harness
        .state
        .model_info
        .iter()
        .map(|m| m.name.clone())
        .collect();
    harness.type_text("/model");
    harness.state.handle_key(key(KeyCode::Enter), harness.now);
    let all = harness.screen(100, 14);
    harness.type_text("loc");
    let filtered = harness.screen(100, 14);
    let effects = harness.state.handle_key(key(KeyCode::Enter), harness.now);
    let asked = Op::SetModel {
        model: "ollama".into(),
    };
    assert_eq!(effects, [Effect::Send(asked)]);
    insta::assert_snapshot!("model_picker", all);
    insta::assert_snapshot!("model_picker_filtered", filtered);
}

#[test]
fn a_large_paste_is_a_chip_in_the_box_and_the_transcript_but_sent_whole() {
    let mut harness = Harness::started();
    let log: String = (1..=200).map(|n| format!("test {n:>3} ... ok\n")).collect();
    harness.type_text("why does this fail? ");
    harness.state.handle_paste(&log);
    let typing = harness.screen(70, 8);
    assert!(typing.contains("[pasted 200 lines · 3.2 kB]"), "{typing}");
    assert!(!typing.contains("test   1"), "{typing}");
    let effects = harness.state.handle_key(key(KeyCode::Enter), harness.now);
    let sent = format!("why does this fail? {log}");
    assert_eq!(effects, [Effect::Send(Op::user_input(sent.clone()))]);
    harness.event(Event::UserMessage {
        text: sent,
        kind: mnemo::protocol::UserMessageKind::Prompt,
        images: Vec::new(),
    });
    let shown = harness.screen(70, 8);
    assert!(
        shown.contains("› why does this fail? [pasted 200 lines · 3.2 kB]"),
        "{shown}"
    );
    assert!(!shown.contains("test 200"), "{shown}");
    insta::assert_snapshot!("paste_chip", format!("{typing}\n----\n{shown}"));
    // The pager shows what was sent when the message is opened.
    harness.state.handle_key(ctrl('t'), harness.now);
    let pager = pager_screen(&mut harness, 70, 30);
    assert!(pager.contains("[pasted 200 lines"), "{pager}");
    harness.state.handle_key(key(KeyCode::Enter), harness.now);
    let pager = pager_screen(&mut harness, 70, 30);
    assert!(pager.contains("test 200 ... ok"), "{pager}");
}

fn pager_screen(harness: &mut Harness, width: u16, height: u16) -> String {
    let area = Rect::new(0, 0, width, height);
    let mut buf = Buffer::empty(area);
    if let Some(pager) = harness.state.pager.as_mut() {
        pager_view::render(pager, &harness.state.transcript, area, &mut buf);
    }
    tui_support::text_of(&buf)
}

#[test]
fn ctrl_o_expands_a_paste_chip_into_its_text() {
    let mut harness = Harness::started();
    let lines: String = (1..=12).map(|n| format!("line {n}\n")).collect();
    harness.state.handle_paste(&lines);
    assert!(
        harness
            .state
            .composer
            .text()
            .starts_with("[pasted 12 lines")
    );
    harness.state.handle_key(ctrl('o'), harness.now);
    assert_eq!(harness.state.composer.text(), lines);
}

#[test]
fn enter_on_the_running_session_in_the_picker_keeps_the_session() {
    use mnemo::memory::types::SessionRow;
    use mnemo::tui::picker::{PickerCancel, SessionPicker};
    let mut harness = Harness::started();
    let id = harness.state.status.session_id.clone();
    let row = SessionRow {
        id: id.clone(),
        parent_id: None,
        created_at: 0,
        updated_at: 0,
        cwd: "/home/ada/project".into(),
        title: "fix the parser".into(),
        subtitle: None,
        model: "claude-sonnet".into(),
        status: "active".into(),
        message_count: 2,
        preview: None,
    };
    harness.state.picker = Some(SessionPicker::new(
        vec![row],
        0,
        Some(id),
        PickerCancel::Close,
    ));
    let effects = harness.state.handle_key(key(KeyCode::Enter), harness.now);
    assert!(effects.is_empty(), "{effects:?}");
    assert!(harness.state.picker.is_none());
    assert!(harness.screen(80, 10).contains("Already in this session"));
}

#[test]
fn esc_twice_on_an_empty_idle_box_asks_for_the_turns_to_rewind() {
    let mut harness = Harness::started();
    let now = harness.now;
    assert!(harness.state.handle_key(key(KeyCode::Esc), now).is_empty());
    assert_eq!(
        harness.state.handle_key(key(KeyCode::Esc), now),
        vec![Effect::Send(Op::ListTurns)]
    );
    // A key in between, or a pause past the window, takes the first Esc back.
    harness.state.handle_key(key(KeyCode::Esc), now);
    harness.type_text("x");
    harness.state.handle_key(key(KeyCode::Backspace), now);
    assert!(harness.state.handle_key(key(KeyCode::Esc), now).is_empty());
    let later = now + Duration::from_secs(5);
    assert!(
        harness
            .state
            .handle_key(key(KeyCode::Esc), later)
            .is_empty()
    );
}
