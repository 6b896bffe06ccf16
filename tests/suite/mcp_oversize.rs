//! An MCP answer over rmcp's 16 MiB line limit, from a tiny stdio server written as a script:
//! the call says the answer was too large at once instead of waiting out its timeout and
//! calling it one, and the connection goes on serving calls.

use crate::mcp_support;

use std::time::{Duration, Instant};

use mcp_support::{TestResult, manager, ready};
use mnemo::mcp::{McpError, McpServerConfig, ServerState};
use serde_json::json;
use tokio_util::sync::CancellationToken;

/// Answers the handshake, lists `huge` and `small`; `huge` answers with 17 MiB of text on
/// one line.
const SERVER: &str = r#"
import json, sys
for line in sys.stdin:
    msg = json.loads(line)
    if "id" not in msg:
        continue
    method = msg.get("method")
    if method == "initialize":
        result = {"protocolVersion": msg["params"]["protocolVersion"],
                  "capabilities": {"tools": {}},
                  "serverInfo": {"name": "oversize", "version": "1"}}
    elif method == "tools/list":
        schema = {"type": "object", "properties": {}}
        result = {"tools": [{"name": "huge", "inputSchema": schema},
                            {"name": "small", "inputSchema": schema}]}
    elif method == "tools/call":
        size = 17 * 1024 * 1024 if msg["params"]["name"] == "huge" else 5
        result = {"content": [{"type": "text", "text": "x" * size}]}
    else:
        result = {}
    sys.stdout.write(json.dumps({"jsonrpc": "2.0", "id": msg["id"], "result": result}) + "\n")
    sys.stdout.flush()
"#;

#[tokio::test(flavor = "multi_thread")]
async fn an_answer_over_16_mib_is_reported_as_too_large_not_as_a_timeout() -> TestResult {
    let dir = tempfile::tempdir()?;
    let script = dir.path().join("server.py");
    std::fs::write(&script, SERVER)?;
    let config = McpServerConfig {
        command: Some("python3".to_string()),
        args: vec![script.display().to_string()],
        startup_timeout_secs: 30,
        tool_timeout_secs: 60,
        ..Default::default()
    };
    let mcp = manager(vec![("oversize", config)], dir.path());
    ready(&mcp).await;
    let states = mcp.states();
    assert!(
        matches!(states[0].1, ServerState::Ready { tools: 2 }),
        "{states:?}"
    );

    let started = Instant::now();
    let huge = mcp
        .call("mcp__oversize__huge", json!({}), CancellationToken::new())
        .await;
    let took = started.elapsed();
    let Err(error) = huge else {
        return Err(format!("a 17 MiB answer was read: {huge:?}").into());
    };
    assert!(matches!(error, McpError::TooLarge { .. }), "{error:?}");
    let said = error.to_string();
    assert!(
        said.contains("over 16 MiB") && said.contains("huge") && !said.contains("within"),
        "{said}"
    );
    assert!(took < Duration::from_secs(20), "it took {took:?}");

    let small = mcp
        .call("mcp__oversize__small", json!({}), CancellationToken::new())
        .await?;
    assert_eq!(small.text, "xxxxx");
    Ok(())
}
