//! A capability is a command like any other: under the default sandbox (workspace-write,
//! network off, real bubblewrap) it cannot write outside the workspace or reach the network,
//! and under approval mode `ask` each call waits for the user, a denial meaning it never ran.
#![cfg(target_os = "linux")]

use crate::capability_support;

use std::path::{Path, PathBuf};

use capability_support::{
    Agent, Fallible, TestResult, approvals, create_args, finished, scripted_chain, status,
};
use mnemo::memory::Store;
use mnemo::protocol::{ApprovalAction, ApprovalDecision, Event, Op, ToolStatus, TurnStatus};
use mnemo::sandbox::ApprovalMode;
use serde_json::{Value, json};

/// Writes the text "pwned" to the `path` it is given.
const WRITER: &str = "import json, sys\n\
    path = json.load(sys.stdin)[\"path\"]\n\
    open(path, \"w\").write(\"pwned\")\n\
    print(\"wrote\", path)\n";

/// Fetches the `url` it is given.
const FETCHER: &str = "import json, sys, urllib.request\n\
    url = json.load(sys.stdin)[\"url\"]\n\
    print(urllib.request.urlopen(url, timeout=5).read().decode())\n";

fn call(name: &str, arguments: Value) -> Value {
    json!({"tool_calls": [{"name": name, "arguments": arguments}]})
}

/// A workspace `ws` inside a temporary directory the test keeps.
fn workspace() -> Fallible<(tempfile::TempDir, PathBuf)> {
    let dir = tempfile::tempdir()?;
    let ws = dir.path().canonicalize()?.join("ws");
    std::fs::create_dir(&ws)?;
    Ok((dir, ws))
}

async fn sandboxed(turns: Value, ws: &Path) -> Fallible<Agent> {
    let store = Store::open_in_memory()?;
    Agent::start(scripted_chain(turns)?, &store, ws, |_| {}).await
}

#[tokio::test]
async fn a_capability_cannot_write_outside_the_workspace() -> TestResult {
    let (_dir, ws) = workspace()?;
    // Outside /tmp (which the sandbox replaces) in a usual checkout, so the sandbox sees the
    // host's directory and must refuse the write.
    let outside = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR"))?;
    let stamp = std::process::id();
    let home = PathBuf::from(std::env::var("HOME")?);
    let targets = [
        outside.path().join("escaped.txt"),
        home.join(format!(".mnemo-capability-escape-{stamp}")),
        ws.join(format!(
            "../../../../../../../etc/mnemo-capability-escape-{stamp}"
        )),
    ];
    let mut turns = vec![call(
        "capability_create",
        create_args("scribble", "python3", WRITER),
    )];
    for target in &targets {
        turns.push(call("cap_scribble", json!({"path": target})));
    }
    turns.push(call("cap_scribble", json!({"path": "inside.txt"})));
    turns.push(json!({"text": "done"}));
    let mut agent = sandboxed(json!(turns), &ws).await?;

    let events = agent.turn("try writing everywhere").await?;
    assert_eq!(status(&events), Some(TurnStatus::Completed));
    let calls = finished(&events);
    assert_eq!(calls.len(), 5, "{calls:#?}");
    assert_eq!(calls[0].1, ToolStatus::Ok, "{}", calls[0].2);
    for ((tool, outcome, output), target) in calls[1..4].iter().zip(&targets) {
        assert_eq!(tool, "cap_scribble");
        assert_eq!(*outcome, ToolStatus::Error, "{target:?}: {output}");
        assert!(output.contains("exit code 1"), "{output}");
        // Read-only outside the workspace, or not there at all where the sandbox puts its own
        // /tmp over the host's (a checkout under /tmp).
        assert!(
            [
                "Read-only file system",
                "Permission denied",
                "No such file or directory"
            ]
            .iter()
            .any(|refusal| output.contains(refusal)),
            "{output}"
        );
        assert!(!target.exists(), "{target:?} was written");
    }
    // The same capability writes in the workspace: the sandbox, not the script, refused.
    assert_eq!(calls[4].1, ToolStatus::Ok, "{}", calls[4].2);
    assert_eq!(std::fs::read_to_string(ws.join("inside.txt"))?, "pwned");
    assert_eq!(std::fs::read_dir(outside.path())?.count(), 0);
    agent.finish().await?;
    Ok(())
}

