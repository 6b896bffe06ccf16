//! The MCP client against real servers from npm (installed on first use into target/npm-mcp).

use crate::mcp_support;

use std::time::Duration;

use mcp_support::{TestResult, everything, filesystem, manager, ready};
use mnemo::mcp::{McpError, ServerState};
use serde_json::json;
use tokio_util::sync::CancellationToken;

#[tokio::test(flavor = "multi_thread")]
async fn server_everything_lists_its_tools_with_schemas_and_read_only_hints() -> TestResult {
    let logs = tempfile::tempdir()?;
    let mcp = manager(vec![("everything", everything()?)], logs.path());
    ready(&mcp).await;
    let states = mcp.states();
    assert!(
        matches!(states[0].1, ServerState::Ready { tools } if tools >= 5),
        "{states:?}"
    );
    let tools = mcp.tools();
    let echo = tools
        .iter()
        .find(|t| t.name == "mcp__everything__echo")
        .ok_or("no echo tool")?;
    assert_eq!(echo.server, "everything");
    assert_eq!(echo.tool, "echo");
    assert!(echo.read_only, "echo is annotated readOnlyHint");
    assert_eq!(echo.input_schema["properties"]["message"]["type"], "string");
    assert!(tools.iter().any(|t| t.name == "mcp__everything__get-env"));
    assert!(tools.iter().all(|t| t.name.len() <= 64));
    Ok(())
}

#[tokio::test(flavor = "multi_thread")]
async fn a_call_round_trips_and_an_invalid_call_is_a_tool_error() -> TestResult {
    let logs = tempfile::tempdir()?;
    let mcp = manager(vec![("everything", everything()?)], logs.path());
    ready(&mcp).await;
    let echoed = mcp
        .call(
            "mcp__everything__echo",
            json!({"message": "hello from mnemo"}),
            CancellationToken::new(),
        )
        .await?;
    assert!(!echoed.is_error);
    assert_eq!(echoed.text, "Echo: hello from mnemo");

    let invalid = mcp
        .call("mcp__everything__echo", json!({}), CancellationToken::new())
        .await?;
    assert!(invalid.is_error, "{invalid:?}");
    assert!(invalid.text.contains("message"), "{}", invalid.text);

    let unknown = mcp
        .call("mcp__everything__nope", json!({}), CancellationToken::new())
        .await;
    assert_eq!(
        unknown.err(),
        Some(McpError::UnknownTool("mcp__everything__nope".into()))
    );
    Ok(())
}

#[tokio::test(flavor = "multi_thread")]
async fn structured_content_and_images_reach_the_model_as_text() -> TestResult {
    let logs = tempfile::tempdir()?;
    let mcp = manager(vec![("everything", everything()?)], logs.path());
    ready(&mcp).await;
    let weather = mcp
        .call(
            "mcp__everything__get-structured-content",
            json!({"location": "Chicago"}),
            CancellationToken::new(),
        )
        .await?;
    assert!(!weather.is_error);
    assert!(weather.text.contains("\"temperature\""), "{}", weather.text);

    let image = mcp
        .call(
            "mcp__everything__get-tiny-image",
            json!({}),
            CancellationToken::new(),
        )
        .await?;
    assert!(image.text.contains("[image: image/png, "), "{}", image.text);
    assert!(
        image.text.len() < 1000,
        "the image bytes stay out of the text"
    );
    Ok(())
}

