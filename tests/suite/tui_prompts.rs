//! Snapshots of what the agent puts to the user while it works: approval questions (a command,
//! a diff) and the panes of running sub-agents.

use crate::tui_support;

use std::time::Duration;

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use mnemo::protocol::{
    AgentActivity, AgentKind, AgentStatus, ApprovalAction, ApprovalDecision, Event, Op, TurnStatus,
};
use mnemo::sandbox::{ApprovalMode, Escalation};
use mnemo::tui::state::Effect;
use mnemo::tui::status::Activity;
use serde_json::json;
use tui_support::Harness;

#[test]
fn approval_requests_show_the_command_or_the_diff_and_take_an_answer() {
    let mut harness = Harness::started();
    harness.prompt("install the deps");
    harness.events([
        Event::ToolCallStarted {
            call_id: "c1".into(),
            name: "shell".into(),
            arguments: json!({"command": "npm install", "escalation": "network"}),
        },
        Event::ApprovalRequested {
            id: "approval-1".into(),
            call_id: "c1".into(),
            tool: "shell".into(),
            action: ApprovalAction::Command {
                command: "npm install".into(),
                escalation: Some(Escalation::Network),
                sandbox: "workspace-write, network on".into(),
            },
            reason: "the command asks for network access".into(),
            session_grant: Some("commands starting with `npm install`".into()),
            only_once: None,
        },
    ]);
    let command = harness.screen(80, 16);
    let key = |c: char| KeyEvent::new(KeyCode::Char(c), KeyModifiers::NONE);
    // A key typed as the question appears was meant for something else: it is typed.
    assert!(harness.state.handle_key(key('a'), harness.now).is_empty());
    assert_eq!(harness.state.composer.text(), "a");
    harness.now += Duration::from_secs(1);
    // While a message is being typed, letters stay letters; Alt with the letter answers.
    assert!(harness.state.handle_key(key('n'), harness.now).is_empty());
    assert_eq!(harness.state.composer.text(), "an");
    assert_eq!(
        harness.state.handle_key(
            KeyEvent::new(KeyCode::Char('a'), KeyModifiers::ALT),
            harness.now
        ),
        [Effect::Send(Op::Approval {
            id: "approval-1".into(),
            decision: ApprovalDecision::AllowSession,
        })]
    );
    harness.state.composer.clear();
    let answered = harness.screen(80, 16);
    harness.event(Event::ApprovalResolved {
        id: "approval-1".into(),
        decision: ApprovalDecision::AllowSession,
    });
    assert!(harness.state.approvals.is_empty());
    harness.events([
        Event::ToolCallStarted {
            call_id: "c2".into(),
            name: "edit_file".into(),
            arguments: json!({"path": "src/lib.rs"}),
        },
        Event::ApprovalRequested {
            id: "approval-2".into(),
            call_id: "c2".into(),
            tool: "edit_file".into(),
            action: ApprovalAction::Write {
                path: "src/lib.rs".into(),
                diff: "--- a/src/lib.rs\n+++ b/src/lib.rs\n@@ -1,2 +1,2 @@\n use std::io;\n\
                       -fn old_name() {}\n+fn new_name() {}\n"
                    .into(),
            },
            reason: "approval mode is ask".into(),
            session_grant: Some("writes to src/lib.rs".into()),
            only_once: None,
        },
    ]);
    let write = harness.screen(80, 18);
    harness.now += Duration::from_secs(1);
    let effects = harness
        .state
        .handle_key(KeyEvent::new(KeyCode::Esc, KeyModifiers::NONE), harness.now);
    assert_eq!(
        effects,
        [Effect::Send(Op::Approval {
            id: "approval-2".into(),
            decision: ApprovalDecision::Deny,
        })],
        "Esc denies instead of interrupting"
    );
    insta::assert_snapshot!("approval_command", command);
    insta::assert_snapshot!("approval_answered", answered);
    insta::assert_snapshot!("approval_write", write);
}

