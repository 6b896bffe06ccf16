use std::sync::Arc;

use serde_json::json;
use tokio_util::sync::CancellationToken;

use super::*;
use crate::capabilities::{CapSpec, CapabilityRefs, derive};
use crate::mcp::{McpSettings, McpTool};
use crate::memory::Store;
use crate::tools::builtin::test_support::{TestResult, context, workspace};

fn mcp_tool(server: &str, name: &str) -> McpTool {
    McpTool {
        name: format!("mcp__{server}__{name}"),
        server: server.to_string(),
        tool: name.to_string(),
        description: format!("{name} of {server}"),
        input_schema: json!({"type": "object", "properties": {}}),
        read_only: true,
    }
}

/// A session's tools: the capability tools in the registry, one pinned capability, and a
/// small server listed whole beside a large one behind the search tool.
struct Step {
    registry: ToolRegistry,
    toolset: ToolSet,
    offer: McpOffer,
    runner: Arc<CapabilityRunner>,
}

impl Step {
    fn new() -> Result<Self, Box<dyn std::error::Error>> {
        let store = Store::open_in_memory()?;
        let runner = Arc::new(CapabilityRunner::new(store.clone()));
        let mut registry = ToolRegistry::new();
        crate::tools::capability::register(&mut registry, &store, None, runner.clone());
        let mut servers = vec![mcp_tool("clock", "now")];
        servers.extend((0..40).map(|i| mcp_tool("big", &format!("tool_{i}"))));
        let offer = McpOffer::build(&servers, [], 400);
        let pinned = [CapSpec::new(
            "greet",
            1,
            "says hello",
            json!({"type": "object"}),
        )];
        let toolset = derive(
            &registry.specs(),
            &offer.specs,
            &pinned,
            &CapabilityRefs::new(),
            4000,
        );
        Ok(Self {
            registry,
            toolset,
            offer,
            runner,
        })
    }

    fn router<'a>(&'a self, mcp: Option<&'a McpManager>) -> StepRouter<'a> {
        StepRouter {
            registry: &self.registry,
            toolset: &self.toolset,
            mcp_offer: &self.offer,
            mcp,
            mcp_budget: 400,
            capabilities: &self.runner,
        }
    }
}

#[tokio::test]
async fn every_offered_tool_has_a_handler_and_a_name_not_offered_is_refused_alike() -> TestResult {
    let step = Step::new()?;
    let manager = McpManager::start(McpSettings::default());
    let router = step.router(Some(&manager));
    let names: Vec<String> = router.specs().iter().map(|s| s.name.clone()).collect();
    for expected in [
        "capability_query",
        "mcp_tool_search",
        "mcp__clock__now",
        "cap_greet",
        "use_tool",
    ] {
        assert!(
            names.iter().any(|n| n == expected),
            "{expected} in {names:?}"
        );
    }
    // A pinned capability stays in the tool list; found ones are called through use_tool.
    for name in names.iter().filter(|n| *n != "use_tool") {
        assert!(
            router.route(name).is_ok(),
            "offered `{name}` has no handler"
        );
    }

    let (_dir, ws) = workspace()?;
    let ctx = context(&ws);
    let cancel = CancellationToken::new();
    for name in ["cap_gone", "mcp__big__tool_3", "mcp__clock__later"] {
        let refused = router.dispatch(name, &json!({}), &ctx, "s1", &cancel).await;
        assert!(
            matches!(&refused, Err(ToolError::Failed(m)) if m.contains("not in your tool list now")),
            "{name}: {refused:?}"
        );
        let through = json!({"tool": name, "arguments": {}});
        let refused = router
            .dispatch("use_tool", &through, &ctx, "s1", &cancel)
            .await;
        assert!(
            matches!(&refused, Err(ToolError::Failed(m)) if m.contains("not in your tool list now")),
            "use_tool {name}: {refused:?}"
        );
    }
    let without_servers = step.router(None);
    let refused = without_servers
        .dispatch("mcp__clock__now", &json!({}), &ctx, "s1", &cancel)
        .await;
    assert!(
        matches!(&refused, Err(ToolError::Failed(m)) if m.contains("not in your tool list now")),
        "{refused:?}"
    );
    Ok(())
}

#[tokio::test]
async fn the_search_tool_answers_through_the_same_dispatch() -> TestResult {
    let step = Step::new()?;
    let manager = McpManager::start(McpSettings::default());
    let (_dir, ws) = workspace()?;
    let found = step
        .router(Some(&manager))
        .dispatch(
            "mcp_tool_search",
            &json!({"query": "tool_3 of big"}),
            &context(&ws),
            "s1",
            &CancellationToken::new(),
        )
        .await?;
    assert!(found.contains("mcp__big__tool_3"), "{found}");
    Ok(())
}

#[test]
fn an_unchanged_history_offers_the_same_specs_byte_for_byte() -> TestResult {
    let first = Step::new()?;
    let second = Step::new()?;
    let bytes = |step: &Step| serde_json::to_string(&*step.router(None).specs());
    assert_eq!(bytes(&first)?, bytes(&second)?);
    let names: Vec<String> = first
        .router(None)
        .specs()
        .iter()
        .map(|s| s.name.clone())
        .collect();
    // Static tools first, then the MCP tools, then capabilities: the prompt cache keeps its
    // prefix while only the tail changes.
    let order: Vec<Option<usize>> = ["capability_query", "mcp__clock__now", "cap_greet"]
        .iter()
        .map(|name| names.iter().position(|n| n == name))
        .collect();
    assert!(
        order.iter().all(Option::is_some) && order.is_sorted(),
        "{names:?}"
    );
    Ok(())
}

#[test]
fn deriving_a_step_twice_from_the_same_sources_gives_the_same_bytes() -> TestResult {
    let step = Step::new()?;
    let pinned = [CapSpec::new(
        "greet",
        1,
        "says hello",
        json!({"type": "object"}),
    )];
    let refs = CapabilityRefs::new();
    let sources = StepSources {
        registry: &step.registry,
        mcp: None,
        pinned: &pinned,
        refs: &refs,
        mcp_budget: 400,
        capability_budget: 4000,
    };
    let (first, _) = derive_step(&sources);
    let (second, _) = derive_step(&sources);
    assert_eq!(
        serde_json::to_string(&*first.specs)?,
        serde_json::to_string(&*second.specs)?
    );
    let names: Vec<&str> = first.names().collect();
    assert_eq!(names.last(), Some(&"cap_greet"), "{names:?}");
    assert_eq!(first.static_count, step.registry.specs().len());
    Ok(())
}