#[tokio::test(flavor = "multi_thread")]
async fn a_server_killed_mid_call_gives_a_clear_error_and_is_restarted() -> TestResult {
    let logs = tempfile::tempdir()?;
    let mcp = manager(vec![("everything", everything()?)], logs.path());
    ready(&mcp).await;
    let first_pid = mcp.server_pid("everything").ok_or("no pid")?;
    let call = tokio::spawn({
        let mcp = mcp.clone();
        async move {
            mcp.call(
                "mcp__everything__trigger-long-running-operation",
                json!({"duration": 20, "steps": 4}),
                CancellationToken::new(),
            )
            .await
        }
    });
    tokio::time::sleep(Duration::from_millis(500)).await;
    // SAFETY: signalling the test's own child process.
    unsafe {
        libc::kill(i32::try_from(first_pid)?, libc::SIGKILL);
    }
    let result = tokio::time::timeout(Duration::from_secs(10), call).await??;
    let error = result.err().ok_or("the call succeeded")?;
    assert_eq!(
        error,
        McpError::ServerExited {
            server: "everything".into()
        }
    );
    assert_eq!(
        error.to_string(),
        "MCP server `everything` exited during the call; it is being restarted"
    );

    // While it is down, calls say so.
    let mut changes = mcp.states_changed();
    let restarted = tokio::time::timeout(Duration::from_secs(60), async {
        loop {
            let state = mcp.states()[0].1.clone();
            match state {
                ServerState::Ready { .. }
                    if mcp
                        .server_pid("everything")
                        .is_some_and(|pid| pid != first_pid) =>
                {
                    return Ok::<_, String>(());
                }
                ServerState::Failed { reason } => {
                    assert!(reason.contains("; restarting in"), "{reason}");
                    let down = mcp
                        .call(
                            "mcp__everything__echo",
                            json!({"message": "x"}),
                            CancellationToken::new(),
                        )
                        .await;
                    assert!(
                        matches!(
                            down,
                            Err(McpError::NotRunning { .. } | McpError::UnknownTool(_))
                        ),
                        "{down:?}"
                    );
                }
                _ => {}
            }
            changes.changed().await.map_err(|e| e.to_string())?;
        }
    })
    .await;
    restarted??;
    let echoed = mcp
        .call(
            "mcp__everything__echo",
            json!({"message": "back"}),
            CancellationToken::new(),
        )
        .await?;
    assert_eq!(echoed.text, "Echo: back");
    Ok(())
}

#[tokio::test(flavor = "multi_thread")]
async fn a_cancelled_call_returns_at_once_and_the_server_stays_usable() -> TestResult {
    let logs = tempfile::tempdir()?;
    let mcp = manager(vec![("everything", everything()?)], logs.path());
    ready(&mcp).await;
    let cancel = CancellationToken::new();
    let started = std::time::Instant::now();
    let call = tokio::spawn({
        let (mcp, cancel) = (mcp.clone(), cancel.clone());
        async move {
            mcp.call(
                "mcp__everything__trigger-long-running-operation",
                json!({"duration": 20, "steps": 4}),
                cancel,
            )
            .await
        }
    });
    tokio::time::sleep(Duration::from_millis(300)).await;
    cancel.cancel();
    let result = tokio::time::timeout(Duration::from_secs(5), call).await??;
    assert_eq!(result.err(), Some(McpError::Cancelled));
    assert!(started.elapsed() < Duration::from_secs(5));
    let echoed = mcp
        .call(
            "mcp__everything__echo",
            json!({"message": "still here"}),
            CancellationToken::new(),
        )
        .await?;
    assert_eq!(echoed.text, "Echo: still here");
    Ok(())
}

#[tokio::test(flavor = "multi_thread")]
async fn a_slow_call_ends_at_the_tool_timeout() -> TestResult {
    let logs = tempfile::tempdir()?;
    let mut config = everything()?;
    config.tool_timeout_secs = 1;
    let mcp = manager(vec![("everything", config)], logs.path());
    ready(&mcp).await;
    let result = mcp
        .call(
            "mcp__everything__trigger-long-running-operation",
            json!({"duration": 10, "steps": 2}),
            CancellationToken::new(),
        )
        .await;
    assert!(
        matches!(&result, Err(McpError::Timeout { secs: 1, .. })),
        "{result:?}"
    );
    Ok(())
}

#[tokio::test(flavor = "multi_thread")]
async fn resources_are_listed_and_read() -> TestResult {
    let logs = tempfile::tempdir()?;
    let mcp = manager(vec![("everything", everything()?)], logs.path());
    ready(&mcp).await;
    let resources = mcp.list_resources("everything").await?;
    let first = resources.first().ok_or("no resources")?;
    let text = mcp.read_resource("everything", &first.uri).await?;
    assert!(!text.is_empty());
    Ok(())
}

#[tokio::test(flavor = "multi_thread")]
async fn server_filesystem_offers_its_file_tools_and_reads_a_file() -> TestResult {
    let logs = tempfile::tempdir()?;
    let dir = tempfile::tempdir()?;
    let root = dir.path().canonicalize()?;
    std::fs::write(root.join("note.txt"), "remember the milk\n")?;
    let mcp = manager(vec![("filesystem", filesystem(&root)?)], logs.path());
    ready(&mcp).await;
    let tools = mcp.tools();
    for name in [
        "read_file",
        "read_text_file",
        "list_directory",
        "write_file",
    ] {
        assert!(
            tools
                .iter()
                .any(|t| t.name == format!("mcp__filesystem__{name}")),
            "{name} missing from {:?}",
            tools.iter().map(|t| &t.name).collect::<Vec<_>>()
        );
    }
    let write = tools
        .iter()
        .find(|t| t.tool == "write_file")
        .ok_or("no write_file")?;
    assert!(!write.read_only, "write_file counts as a write");
    let read = mcp
        .call(
            "mcp__filesystem__read_text_file",
            json!({"path": root.join("note.txt")}),
            CancellationToken::new(),
        )
        .await?;
    assert!(read.text.contains("remember the milk"), "{}", read.text);
    Ok(())
}

