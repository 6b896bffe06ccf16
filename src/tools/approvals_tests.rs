use super::*;
use crate::tools::builtin::test_support::{context, workspace};
use crate::tools::shell::Shell;
use serde_json::json;

type TestResult = Result<(), Box<dyn std::error::Error>>;

#[tokio::test]
async fn a_subagent_without_network_never_gets_it_whatever_the_mode() -> TestResult {
    let online = SandboxConfig {
        network: true,
        ..SandboxConfig::default()
    };
    let parent = Approvals::new(online, ApprovalMode::Full);
    let child = parent.for_subagent(false);
    let config = child.sandbox_for(None);
    assert!(config.is_sandboxed() && !config.network_allowed());
    let (_dir, ws) = workspace()?;
    let ctx = context(&ws);
    let input = json!({"command": "curl example.com", "escalation": "network"});
    let refused = child.check(&Shell::default(), &input, &ctx).await;
    assert!(matches!(refused, Err(ToolError::Denied(m)) if m.contains("without network")));
    // The parent keeps its own rules, and a child with network shares them.
    assert!(parent.check(&Shell::default(), &input, &ctx).await.is_ok());
    assert!(
        parent
            .for_subagent(true)
            .sandbox_for(None)
            .network_allowed()
    );
    Ok(())
}