#[tokio::test]
async fn a_capability_cannot_reach_the_network_when_it_is_off() -> TestResult {
    let (_dir, ws) = workspace()?;
    let listener = std::net::TcpListener::bind("127.0.0.1:0")?;
    listener.set_nonblocking(true)?;
    let url = format!("http://{}/secret", listener.local_addr()?);
    let turns = json!([
        call("capability_create", create_args("fetch-url", "python3", FETCHER)),
        call("cap_fetch_url", json!({"url": url})),
        {"text": "no network"}
    ]);
    let mut agent = sandboxed(turns, &ws).await?;

    let events = agent.turn("fetch the secret").await?;
    assert_eq!(status(&events), Some(TurnStatus::Completed));
    let calls = finished(&events);
    assert_eq!(calls[0].1, ToolStatus::Ok, "{}", calls[0].2);
    let (tool, outcome, output) = &calls[1];
    assert_eq!(
        (tool.as_str(), *outcome),
        ("cap_fetch_url", ToolStatus::Error)
    );
    assert!(output.contains("urlopen error"), "{output}");
    match listener.accept() {
        Err(err) if err.kind() == std::io::ErrorKind::WouldBlock => {}
        Err(err) => return Err(err.into()),
        Ok((_, peer)) => panic!("the capability connected from {peer}"),
    }
    agent.finish().await?;
    Ok(())
}

/// The events up to the next approval question, and its id and action; the question must
/// be about `tool`.
async fn question(agent: &mut Agent, tool: &str) -> Fallible<(String, ApprovalAction)> {
    let events = agent
        .until(|e| matches!(e, Event::ApprovalRequested { .. }))
        .await?;
    match events.last() {
        Some(Event::ApprovalRequested {
            id,
            tool: asked,
            action,
            ..
        }) => {
            assert_eq!(asked, tool);
            Ok((id.clone(), action.clone()))
        }
        other => Err(format!("no question: {other:?}").into()),
    }
}

async fn answer(agent: &Agent, id: String, decision: ApprovalDecision) -> TestResult {
    agent.send(Op::Approval { id, decision }).await
}

#[tokio::test]
async fn in_ask_mode_a_capability_call_waits_for_approval_and_a_denial_stops_it() -> TestResult {
    let (_dir, ws) = workspace()?;
    let store = Store::open_in_memory()?;
    let turns = json!([
        call("capability_create", create_args("mark-ran", "bash", "echo ran >> ran.txt")),
        call("cap_mark_ran", json!({})),
        {"text": "you said no"},
        call("cap_mark_ran", json!({})),
        {"text": "it ran"}
    ]);
    let chain = scripted_chain(turns)?;
    let mut agent = Agent::start(chain, &store, &ws, |settings| {
        settings.approvals = approvals(ApprovalMode::Ask);
    })
    .await?;

    agent.send(Op::user_input("mark it")).await?;
    let (id, _) = question(&mut agent, "capability_create").await?;
    answer(&agent, id, ApprovalDecision::AllowOnce).await?;
    let (id, action) = question(&mut agent, "cap_mark_ran").await?;
    let ApprovalAction::Command {
        command, sandbox, ..
    } = action
    else {
        return Err(format!("not put as a command: {action:?}").into());
    };
    // The question names the version and the hash of the code that would run.
    let hash = mnemo::capabilities::code_hash("echo ran >> ran.txt");
    assert_eq!(command, format!("cap_mark_ran v1-sha256:{hash} {{}}"));
    assert!(sandbox.contains("network off"), "{sandbox}");
    answer(&agent, id, ApprovalDecision::Deny).await?;
    let events = agent
        .until(|e| matches!(e, Event::TurnFinished { .. }))
        .await?;
    assert_eq!(status(&events), Some(TurnStatus::Completed));
    let calls = finished(&events);
    let (tool, outcome, output) = calls.last().ok_or("no call")?;
    assert_eq!(
        (tool.as_str(), *outcome),
        ("cap_mark_ran", ToolStatus::Error)
    );
    assert!(output.contains("the user denied this action"), "{output}");
    assert!(!ws.join("ran.txt").exists(), "a denied capability ran");

    // Allowed, the same call runs: the denial is what kept it from running.
    agent.send(Op::user_input("now do")).await?;
    let (id, _) = question(&mut agent, "cap_mark_ran").await?;
    answer(&agent, id, ApprovalDecision::AllowOnce).await?;
    let events = agent
        .until(|e| matches!(e, Event::TurnFinished { .. }))
        .await?;
    assert_eq!(finished(&events).last().map(|c| c.1), Some(ToolStatus::Ok));
    assert_eq!(std::fs::read_to_string(ws.join("ran.txt"))?, "ran\n");
    agent.finish().await?;
    Ok(())
}
