//! The MCP servers a client sends with `session/new` and `session/load`: they join the
//! session's `[mcp_servers]` as if configured, so mnemo's MCP layer starts and supervises
//! them, with the same trust rule as a workspace's own entries: a workspace the person has not
//! trusted (`mnemo trust`) gets none of them. Servers of mnemo's own configuration keep their
//! name; stdio and HTTP servers are supported, SSE ones are not.

use std::collections::BTreeMap;

use agent_client_protocol::v1::schema::McpServer;

use crate::host::Loaded;
use crate::mcp::{McpServerConfig, McpServerEntry};

/// Adds the client's `servers` to the configuration of one session; what the person should
/// be told about those that were not added, if anything.
pub(super) fn add(loaded: &mut Loaded, servers: &[McpServer], served: bool) -> Option<String> {
    if servers.is_empty() {
        return None;
    }
    let names: Vec<String> = servers.iter().map(|s| format!("`{}`", name(s))).collect();
    let names = names.join(", ");
    if served {
        return Some(format!(
            "the editor's MCP servers {names} are not started: this session runs in mnemo \
             serve, which starts only the servers of its own configuration"
        ));
    }
    if !loaded.workspace_trusted() {
        return Some(format!(
            "the editor's MCP servers {names} are not started: this workspace is not trusted. \
             Run `mnemo trust` in {} to start them",
            loaded.workspace.display()
        ));
    }
    let mut notes = Vec::new();
    for server in servers {
        let name = name(server).to_string();
        if loaded.config.mcp_servers.contains_key(&name) {
            notes.push(format!(
                "the editor's MCP server `{name}` is not started: mnemo's configuration has a \
                 server of that name, which is used"
            ));
            continue;
        }
        match config(server) {
            Some(config) => {
                let entry = McpServerEntry::Valid(config);
                loaded.config.mcp_servers.insert(name, entry);
            }
            None => notes.push(format!(
                "the editor's MCP server `{name}` is not started: mnemo supports stdio and \
                 HTTP servers only"
            )),
        }
    }
    (!notes.is_empty()).then(|| notes.join("\n"))
}

fn name(server: &McpServer) -> &str {
    match server {
        McpServer::Stdio(stdio) => &stdio.name,
        McpServer::Http(http) => &http.name,
        McpServer::Sse(sse) => &sse.name,
        _ => "unnamed",
    }
}

/// The server as a `[mcp_servers.NAME]` entry; `None` for a kind mnemo does not speak.
fn config(server: &McpServer) -> Option<McpServerConfig> {
    match server {
        McpServer::Stdio(stdio) => Some(McpServerConfig {
            command: Some(stdio.command.display().to_string()),
            args: stdio.args.clone(),
            env: stdio
                .env
                .iter()
                .map(|var| (var.name.clone(), var.value.clone()))
                .collect::<BTreeMap<_, _>>(),
            ..McpServerConfig::default()
        }),
        McpServer::Http(http) => Some(McpServerConfig {
            url: Some(http.url.clone()),
            headers: http
                .headers
                .iter()
                .map(|header| (header.name.clone(), header.value.clone()))
                .collect(),
            ..McpServerConfig::default()
        }),
        _ => None,
    }
}
