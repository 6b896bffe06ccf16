//! An MCP tool found by search in prompt-cache terms, on both wires: the search's result holds
//! the tool's schema, the tool is called through `use_tool`, and the tool list never changes,
//! so each request costs only what it adds.

use crate::cache_support;
use crate::capability_support;
use crate::mcp_support;

use cache_support::{Answer, CacheServer, Wire, growth_only};
use capability_support::{Agent, chain_of};
use mcp_support::{filesystem, manager, ready};
use mnemo::agent::{Session, SessionSettings};
use mnemo::config::Config;
use mnemo::memory::Store;
use mnemo::protocol::{Event, TurnStatus};
use serde_json::{Value, json};

#[tokio::test(flavor = "multi_thread")]
async fn an_mcp_tool_found_by_search_costs_only_what_it_adds() {
    for wire in [Wire::Anthropic, Wire::OpenAi] {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let ws = dir
            .path()
            .canonicalize()
            .unwrap_or_else(|e| panic!("{e}"))
            .join("ws");
        std::fs::create_dir(&ws).unwrap_or_else(|e| panic!("{e}"));
        std::fs::write(ws.join("notes.txt"), "the deferred tool read me")
            .unwrap_or_else(|e| panic!("{e}"));
        let read = json!({"tool": "mcp__filesystem__read_text_file",
            "arguments": {"path": ws.join("notes.txt")}});
        let script = Box::new(move |step, _: &Value| match step {
            0 => Answer::tool("mcp_tool_search", json!({"query": "read file contents"})),
            1 => Answer::tool("use_tool", read.clone()),
            _ => Answer::Text("The notes say: the deferred tool read me.".into()),
        });
        let server = CacheServer::start(wire, script)
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        let mcp = manager(
            vec![(
                "filesystem",
                filesystem(&ws).unwrap_or_else(|e| panic!("{e}")),
            )],
            &dir.path().join("logs"),
        );
        ready(&mcp).await;
        let mut settings =
            SessionSettings::from_config(ws.clone(), "test".into(), &Config::default());
        // The server's tools wait behind the search.
        settings.mcp_max_tool_tokens = 100;
        let store = Store::open(&dir.path().join("mnemo.db")).unwrap_or_else(|e| panic!("{e}"));
        let tools = mnemo::tools::builtin::builtin_tools();
        let mut session =
            Session::create(settings, chain_of(server.provider()), tools, store, None)
                .await
                .unwrap_or_else(|e| panic!("{e}"));
        session.set_mcp(mcp);
        let mut agent = Agent::spawn(session);
        let events = agent
            .turn("read notes.txt")
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        let status = events.iter().find_map(|e| match e {
            Event::TurnFinished { status, .. } => Some(*status),
            _ => None,
        });
        assert_eq!(status, Some(TurnStatus::Completed), "{wire:?}: {events:#?}");
        agent.finish().await.unwrap_or_else(|e| panic!("{e}"));

        let exchanges = server.exchanges();
        assert_eq!(exchanges.len(), 3, "{wire:?}");
        let read = exchanges[2].body["messages"].to_string();
        assert!(
            read.contains("the deferred tool read me"),
            "{wire:?}: {read}"
        );
        for exchange in &exchanges {
            assert_eq!(
                exchange.body["tools"], exchanges[0].body["tools"],
                "{wire:?}"
            );
        }
        if let Err(costly) = growth_only(wire, &exchanges, None) {
            panic!("{costly}");
        }
    }
}
