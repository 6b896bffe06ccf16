//! MCP servers an editor sends with `session/new`: a trusted workspace's session starts them
//! through mnemo's MCP layer and the model calls their tools; an untrusted one starts none and
//! says so.

use crate::acp_support;
use crate::mcp_support;

use acp_support::{Answer, LIMIT, Seen, Workspace, agent, prompt, run};
use agent_client_protocol::v1::schema::{
    McpServer, McpServerStdio, NewSessionRequest, SessionUpdate, StopReason, ToolCallContent,
    ToolCallStatus,
};
use serde_json::json;

/// A prompt whose model lists the workspace through the editor's server-filesystem (named
/// `files`); the result of that call, as the editor was shown it.
async fn listed_through_the_editors_server(ws: &Workspace) -> (Seen, ToolCallStatus, String) {
    let root = ws.path().canonicalize().unwrap_or_else(|e| panic!("{e}"));
    ws.write("seen-by-mcp.txt", "x");
    let model = ws.script(json!({"turns": [
        {"tool_calls": [{"id": "m1", "name": "mcp__files__list_directory",
                         "arguments": {"path": root}}]},
        {"text": "Listed."},
    ]}));
    let script = mcp_support::script("server-filesystem").unwrap_or_else(|e| panic!("{e}"));
    let server = McpServerStdio::new("files", "node").args(vec![
        script.display().to_string(),
        root.display().to_string(),
    ]);
    let seen = Seen::default();
    let main = async |cx: agent_client_protocol::v1::ConnectionTo<agent_client_protocol::Agent>| {
        acp_support::initialize(&cx).await?;
        let request = NewSessionRequest::new(ws.path()).mcp_servers(vec![McpServer::Stdio(server)]);
        let session = cx.send_request(request).block_task().await?;
        let id = session.session_id.0.to_string();
        cx.send_request(prompt(&id, "list")).block_task().await
    };
    let done = tokio::time::timeout(
        LIMIT * 2,
        run(agent(ws, &model, &[]), &seen, Answer::Deny, main),
    )
    .await
    .unwrap_or_else(|e| panic!("{e}"))
    .unwrap_or_else(|e| panic!("{e:?}"));
    assert_eq!(done.stop_reason, StopReason::EndTurn);
    let finished = seen.updates().into_iter().find_map(|u| match u {
        SessionUpdate::ToolCallUpdate(update)
            if &*update.tool_call_id.0 == "m1" && update.fields.status.is_some() =>
        {
            Some(update.fields)
        }
        _ => None,
    });
    let fields = finished.unwrap_or_else(|| panic!("the MCP call never finished"));
    let text: String = fields
        .content
        .iter()
        .flatten()
        .filter_map(|c| match c {
            ToolCallContent::Content(shown) => acp_support::text(&shown.content),
            _ => None,
        })
        .collect();
    let status = fields.status.unwrap_or_else(|| panic!("no status"));
    (seen, status, text)
}

#[tokio::test(flavor = "multi_thread")]
async fn a_trusted_workspace_starts_the_editors_mcp_server() {
    let ws = Workspace::new();
    let trusted = ws.mnemo(&["trust"], None);
    assert!(trusted.status.success(), "{trusted:?}");
    let (_seen, status, text) = listed_through_the_editors_server(&ws).await;
    assert_eq!(status, ToolCallStatus::Completed, "{text}");
    assert!(text.contains("seen-by-mcp.txt"), "{text}");
}

#[tokio::test(flavor = "multi_thread")]
async fn an_untrusted_workspace_starts_none_of_the_editors_mcp_servers() {
    let ws = Workspace::new();
    let (seen, status, text) = listed_through_the_editors_server(&ws).await;
    assert_eq!(status, ToolCallStatus::Failed, "{text}");
    let reply = seen.reply();
    assert!(
        reply.contains("the editor's MCP servers `files` are not started")
            && reply.contains("mnemo trust"),
        "{reply}"
    );
}