#[test]
fn a_question_from_a_sub_agent_after_the_turn_ended_stays_and_leaves_the_session_idle() {
    let mut harness = Harness::started();
    harness.prompt("start a helper");
    harness.event(Event::TurnFinished {
        turn: 1,
        status: TurnStatus::Completed,
        message: None,
        usage: Default::default(),
        cost_usd: 0.0,
    });
    harness.event(Event::ApprovalRequested {
        id: "approval-1".into(),
        call_id: "c9".into(),
        tool: "shell".into(),
        action: ApprovalAction::Command {
            command: "cargo build".into(),
            escalation: None,
            sandbox: "workspace-write, network off".into(),
        },
        reason: "approval mode is ask".into(),
        session_grant: None,
        only_once: None,
    });
    assert_eq!(harness.state.status.activity, Activity::AwaitingApproval);
    let shown = harness.screen(80, 10);
    assert!(shown.contains("1 allow once   3 deny"), "{shown}");
    harness.event(Event::ApprovalResolved {
        id: "approval-1".into(),
        decision: ApprovalDecision::Deny,
    });
    assert_eq!(harness.state.status.activity, Activity::Idle);
}

#[test]
fn sub_agents_show_as_nested_panes_with_live_status() {
    let mut harness = Harness::started();
    harness.prompt("review the crate");
    let started =
        |run_id: &str, parent: Option<&str>, depth: u32, label: &str| Event::AgentStarted {
            run_id: run_id.into(),
            session_id: format!("session-{run_id}"),
            parent_run: parent.map(String::from),
            depth,
            kind: AgentKind::Spawn,
            label: label.into(),
            model: "claude-sonnet".into(),
        };
    harness.events([
        Event::ToolCallStarted {
            call_id: "c1".into(),
            name: "spawn_agent".into(),
            arguments: json!({"prompt": "Review src/llm for error handling"}),
        },
        started("a1", None, 1, "Review src/llm for error handling"),
        started("a2", None, 1, "Check the README commands"),
        started("a1.a1", Some("a1"), 2, "Read src/llm/sse.rs"),
        Event::AgentActivity {
            run_id: "a1".into(),
            activity: AgentActivity::Tool {
                name: "spawn_agent".into(),
                arguments: json!({}),
            },
        },
        Event::AgentActivity {
            run_id: "a1.a1".into(),
            activity: AgentActivity::Tool {
                name: "read_file".into(),
                arguments: json!({"path": "src/llm/sse.rs"}),
            },
        },
        Event::AgentActivity {
            run_id: "a2".into(),
            activity: AgentActivity::Tool {
                name: "shell".into(),
                arguments: json!({"command": "cargo run --release -- --help"}),
            },
        },
    ]);
    let running = harness.screen(80, 16);
    harness.event(Event::AgentFinished {
        run_id: "a1.a1".into(),
        status: AgentStatus::Completed,
        summary: "sse.rs handles cut streams and retries".into(),
    });
    insta::assert_snapshot!("sub_agents_running", running);
    insta::assert_snapshot!("sub_agent_finished", harness.screen(80, 16));
}

#[test]
fn background_sub_agents_keep_their_clock_running_and_esc_cancels_them() {
    let mut harness = Harness::started();
    harness.state.status.approval_mode = ApprovalMode::Ask;
    harness.event(Event::AgentStarted {
        run_id: "a1".into(),
        session_id: "s1".into(),
        parent_run: None,
        depth: 1,
        kind: AgentKind::Spawn,
        label: "Index the docs".into(),
        model: "claude-sonnet".into(),
    });
    assert_eq!(harness.state.status.activity, Activity::Idle);
    // Idle, yet the pane's clock needs a redraw each second.
    let deadline = harness.state.next_deadline(harness.now);
    assert_eq!(deadline, Some(harness.now + Duration::from_secs(1)));
    let screen = harness.screen(80, 8);
    assert!(screen.contains("↳ a1  Index the docs"), "{screen}");
    assert!(screen.contains("approval ask"), "{screen}");
    let effects = harness
        .state
        .handle_key(KeyEvent::new(KeyCode::Esc, KeyModifiers::NONE), harness.now);
    assert_eq!(effects, [Effect::Send(Op::Interrupt)]);
}

