//! `mcp_list_resources` and `mcp_read_resource`: what the servers offer to read, besides
//! their tools. Reading counts as read-only.

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::json;

use super::mcp_failed;
use crate::mcp::McpManager;
use crate::text::head_tail;
use crate::tools::truncate::MAX_OUTPUT_BYTES;
use crate::tools::{ToolContext, ToolError, ToolRegistry, TypedTool};

/// Registers the resource tools over `manager`'s servers.
pub fn register(registry: &mut ToolRegistry, manager: &McpManager) {
    registry.register(ListResources {
        manager: manager.clone(),
    });
    registry.register(ReadResource {
        manager: manager.clone(),
    });
}

pub struct ListResources {
    manager: McpManager,
}

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ServerArgs {
    /// The MCP server's name, as in `mcp__<server>__…`.
    pub server: String,
}

impl TypedTool for ListResources {
    type Args = ServerArgs;
    const NAME: &'static str = "mcp_list_resources";
    const DESCRIPTION: &'static str =
        "The resources (documents, data) an MCP server offers to read: uri, name, type.";
    const MUTATES: bool = false;

    async fn run(&self, args: ServerArgs, _ctx: &ToolContext) -> Result<String, ToolError> {
        let resources = self
            .manager
            .list_resources(&args.server)
            .await
            .map_err(mcp_failed)?;
        let items: Vec<_> = resources
            .iter()
            .map(|r| {
                json!({
                    "uri": r.uri,
                    "name": r.name,
                    "description": r.description,
                    "mime_type": r.mime_type,
                })
            })
            .collect();
        let text = serde_json::to_string_pretty(&json!({ "resources": items })).unwrap_or_default();
        Ok(head_tail(&text, MAX_OUTPUT_BYTES))
    }
}

pub struct ReadResource {
    manager: McpManager,
}

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ReadArgs {
    /// The MCP server's name.
    pub server: String,
    /// A uri from mcp_list_resources.
    pub uri: String,
}

impl TypedTool for ReadResource {
    type Args = ReadArgs;
    const NAME: &'static str = "mcp_read_resource";
    const DESCRIPTION: &'static str = "The contents of one resource of an MCP server, by uri.";
    const MUTATES: bool = false;

    async fn run(&self, args: ReadArgs, _ctx: &ToolContext) -> Result<String, ToolError> {
        let text = self
            .manager
            .read_resource(&args.server, &args.uri)
            .await
            .map_err(mcp_failed)?;
        Ok(head_tail(&text, MAX_OUTPUT_BYTES))
    }
}
