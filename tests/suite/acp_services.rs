//! `mnemo acp` with an editor that offers its file system and terminal: reads see the
//! editor's unsaved buffers, approved writes go to the editor, commands run in its terminal
//! inside mnemo's sandbox, and nothing the workspace guard refuses ever reaches the editor.

use crate::acp_support;

use acp_support::editor::{self, Editor};
use acp_support::{LIMIT, Seen, Workspace, agent, prompt};
use std::time::{Duration, Instant};

use agent_client_protocol::v1::schema::{
    CancelNotification, SessionUpdate, StopReason, ToolCallContent, ToolCallStatus,
};
use serde_json::{Value, json};

/// Runs one prompt whose model makes `calls` (one tool call each, in turns), with `editor`
/// and mnemo's `flags`; what the client saw.
async fn prompted(ws: &Workspace, editor: &Editor, calls: Vec<Value>, flags: &[&str]) -> Seen {
    let mut turns: Vec<Value> = calls
        .into_iter()
        .map(|call| json!({"tool_calls": [call]}))
        .collect();
    turns.push(json!({"text": "Done."}));
    let model = ws.script(json!({ "turns": turns }));
    let seen = Seen::default();
    let main = async |cx| {
        let id = editor::new_session(&cx, ws).await?;
        cx.send_request(prompt(&id, "go")).block_task().await
    };
    let done = tokio::time::timeout(
        LIMIT,
        editor::run(agent(ws, &model, flags), &seen, editor, main),
    )
    .await
    .unwrap_or_else(|e| panic!("{e}"))
    .unwrap_or_else(|e| panic!("{e:?}"));
    assert_eq!(done.stop_reason, StopReason::EndTurn);
    seen
}

/// The status and text (what the model was given) of tool call `call` when it finished.
fn result(seen: &Seen, call: &str) -> (ToolCallStatus, String) {
    let finished = seen.updates().into_iter().find_map(|u| match u {
        SessionUpdate::ToolCallUpdate(update)
            if &*update.tool_call_id.0 == call && update.fields.status.is_some() =>
        {
            Some(update.fields)
        }
        _ => None,
    });
    let fields = finished.unwrap_or_else(|| panic!("call {call} never finished"));
    let text: String = fields
        .content
        .iter()
        .flatten()
        .filter_map(|content| match content {
            ToolCallContent::Content(shown) => acp_support::text(&shown.content),
            _ => None,
        })
        .collect();
    (fields.status.unwrap_or_else(|| panic!("no status")), text)
}

fn read_call(id: &str, path: &str) -> Value {
    json!({"id": id, "name": "read_file", "arguments": {"path": path}})
}

fn real(ws: &Workspace) -> std::path::PathBuf {
    std::fs::canonicalize(ws.path()).unwrap_or_else(|e| panic!("{e}"))
}

#[tokio::test(flavor = "multi_thread")]
async fn read_file_sees_the_editors_unsaved_buffer() {
    let ws = Workspace::new();
    ws.write("notes.txt", "saved on disk\n");
    let editor = Editor::with_buffer(&ws, "notes.txt", "unsaved in the editor\n");
    let seen = prompted(&ws, &editor, vec![read_call("r1", "notes.txt")], &[]).await;
    let (status, text) = result(&seen, "r1");
    assert_eq!(status, ToolCallStatus::Completed);
    assert!(text.contains("unsaved in the editor"), "{text}");
    assert!(!text.contains("saved on disk"), "{text}");
    assert_eq!(editor.reads(), [real(&ws).join("notes.txt")]);
}

