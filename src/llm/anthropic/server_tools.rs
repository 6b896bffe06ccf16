//! Anthropic's own web search: offered as a server tool when the request may use one, and read
//! back from the stream as blocks kept verbatim, a pane for the front ends, and cited sources.

use serde_json::Value;

use super::request::WireTool;
use crate::llm::server_tool::{ServerBlock, ServerPart, ServerToolRun};
use crate::llm::types::ModelRequest;

/// The search tool's version this mapping is written against.
const WEB_SEARCH: &str = "web_search_20250305";
/// Searches one response may run.
const MAX_SEARCHES: u32 = 5;

/// The server search tool, when the request allows it and no tool of mnemo's is already
/// called `web_search` (a configured search endpoint is the person's choice).
pub(super) fn offered(request: &ModelRequest) -> Option<WireTool<'static>> {
    let taken = request.tools.iter().any(|t| t.name == "web_search");
    (request.server_search && !taken).then(|| WireTool {
        kind: Some(WEB_SEARCH),
        name: "web_search",
        max_uses: Some(MAX_SEARCHES),
        ..WireTool::default()
    })
}

/// Whether a content block of this type is a server tool's call or result.
pub(super) fn is_server_block(kind: &str) -> bool {
    kind == "server_tool_use" || kind.ends_with("_tool_result")
}

/// The block as it started (`content_block` of a `content_block_start` event).
pub(super) fn started_block(data: &str) -> Value {
    serde_json::from_str::<Value>(data)
        .ok()
        .and_then(|mut event| event.get_mut("content_block").map(Value::take))
        .unwrap_or(Value::Null)
}

/// The finished call a result answers, for the front ends: the call's name and input from
/// `call` (already complete, as calls finish before their results start).
pub(super) fn run_of(call: Option<&ServerBlock>, result: &ServerBlock) -> Option<ServerToolRun> {
    let ServerPart::Result {
        tool_use_id,
        name,
        output,
        failed,
    } = result.part()?
    else {
        return None;
    };
    let input = match call.and_then(ServerBlock::part) {
        Some(ServerPart::Call { input, .. }) => input.clone(),
        _ => Value::Null,
    };
    Some(ServerToolRun {
        id: tool_use_id.into(),
        name: name.into(),
        input,
        output,
        failed,
    })
}
