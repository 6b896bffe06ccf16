//! `mnemo mcp list`: starts the configured MCP servers as a session would, waits for them
//! (each up to its startup timeout) and shows each server's state and tools.

use std::io::Write;

use tokio::time::Instant;

use super::CommandError;
use crate::host::Loaded;
use crate::mcp::{McpManager, McpServerEntry, ServerState};
use crate::sandbox::Confinement;
use crate::tools::mcp::deferred_servers;

/// Lists every configured server, its state and (with `tools`) what it offers.
pub async fn list(loaded: &Loaded, tools: bool, out: &mut impl Write) -> Result<(), CommandError> {
    let env = Confinement::from_section(&loaded.config.sandbox).env;
    let mut settings = loaded.mcp_settings(env);
    // One start each: a server that fails shows why, not a restart that is soon out of date.
    settings.backoff.give_up_after = 1;
    if settings.servers.is_empty() && settings.not_trusted.is_empty() {
        writeln!(
            out,
            "No MCP servers are configured. Add one to {}:\n\n  [mcp_servers.NAME]\n  \
             command = \"npx\"\n  args = [\"-y\", \"@modelcontextprotocol/server-filesystem\", \".\"]",
            config_file(loaded)
        )?;
        return Ok(());
    }
    let entries = settings.servers.clone();
    let manager = McpManager::start(settings);
    manager
        .wait_ready(Instant::now() + manager.longest_startup())
        .await;
    let offered = manager.tools();
    let deferred = deferred_servers(&offered, loaded.config.mcp.max_tool_tokens);
    let width = super::column_width(manager.states().iter().map(|(n, _)| n.as_str()), "SERVER");
    writeln!(out, "{:width$}  STATE", "SERVER")?;
    for (name, state) in manager.states() {
        let mut line = format!("{name:width$}  {state}");
        if deferred.iter().any(|(s, _)| *s == name) {
            line.push_str(" (too many to list: found with mcp_tool_search)");
        }
        if let Some(McpServerEntry::Valid(config)) = entries.get(&name) {
            let what = match (&config.command, &config.url) {
                (Some(command), _) => format!("{command} {}", config.args.join(" ")),
                (None, Some(url)) => url.clone(),
                (None, None) => String::new(),
            };
            line.push_str(&format!("  · {}", what.trim()));
        }
        writeln!(out, "{line}")?;
        if tools && matches!(state, ServerState::Ready { .. }) {
            for tool in offered.iter().filter(|t| t.server == name) {
                let kind = if tool.read_only { "read-only" } else { "write" };
                let summary = crate::text::first_line(&tool.description);
                let summary = crate::text::clip(summary, 80);
                writeln!(out, "  {:<40} {kind:<9} {summary}", tool.name)?;
            }
        }
    }
    Ok(())
}

fn config_file(loaded: &Loaded) -> String {
    loaded.dirs.config.as_ref().map_or_else(
        || "config.toml".to_string(),
        |dir| dir.join("config.toml").display().to_string(),
    )
}