#[tokio::test(flavor = "multi_thread")]
async fn broken_disabled_and_untrusted_servers_are_listed_while_the_others_start() -> TestResult {
    use mnemo::mcp::{McpServerEntry, McpSettings};
    let logs = tempfile::tempdir()?;
    let mut servers = std::collections::BTreeMap::new();
    servers.insert(
        "everything".to_string(),
        McpServerEntry::Valid(everything()?),
    );
    servers.insert(
        "broken".to_string(),
        McpServerEntry::from_value(toml::from_str("command = 3")?),
    );
    let mut off = everything()?;
    off.enabled = false;
    servers.insert("off".to_string(), McpServerEntry::Valid(off));
    servers.insert(
        "missing".to_string(),
        McpServerEntry::Valid(mnemo::mcp::McpServerConfig {
            command: Some("/nonexistent/mcp-server".into()),
            ..Default::default()
        }),
    );
    let mcp = mnemo::mcp::McpManager::start(McpSettings {
        servers,
        not_trusted: ["workspace-server".to_string()].into(),
        log_dir: logs.path().to_path_buf(),
        backoff: mnemo::mcp::Backoff {
            first: Duration::from_millis(50),
            max: Duration::from_millis(100),
            give_up_after: 2,
        },
        ..Default::default()
    });
    ready(&mcp).await;
    let states: std::collections::BTreeMap<_, _> = mcp.states().into_iter().collect();
    assert_eq!(
        states["broken"].to_string(),
        "failed: MCP server `broken`: key `mcp_servers.broken.command`: expected a string, \
         found `3`"
    );
    assert_eq!(states["off"], ServerState::Disabled);
    assert_eq!(
        states["workspace-server"].to_string(),
        "not started: workspace not trusted"
    );
    assert!(
        states["missing"]
            .to_string()
            .contains("cannot start `/nonexistent/mcp-server`"),
        "{}",
        states["missing"]
    );
    assert!(matches!(states["everything"], ServerState::Ready { .. }));

    // A server that cannot start is tried again, then given up on.
    let mut changes = mcp.states_changed();
    let gave_up = tokio::time::timeout(Duration::from_secs(10), async {
        loop {
            let states: std::collections::BTreeMap<_, _> = mcp.states().into_iter().collect();
            let missing = states["missing"].to_string();
            if missing.ends_with("(gave up after 2 attempts)") {
                return Ok::<_, String>(missing);
            }
            changes.changed().await.map_err(|e| e.to_string())?;
        }
    })
    .await??;
    assert!(
        gave_up.starts_with("failed: cannot start `/nonexistent/mcp-server`"),
        "{gave_up}"
    );
    Ok(())
}

