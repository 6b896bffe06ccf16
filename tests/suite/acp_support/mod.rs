//! An ACP client of the crate's client side, driving the real `mnemo acp` as a child process
//! in a temporary workspace (its own config and data directories, a scripted model).

// Each test binary uses a different part of this module.
#![allow(dead_code)]

use std::sync::{Arc, Mutex};
use std::time::Duration;

use acp::schema::ProtocolVersion;
use acp::v1::ConnectionTo;
use acp::v1::schema::{
    ContentBlock, InitializeRequest, InitializeResponse, NewSessionRequest, PermissionOptionKind,
    PromptRequest, RequestPermissionOutcome, RequestPermissionRequest, RequestPermissionResponse,
    SelectedPermissionOutcome, SessionNotification, SessionUpdate,
};
use acp::{AcpAgent, AcpAgentConfig, Agent, Client};
use agent_client_protocol as acp;

pub use crate::cli_support::Workspace;

/// Every test's limit: a hung agent fails the test instead of stalling the suite.
pub const LIMIT: Duration = Duration::from_secs(60);

/// How the client answers permission requests.
#[derive(Clone, Copy)]
pub enum Answer {
    Allow,
    Deny,
    /// A JSON-RPC error instead of an answer.
    Fail,
}

/// What the agent sent the client.
#[derive(Clone, Default)]
pub struct Seen {
    pub updates: Arc<Mutex<Vec<SessionUpdate>>>,
    pub asked: Arc<Mutex<Vec<RequestPermissionRequest>>>,
}

impl Seen {
    pub fn updates(&self) -> Vec<SessionUpdate> {
        self.updates
            .lock()
            .unwrap_or_else(|e| panic!("{e}"))
            .clone()
    }

    pub fn asked(&self) -> Vec<RequestPermissionRequest> {
        self.asked.lock().unwrap_or_else(|e| panic!("{e}")).clone()
    }

    /// The agent's message text streamed so far.
    pub fn reply(&self) -> String {
        self.updates()
            .iter()
            .filter_map(|update| match update {
                SessionUpdate::AgentMessageChunk(chunk) => text(&chunk.content),
                _ => None,
            })
            .collect()
    }
}

pub fn text(block: &ContentBlock) -> Option<String> {
    match block {
        ContentBlock::Text(text) => Some(text.text.clone()),
        _ => None,
    }
}

/// `mnemo --cd WORKSPACE --model MODEL FLAGS… acp` as the workspace's tests run it.
pub fn agent(ws: &Workspace, model: &str, flags: &[&str]) -> AcpAgent {
    agent_with(ws, model, flags, &[])
}

/// `mnemo --cd WORKSPACE --model MODEL FLAGS… acp ACP_FLAGS…`.
pub fn agent_with(ws: &Workspace, model: &str, flags: &[&str], acp_flags: &[&str]) -> AcpAgent {
    let config = AcpAgentConfig::new(env!("CARGO_BIN_EXE_mnemo"))
        .arg("--cd")
        .arg(ws.path().display().to_string())
        .arg("--model")
        .arg(model)
        .args(flags.iter().copied())
        .arg("acp")
        .args(acp_flags.iter().copied())
        .env(
            "MNEMO_CONFIG_DIR",
            ws.path().join(".cfg").display().to_string(),
        )
        .env(
            "MNEMO_DATA_DIR",
            ws.path().join(".data").display().to_string(),
        );
    AcpAgent::new(config)
}

/// Connects to `agent`, records what it sends, answers permissions as `answer` says, and
/// runs `main` with the connection.
pub async fn run<R>(
    agent: AcpAgent,
    seen: &Seen,
    answer: Answer,
    main: impl AsyncFnOnce(ConnectionTo<Agent>) -> Result<R, acp::Error>,
) -> Result<R, acp::Error> {
    let updates = seen.updates.clone();
    let asked = seen.asked.clone();
    Client
        .v1()
        .name("mnemo-test-client")
        .on_receive_notification(
            async move |notification: SessionNotification, _cx| {
                updates
                    .lock()
                    .unwrap_or_else(|e| panic!("{e}"))
                    .push(notification.update);
                Ok(())
            },
            acp::on_receive_notification!(),
        )
        .on_receive_request(
            async move |request: RequestPermissionRequest, responder, _cx| {
                let wanted = match answer {
                    Answer::Allow => PermissionOptionKind::AllowOnce,
                    Answer::Deny => PermissionOptionKind::RejectOnce,
                    Answer::Fail => {
                        asked.lock().unwrap_or_else(|e| panic!("{e}")).push(request);
                        return responder.respond_with_error(acp::Error::internal_error());
                    }
                };
                let chosen = request
                    .options
                    .iter()
                    .find(|option| option.kind == wanted)
                    .map(|option| option.option_id.clone());
                asked.lock().unwrap_or_else(|e| panic!("{e}")).push(request);
                let outcome = match chosen {
                    Some(id) => {
                        RequestPermissionOutcome::Selected(SelectedPermissionOutcome::new(id))
                    }
                    None => RequestPermissionOutcome::Cancelled,
                };
                responder.respond(RequestPermissionResponse::new(outcome))
            },
            acp::on_receive_request!(),
        )
        .connect_with(agent, main)
        .await
}

pub async fn initialize(cx: &ConnectionTo<Agent>) -> Result<InitializeResponse, acp::Error> {
    cx.send_request(InitializeRequest::new(ProtocolVersion::V1))
        .block_task()
        .await
}

/// Initializes and opens a new session in `ws`; its id.
pub async fn new_session(cx: &ConnectionTo<Agent>, ws: &Workspace) -> Result<String, acp::Error> {
    initialize(cx).await?;
    let session = cx
        .send_request(NewSessionRequest::new(ws.path()))
        .block_task()
        .await?;
    Ok(session.session_id.0.to_string())
}

pub fn prompt(session: &str, text: &str) -> PromptRequest {
    PromptRequest::new(session.to_string(), vec![ContentBlock::from(text)])
}

pub mod editor;
