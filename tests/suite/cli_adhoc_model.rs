//! `--provider/--base-url/--model` reach a local OpenAI-compatible server with no config entry
//! and no key, through the real binary and the real HTTP and SSE code.

use crate::common;

use common::{Reply, TestServer};

#[tokio::test]
async fn a_local_server_is_used_ad_hoc_without_any_key() -> common::TestResult {
    let sse = std::fs::read_to_string("tests/fixtures/openai/text.sse")?;
    let server = TestServer::start(vec![Reply::sse(&sse)]).await?;
    let dir = tempfile::tempdir()?;
    let output = tokio::process::Command::new(env!("CARGO_BIN_EXE_mnemo"))
        .args(["--provider", "openai", "--base-url"])
        .arg(format!("{}/v1", server.base_url))
        .args(["--model", "local-coder", "run", "say hi"])
        .current_dir(dir.path())
        .env("MNEMO_CONFIG_DIR", dir.path().join("cfg"))
        .env("MNEMO_DATA_DIR", dir.path().join("data"))
        .env_remove("OPENAI_API_KEY")
        .output()
        .await?;
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{stderr}");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(!stdout.trim().is_empty(), "no reply printed");

    let request = server.only_request();
    assert_eq!(request.path, "/v1/chat/completions");
    assert_eq!(request.header("authorization"), None);
    let body = request.json()?;
    assert_eq!(body["model"], "local-coder");
    assert_eq!(body["messages"][1]["content"], "say hi");
    let tools: Vec<&str> = body["tools"]
        .as_array()
        .map(|t| {
            t.iter()
                .filter_map(|t| t["function"]["name"].as_str())
                .collect()
        })
        .unwrap_or_default();
    for name in [
        "read_file",
        "edit_file",
        "shell",
        "memory_search",
        "remember",
    ] {
        assert!(tools.contains(&name), "{name} missing from {tools:?}");
    }
    Ok(())
}