#[tokio::test(flavor = "multi_thread")]
async fn the_server_process_dies_with_the_manager_and_its_stderr_is_logged() -> TestResult {
    let logs = tempfile::tempdir()?;
    let mcp = manager(vec![("everything", everything()?)], logs.path());
    ready(&mcp).await;
    let pid = i32::try_from(mcp.server_pid("everything").ok_or("no pid")?)?;
    drop(mcp);
    let mut alive = true;
    for _ in 0..100 {
        // SAFETY: signal 0 only checks whether the process exists.
        alive = unsafe { libc::kill(pid, 0) } == 0
            && !std::fs::read_to_string(format!("/proc/{pid}/stat"))
                .is_ok_and(|s| s.contains(") Z "));
        if !alive {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(!alive, "the server outlived its manager");
    let log = std::fs::read_to_string(logs.path().join("mcp-everything.log"))?;
    assert!(!log.is_empty(), "the server's stderr is in its log");
    Ok(())
}

#[tokio::test(flavor = "multi_thread")]
async fn a_tool_list_change_announced_by_the_server_is_offered_and_signalled() -> TestResult {
    let logs = tempfile::tempdir()?;
    let mcp = manager(vec![("dyn", mcp_support::dynamic()?)], logs.path());
    ready(&mcp).await;
    let names = |mcp: &mnemo::mcp::McpManager| -> Vec<String> {
        mcp.tools().into_iter().map(|t| t.name).collect()
    };
    assert!(!names(&mcp).contains(&"mcp__dyn__extra-tool".to_string()));
    let mut changed = mcp.tools_changed();
    changed.borrow_and_update();
    let added = mcp
        .call("mcp__dyn__add-tool", json!({}), CancellationToken::new())
        .await?;
    assert_eq!(added.text, "added");
    tokio::time::timeout(Duration::from_secs(10), async {
        while !names(&mcp).contains(&"mcp__dyn__extra-tool".to_string()) {
            changed.changed().await?;
        }
        Ok::<_, tokio::sync::watch::error::RecvError>(())
    })
    .await??;
    let extra = mcp
        .call("mcp__dyn__extra-tool", json!({}), CancellationToken::new())
        .await?;
    assert_eq!(extra.text, "extra");
    assert_eq!(mcp.states()[0].1, ServerState::Ready { tools: 4 });
    Ok(())
}

/// server-everything's streamable HTTP transport on a free local port, killed on drop.
struct HttpServer {
    child: std::process::Child,
    url: String,
}

impl Drop for HttpServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn http_server() -> Result<HttpServer, Box<dyn std::error::Error>> {
    let port = std::net::TcpListener::bind("127.0.0.1:0")?
        .local_addr()?
        .port();
    let config = everything()?;
    let child = std::process::Command::new("node")
        .arg(&config.args[0])
        .arg("streamableHttp")
        .env("PORT", port.to_string())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()?;
    let server = HttpServer {
        child,
        url: format!("http://127.0.0.1:{port}/mcp"),
    };
    for _ in 0..200 {
        if std::net::TcpStream::connect(("127.0.0.1", port)).is_ok() {
            return Ok(server);
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    Err("server-everything did not listen on its HTTP port".into())
}

#[tokio::test(flavor = "multi_thread")]
async fn a_streamable_http_server_lists_and_calls_tools() -> TestResult {
    let server = http_server()?;
    let logs = tempfile::tempdir()?;
    let config = mnemo::mcp::McpServerConfig {
        url: Some(server.url.clone()),
        headers: [("X-Test".to_string(), "1".to_string())].into(),
        startup_timeout_secs: 30,
        ..Default::default()
    };
    let mcp = manager(vec![("remote", config)], logs.path());
    ready(&mcp).await;
    assert!(
        matches!(mcp.states()[0].1, ServerState::Ready { .. }),
        "{:?}",
        mcp.states()
    );
    let echoed = mcp
        .call(
            "mcp__remote__echo",
            json!({"message": "over http"}),
            CancellationToken::new(),
        )
        .await?;
    assert_eq!(echoed.text, "Echo: over http");
    Ok(())
}

#[tokio::test(flavor = "multi_thread")]
async fn cancelling_a_call_sends_the_server_a_cancellation() -> TestResult {
    let logs = tempfile::tempdir()?;
    let mcp = manager(vec![("dyn", mcp_support::dynamic()?)], logs.path());
    ready(&mcp).await;
    let cancel = CancellationToken::new();
    let call = tokio::spawn({
        let (mcp, cancel) = (mcp.clone(), cancel.clone());
        async move { mcp.call("mcp__dyn__wait", json!({}), cancel).await }
    });
    tokio::time::sleep(Duration::from_millis(300)).await;
    cancel.cancel();
    assert_eq!(call.await?.err(), Some(McpError::Cancelled));
    let mut seen = String::new();
    for _ in 0..50 {
        seen = mcp
            .call(
                "mcp__dyn__was-cancelled",
                json!({}),
                CancellationToken::new(),
            )
            .await?
            .text;
        if seen == "true" {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(seen, "true", "the server saw notifications/cancelled");
    Ok(())
}

#[tokio::test(flavor = "multi_thread")]
async fn a_call_runs_only_the_tool_that_was_approved() -> TestResult {
    let logs = tempfile::tempdir()?;
    let mcp = manager(vec![("everything", everything()?)], logs.path());
    ready(&mcp).await;
    let echo = mcp
        .tools()
        .into_iter()
        .find(|t| t.name == "mcp__everything__echo")
        .ok_or("no echo tool")?;
    let args = json!({"message": "approved"});
    let ran = mcp
        .call_exact(&echo, args.clone(), CancellationToken::new())
        .await?;
    assert_eq!(ran.text, "Echo: approved");
    // A snapshot that no longer matches what the server offers (here: its read-only hint)
    // is refused instead of running something else under the same name.
    let stale = mnemo::mcp::McpTool {
        read_only: !echo.read_only,
        ..echo
    };
    let refused = mcp.call_exact(&stale, args, CancellationToken::new()).await;
    assert_eq!(
        refused,
        Err(McpError::Changed("mcp__everything__echo".into()))
    );
    Ok(())
}