#[test]
fn a_write_like_mcp_tool_is_put_to_the_user_with_its_server_and_arguments() {
    let mut harness = Harness::started();
    harness.prompt("save the notes");
    harness.events([
        Event::ToolCallStarted {
            call_id: "c1".into(),
            name: "mcp__filesystem__write_file".into(),
            arguments: json!({"path": "/srv/notes.txt", "content": "hello"}),
        },
        Event::ApprovalRequested {
            id: "approval-1".into(),
            call_id: "c1".into(),
            tool: "mcp__filesystem__write_file".into(),
            action: ApprovalAction::McpCall {
                server: "filesystem".into(),
                tool: "write_file".into(),
                arguments: "{\n  \"path\": \"/srv/notes.txt\",\n  \"content\": \"hello\"\n}".into(),
            },
            reason: "approval mode is ask".into(),
            session_grant: Some("calls to write_file of MCP server filesystem".into()),
            only_once: None,
        },
    ]);
    let shown = harness.screen(90, 16);
    assert!(
        shown.contains("Call write_file of MCP server filesystem?"),
        "{shown}"
    );
    assert!(shown.contains("\"path\": \"/srv/notes.txt\""), "{shown}");
    assert!(
        shown.contains("2 allow for this session: calls to write_file"),
        "{shown}"
    );
    insta::assert_snapshot!("approval_mcp_call", shown);
}

#[test]
fn a_commands_connection_to_an_unlisted_domain_is_put_to_the_user() {
    let mut harness = Harness::started();
    harness.prompt("update the dependencies");
    harness.events([
        Event::ToolCallStarted {
            call_id: "c1".into(),
            name: "shell".into(),
            arguments: json!({"command": "cargo update"}),
        },
        Event::ApprovalRequested {
            id: "approval-1".into(),
            call_id: "c1".into(),
            tool: "network".into(),
            action: ApprovalAction::Network {
                host: "index.crates.io".into(),
                port: 443,
            },
            reason: "index.crates.io is not in [sandbox] allow_domains".into(),
            session_grant: Some("connections to index.crates.io".into()),
            only_once: None,
        },
    ]);
    let shown = harness.screen(90, 14);
    assert!(
        shown.contains("Allow a connection to index.crates.io:443?"),
        "{shown}"
    );
    assert!(
        shown.contains("2 allow for this session: connections to index.crates.io"),
        "{shown}"
    );
    insta::assert_snapshot!("approval_network", shown);
}

#[test]
fn letters_typed_while_a_question_is_open_are_typed_and_the_menu_answers_only_an_empty_box() {
    let mut harness = Harness::started();
    harness.prompt("tidy up");
    harness.event(Event::ApprovalRequested {
        id: "approval-1".into(),
        call_id: "c1".into(),
        tool: "shell".into(),
        action: ApprovalAction::Command {
            command: "rm -f a.txt | cat".into(),
            escalation: None,
            sandbox: "workspace-write, network off".into(),
        },
        reason: "approval mode is ask".into(),
        session_grant: None,
        only_once: Some("it has a pipe `|`".into()),
    });
    let key = |c: char| KeyEvent::new(KeyCode::Char(c), KeyModifiers::NONE);
    // An answer the question does not offer waits out the first moments like any other: typed.
    assert!(harness.state.handle_key(key('2'), harness.now).is_empty());
    assert_eq!(harness.state.composer.text(), "2");
    harness.state.composer.clear();
    harness.now += Duration::from_secs(1);
    for c in "yes but first tell me why".chars() {
        let effects = harness.state.handle_key(key(c), harness.now);
        assert!(effects.is_empty(), "{c:?} did {effects:?}");
    }
    assert_eq!(harness.state.composer.text(), "yes but first tell me why");
    // A digit in a message is typed too.
    assert!(harness.state.handle_key(key('1'), harness.now).is_empty());
    assert!(harness.state.composer.text().ends_with("why1"));
    harness.state.composer.clear();
    assert_eq!(
        harness.state.handle_key(key('1'), harness.now),
        [Effect::Send(Op::Approval {
            id: "approval-1".into(),
            decision: ApprovalDecision::AllowOnce,
        })]
    );
    assert_eq!(harness.state.composer.text(), "");
}
