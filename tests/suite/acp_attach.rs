//! `mnemo acp --attach`: the editor's session runs in `mnemo serve`, reached through its
//! gateway, and lives on there when the editor leaves.

use crate::acp_support;

use crate::cli_support::wait_for;
use acp_support::{Answer, LIMIT, Seen, Workspace, agent_with, new_session, prompt, run};
use agent_client_protocol::v1::schema::StopReason;
use serde_json::json;

fn terminate(child: &std::process::Child) {
    let pid = libc::pid_t::try_from(child.id()).unwrap_or_else(|e| panic!("{e}"));
    // SAFETY: sends SIGTERM to a child this test started.
    unsafe { libc::kill(pid, libc::SIGTERM) };
}

#[tokio::test(flavor = "multi_thread")]
async fn an_attached_session_runs_in_the_daemon_and_outlives_the_editor() {
    let ws = Workspace::new();
    let model = ws.script(json!({"turns": [
        {"when": "from the editor", "text": "served reply"},
        {"when": "from the terminal", "text": "still here"},
    ]}));
    let mut daemon = ws
        .command(&["--model", &model, "serve"])
        .spawn()
        .unwrap_or_else(|e| panic!("{e}"));
    let socket = ws.path().join(".data/gateway.sock");
    wait_for("the gateway socket", || socket.exists()).unwrap_or_else(|e| panic!("{e}"));

    let seen = Seen::default();
    let main = async |cx| {
        let id = new_session(&cx, &ws).await?;
        let done = cx
            .send_request(prompt(&id, "from the editor"))
            .block_task()
            .await?;
        Ok((id, done))
    };
    let editor = agent_with(&ws, &model, &[], &["--attach"]);
    let (id, done) = tokio::time::timeout(LIMIT, run(editor, &seen, Answer::Deny, main))
        .await
        .unwrap_or_else(|e| panic!("{e}"))
        .unwrap_or_else(|e| panic!("{e:?}"));
    assert_eq!(done.stop_reason, StopReason::EndTurn);
    assert_eq!(seen.reply(), "served reply");

    // The editor left; the session goes on in the daemon, where a script reaches it.
    let later = ws.mnemo(
        &[
            "--model",
            &model,
            "run",
            "--attach",
            "--resume",
            &id,
            "from the terminal",
        ],
        None,
    );
    terminate(&daemon);
    let _ = daemon.wait();
    let stdout = String::from_utf8_lossy(&later.stdout);
    assert!(
        later.status.success(),
        "{}",
        String::from_utf8_lossy(&later.stderr)
    );
    assert!(stdout.contains("still here"), "{stdout}");
}