#[tokio::test(flavor = "multi_thread")]
async fn an_approved_write_goes_to_the_editor_and_not_to_disk() {
    let ws = Workspace::new();
    ws.write("plan.md", "old plan\n");
    let editor = Editor::default();
    let write = json!({"id": "w1", "name": "write_file",
                       "arguments": {"path": "plan.md", "content": "new plan\n"}});
    let seen = prompted(&ws, &editor, vec![write], &["--approval", "ask"]).await;
    assert_eq!(
        seen.asked().len(),
        1,
        "the write was put to the person first"
    );
    let (status, text) = result(&seen, "w1");
    assert_eq!(status, ToolCallStatus::Completed, "{text}");
    assert!(text.contains("+new plan"), "{text}");
    assert_eq!(
        editor.writes(),
        [(real(&ws).join("plan.md"), "new plan\n".to_string())]
    );
    assert_eq!(
        ws.read("plan.md"),
        "old plan\n",
        "the editor saves, not mnemo"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn reads_outside_the_workspace_or_of_hidden_files_never_reach_the_editor() {
    let ws = Workspace::new();
    std::fs::create_dir_all(ws.path().join(".cfg")).unwrap_or_else(|e| panic!("{e}"));
    ws.write(".cfg/secret.toml", "key = 1\n");
    let editor = Editor::default();
    let calls = vec![
        read_call("out", "../outside.txt"),
        read_call("etc", "/etc/hostname"),
        read_call("hidden", ".cfg/secret.toml"),
    ];
    let seen = prompted(&ws, &editor, calls, &[]).await;
    for call in ["out", "etc", "hidden"] {
        let (status, text) = result(&seen, call);
        assert_eq!(status, ToolCallStatus::Failed, "{call}: {text}");
    }
    assert_eq!(editor.reads(), Vec::<std::path::PathBuf>::new());
}

#[tokio::test(flavor = "multi_thread")]
async fn a_command_runs_in_the_editors_terminal_inside_the_sandbox() {
    let ws = Workspace::new();
    let name = ws
        .path()
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let escaped = ws.path().with_file_name(format!("{name}.escaped"));
    let command = format!("echo from-the-terminal; touch ../{name}.escaped; echo done");
    let shell = json!({"id": "s1", "name": "shell", "arguments": {"command": command}});
    let editor = Editor::default();
    let seen = prompted(&ws, &editor, vec![shell], &[]).await;
    let (status, text) = result(&seen, "s1");
    assert_eq!(status, ToolCallStatus::Completed, "{text}");
    assert!(
        text.contains("from-the-terminal") && text.contains("done"),
        "{text}"
    );
    let commands = editor.commands();
    assert_eq!(commands.len(), 1, "{commands:?}");
    assert_eq!(
        commands[0].1.first().map(String::as_str),
        Some("sandbox-exec")
    );
    assert!(
        !escaped.exists(),
        "the terminal's command wrote outside the workspace"
    );
    let embedded = seen.updates().iter().any(|u| {
        matches!(u, SessionUpdate::ToolCallUpdate(update)
            if update.fields.content.iter().flatten()
                .any(|c| matches!(c, ToolCallContent::Terminal(_))))
    });
    assert!(embedded, "the tool call shows the editor's terminal");
}

#[tokio::test(flavor = "multi_thread")]
async fn an_editor_that_fails_gets_reads_from_disk_and_writes_and_commands_fail() {
    let ws = Workspace::new();
    ws.write("notes.txt", "saved on disk\n");
    let editor = Editor::failing();
    let calls = vec![
        read_call("r1", "notes.txt"),
        json!({"id": "w1", "name": "write_file",
               "arguments": {"path": "notes.txt", "content": "changed\n"}}),
        json!({"id": "s1", "name": "shell", "arguments": {"command": "echo ran > ran.txt"}}),
    ];
    let seen = prompted(&ws, &editor, calls, &[]).await;
    let (status, text) = result(&seen, "r1");
    assert_eq!(status, ToolCallStatus::Completed, "{text}");
    assert!(text.contains("saved on disk"), "{text}");
    let (status, text) = result(&seen, "w1");
    assert_eq!(status, ToolCallStatus::Failed, "{text}");
    assert!(text.contains("the editor did not write it"), "{text}");
    assert_eq!(ws.read("notes.txt"), "saved on disk\n");
    let (status, text) = result(&seen, "s1");
    assert_eq!(status, ToolCallStatus::Failed, "{text}");
    assert!(text.contains("editor's terminal failed"), "{text}");
    assert!(
        !ws.path().join("ran.txt").exists(),
        "the command ran anyway"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_cancel_kills_the_command_in_the_editors_terminal() {
    let ws = Workspace::new();
    let model = ws.script(json!({"turns": [
        {"tool_calls": [{"id": "s1", "name": "shell", "arguments": {"command": "sleep 30"}}]},
        {"text": "never"},
    ]}));
    let editor = Editor::default();
    let seen = Seen::default();
    let main = async |cx: agent_client_protocol::v1::ConnectionTo<agent_client_protocol::Agent>| {
        let id = editor::new_session(&cx, &ws).await?;
        let turn = cx.send_request(prompt(&id, "wait")).block_task();
        let cancel = async {
            let deadline = Instant::now() + Duration::from_secs(20);
            while editor.commands().is_empty() {
                assert!(
                    Instant::now() < deadline,
                    "the command never reached the terminal"
                );
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
            cx.send_notification(CancelNotification::new(id.clone()))
        };
        let started = Instant::now();
        let (turn, cancelled) = futures_util::join!(turn, cancel);
        cancelled?;
        let took = started.elapsed();
        let deadline = Instant::now() + Duration::from_secs(10);
        while editor.kills().is_empty() {
            assert!(
                Instant::now() < deadline,
                "the terminal was never told to kill"
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        Ok((turn?, took))
    };
    let (done, took) = tokio::time::timeout(
        LIMIT,
        editor::run(agent(&ws, &model, &[]), &seen, &editor, main),
    )
    .await
    .unwrap_or_else(|e| panic!("{e}"))
    .unwrap_or_else(|e| panic!("{e:?}"));
    assert_eq!(done.stop_reason, StopReason::Cancelled);
    assert!(took < Duration::from_secs(20), "not stopped: {took:?}");
    assert_eq!(editor.kills(), ["term-1"]);
}
