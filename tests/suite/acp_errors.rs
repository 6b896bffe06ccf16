//! A malformed request to `mnemo acp` gets a JSON-RPC error, and the process goes on serving.

use crate::acp_support;

use std::io::{BufRead, BufReader, Write};
use std::process::Stdio;
use std::sync::mpsc;
use std::time::Duration;

use acp_support::Workspace;
use serde_json::{Value, json};

#[test]
fn a_malformed_request_gets_an_error_and_the_agent_lives_on() {
    let ws = Workspace::new();
    let model = ws.script(json!({"turns": [{"text": "fine"}]}));
    let mut child = ws
        .command(&["--model", &model, "acp"])
        .stdin(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("{e}"));
    let mut stdin = child.stdin.take().unwrap_or_else(|| panic!("no stdin"));
    let stdout = child.stdout.take().unwrap_or_else(|| panic!("no stdout"));
    let (lines, replies) = mpsc::channel::<Value>();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            if let Ok(value) = serde_json::from_str(&line) {
                let _ = lines.send(value);
            }
        }
    });
    let reply = |id: u64| -> Value {
        loop {
            let value = replies
                .recv_timeout(Duration::from_secs(20))
                .unwrap_or_else(|e| panic!("no reply to request {id}: {e}"));
            if value["id"] == json!(id) {
                return value;
            }
        }
    };
    let send = |stdin: &mut std::process::ChildStdin, message: Value| {
        writeln!(stdin, "{message}").unwrap_or_else(|e| panic!("{e}"));
        stdin.flush().unwrap_or_else(|e| panic!("{e}"));
    };

    send(
        &mut stdin,
        json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": 1}}),
    );
    let answer = reply(1);
    assert_eq!(answer["result"]["protocolVersion"], json!(1), "{answer}");
    assert_eq!(
        answer["result"]["agentInfo"]["name"],
        json!("mnemo"),
        "{answer}"
    );

    // session/new with parameters of the wrong shape and no cwd.
    send(
        &mut stdin,
        json!({"jsonrpc": "2.0", "id": 2, "method": "session/new", "params": {"mcpServers": 3}}),
    );
    let error = reply(2);
    assert_eq!(error["error"]["code"], json!(-32602), "{error}");

    // A line that is not JSON at all, then a method nobody knows.
    writeln!(stdin, "this is not json").unwrap_or_else(|e| panic!("{e}"));
    send(
        &mut stdin,
        json!({"jsonrpc": "2.0", "id": 3, "method": "session/juggle", "params": {}}),
    );
    let error = reply(3);
    assert_eq!(error["error"]["code"], json!(-32601), "{error}");

    // A prompt for a session that was never opened.
    send(
        &mut stdin,
        json!({"jsonrpc": "2.0", "id": 4, "method": "session/prompt",
               "params": {"sessionId": "nope", "prompt": [{"type": "text", "text": "hi"}]}}),
    );
    let error = reply(4);
    let message = error["error"]["message"].as_str().unwrap_or_default();
    assert!(message.contains("no session `nope`"), "{error}");

    // Still serving: a session opens and answers.
    send(
        &mut stdin,
        json!({"jsonrpc": "2.0", "id": 5, "method": "session/new",
               "params": {"cwd": ws.path(), "mcpServers": []}}),
    );
    let opened = reply(5);
    let id = opened["result"]["sessionId"].clone();
    assert!(id.is_string(), "{opened}");
    send(
        &mut stdin,
        json!({"jsonrpc": "2.0", "id": 6, "method": "session/prompt",
               "params": {"sessionId": id, "prompt": [{"type": "text", "text": "hi"}]}}),
    );
    let done = reply(6);
    assert_eq!(done["result"]["stopReason"], json!("end_turn"), "{done}");
    assert!(child.try_wait().unwrap_or_else(|e| panic!("{e}")).is_none());

    drop(stdin);
    let status = child.wait().unwrap_or_else(|e| panic!("{e}"));
    assert!(status.success(), "{status}");
}
