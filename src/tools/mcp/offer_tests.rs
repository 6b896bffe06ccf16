use serde_json::json;

use super::search::SEARCH;
use super::*;
use crate::capabilities::refs::found_tools;

fn tool(server: &str, name: &str, description: &str) -> McpTool {
    McpTool {
        name: format!("mcp__{server}__{name}"),
        server: server.to_string(),
        tool: name.to_string(),
        description: description.to_string(),
        input_schema: json!({"type": "object", "properties": {"path": {"type": "string"}}}),
        read_only: true,
    }
}

fn tools() -> Vec<McpTool> {
    let mut tools = vec![tool("clock", "now", "The current time")];
    for (name, description) in [
        (
            "read_file",
            "Read the complete contents of a file from the file system",
        ),
        (
            "write_file",
            "Create a new file or overwrite an existing file",
        ),
        (
            "list_directory",
            "List the files and directories in a directory",
        ),
        (
            "search_files",
            "Recursively search for files matching a pattern",
        ),
    ] {
        tools.push(tool("fs", name, description));
    }
    tools
}

fn names(offer: &McpOffer) -> Vec<&str> {
    offer.specs.iter().map(|s| s.name.as_str()).collect()
}

#[test]
fn servers_within_the_budget_are_listed_whole_and_larger_ones_behind_the_search_tool() {
    let all = McpOffer::build(&tools(), [], 10_000);
    assert_eq!(all.specs.len(), 5);
    assert!(all.deferred.is_empty() && all.get("mcp__fs__read_file").is_some());

    let offer = McpOffer::build(&tools(), [], 150);
    assert_eq!(names(&offer), [SEARCH, "mcp__clock__now"]);
    assert_eq!(offer.deferred, [("fs".to_string(), 4)]);
    assert!(offer.get("mcp__fs__read_file").is_none());
    assert!(offer.is_deferred("mcp__fs__read_file"));
    assert!(offer.specs[0].description.contains("fs (4 tools)"));
}

#[test]
fn tools_found_in_the_history_join_in_the_order_found_once_each() {
    let found = [
        "mcp__fs__list_directory",
        "mcp__fs__read_file",
        "mcp__fs__list_directory",
        "mcp__gone__tool",
        "mcp__clock__now",
    ];
    let offer = McpOffer::build(&tools(), found, 150);
    assert_eq!(
        names(&offer),
        [
            SEARCH,
            "mcp__clock__now",
            "mcp__fs__list_directory",
            "mcp__fs__read_file"
        ]
    );
    assert!(offer.get("mcp__fs__read_file").is_some());
}

#[test]
fn a_search_names_matching_deferred_tools_and_its_result_brings_them_in() -> Result<(), String> {
    let offer = McpOffer::build(&tools(), [], 150);
    let result = offer.search(&json!({"query": "read a file"}))?;
    let found = found_tools(SEARCH, &result);
    assert_eq!(
        found.first().map(String::as_str),
        Some("mcp__fs__read_file")
    );
    assert!(!found.iter().any(|n| n == "mcp__clock__now"));
    // The same text answering another tool brings nothing.
    assert!(found_tools("shell", &result).is_empty());

    let none = offer.search(&json!({"query": "kubernetes"}))?;
    assert!(found_tools(SEARCH, &none).is_empty() && none.contains("fs"));
    let bad = offer.search(&json!({"q": 1}));
    assert!(bad.is_err_and(|e| e.contains("query")));
    Ok(())
}
