//! An MCP server's environment holds none of mnemo's keys. Its own test binary: it sets
//! variables in the process environment before any thread starts.

#[path = "suite/mcp_support/mod.rs"]
mod mcp_support;

use mcp_support::{TestResult, everything, manager, ready};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

#[test]
fn the_server_environment_holds_no_api_key_unless_listed_for_it() -> TestResult {
    // SAFETY: set before the runtime and any other thread of this test binary start.
    unsafe {
        std::env::set_var("ANTHROPIC_API_KEY", "sk-ant-fake-for-the-test");
        std::env::set_var("GITHUB_TOKEN", "ghp-fake-for-the-test");
        std::env::set_var("MNEMO_TEST_SERVER_KEY", "meant-for-the-server");
    }
    let runtime = tokio::runtime::Runtime::new()?;
    runtime.block_on(async {
        let logs = tempfile::tempdir()?;
        let mut config = everything()?;
        config
            .env
            .insert("SERVER_KEY".into(), "${MNEMO_TEST_SERVER_KEY}".into());
        config.env.insert("MODE".into(), "test".into());
        let mcp = manager(vec![("everything", config)], logs.path());
        ready(&mcp).await;
        let result = mcp
            .call(
                "mcp__everything__get-env",
                json!({}),
                CancellationToken::new(),
            )
            .await?;
        let env: Value = serde_json::from_str(&result.text)?;
        assert!(env.get("ANTHROPIC_API_KEY").is_none(), "{env}");
        assert!(env.get("GITHUB_TOKEN").is_none(), "{env}");
        assert!(env.get("MNEMO_TEST_SERVER_KEY").is_none(), "{env}");
        assert_eq!(env["SERVER_KEY"], "meant-for-the-server");
        assert_eq!(env["MODE"], "test");
        assert!(
            env.get("PATH").is_some(),
            "the server can still find programs"
        );
        Ok(())
    })
}
