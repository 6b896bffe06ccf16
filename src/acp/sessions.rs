//! The sessions one ACP client works in: opening (new or stored), prompts, cancels and mode
//! changes, each answered through the host API.

use std::collections::HashMap;
use std::path::Path;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use acp::schema::ProtocolVersion;
use acp::v1::schema::{
    AgentCapabilities, AvailableCommand, AvailableCommandInput, AvailableCommandsUpdate,
    ContentBlock, ContentChunk, EmbeddedResourceResource, Implementation, InitializeRequest,
    InitializeResponse, LoadSessionRequest, LoadSessionResponse, McpCapabilities,
    NewSessionRequest, NewSessionResponse, PromptCapabilities, PromptRequest, PromptResponse,
    SessionConfigOption, SessionMode, SessionModeState, SessionNotification, SessionUpdate,
    SetSessionConfigOptionRequest, SetSessionConfigOptionResponse, SetSessionModeRequest,
    SetSessionModeResponse, StopReason, UnstructuredCommandInput,
};
use acp::v1::{ConnectionTo, Responder};
use acp::{Client, ErrorCode};
use agent_client_protocol as acp;
use tokio::sync::mpsc;

use super::mcp;
use super::pump::{self, Waiting};
use super::services;
use super::updates;
use crate::config::CliOverrides;
use crate::host::{Attachment, Delivery, HostApi, Loaded, OpenOptions, SessionChoice};
use crate::protocol::{self, ApprovalMode, FrontEndServices, Op};

/// How long a session this process runs may take to end when the client leaves.
const STOP_WAIT: Duration = Duration::from_secs(10);

/// A session the client works in.
struct Live {
    ops: mpsc::Sender<Op>,
    /// The prompt waiting for its turn to end.
    waiting: Waiting,
}

pub(super) struct Front {
    host: Arc<dyn HostApi>,
    loaded: Arc<Loaded>,
    cli: CliOverrides,
    live: Mutex<HashMap<String, Live>>,
    /// What the client's `initialize` offered the sessions' tools.
    offered: Mutex<FrontEndServices>,
}

/// A JSON-RPC error with `message`.
pub(super) fn error(code: ErrorCode, message: impl Into<String>) -> acp::Error {
    acp::Error::new(code, message)
}

impl Front {
    pub(super) fn new(host: Arc<dyn HostApi>, loaded: Arc<Loaded>, cli: CliOverrides) -> Self {
        Self {
            host,
            loaded,
            cli,
            live: Mutex::default(),
            offered: Mutex::default(),
        }
    }

    fn sessions(&self) -> MutexGuard<'_, HashMap<String, Live>> {
        self.live
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    pub(super) fn initialize(&self, request: &InitializeRequest) -> InitializeResponse {
        *self.offered.lock().unwrap_or_else(|p| p.into_inner()) =
            services::offered(&request.client_capabilities);
        let prompts = PromptCapabilities::new().embedded_context(true).image(true);
        InitializeResponse::new(ProtocolVersion::V1)
            .agent_capabilities(
                AgentCapabilities::new()
                    .load_session(true)
                    .prompt_capabilities(prompts)
                    .mcp_capabilities(McpCapabilities::new().http(true)),
            )
            .agent_info(Implementation::new("mnemo", env!("CARGO_PKG_VERSION")).title("mnemo"))
    }

    /// The configuration of a session in the client's `cwd`, with the same rules as the
    /// TUI's start: a broad workspace is refused unless mnemo was started with
    /// `--broad-workspace`, and an untrusted workspace's extra settings are not applied
    /// (`mnemo trust` applies them; nothing here trusts silently).
    fn workspace(&self, cwd: &Path) -> Result<Loaded, acp::Error> {
        self.loaded
            .for_workspace(cwd, &self.cli)
            .map_err(|e| error(ErrorCode::INVALID_PARAMS, e.to_string()))
    }

    fn options(&self) -> OpenOptions {
        OpenOptions {
            approval_mode: None,
            questions: true,
            delivery: Delivery::Wait,
        }
    }

    pub(super) async fn new_session(
        self: Arc<Self>,
        request: NewSessionRequest,
        responder: Responder<NewSessionResponse>,
        cx: ConnectionTo<Client>,
    ) {
        let opened = async {
            let mut loaded = self.workspace(&request.cwd)?;
            let note = mcp::add(&mut loaded, &request.mcp_servers, self.host.served());
            let attached = self
                .host
                .open(&loaded, &self.cli, SessionChoice::New, self.options())
                .await
                .map_err(|e| error(ErrorCode::INTERNAL_ERROR, e.to_string()))?;
            Ok::<_, acp::Error>((loaded, attached, note))
        };
        let (loaded, attached, note) = match opened.await {
            Ok(opened) => opened,
            Err(e) => {
                let _ = responder.respond_with_error(e);
                return;
            }
        };
        self.offer(&attached).await;
        let id = attached.session.clone();
        let response = NewSessionResponse::new(id.clone())
            .modes(self.modes(&loaded))
            .config_options(vec![self.model_option(&loaded)]);
        self.run(attached, &loaded, &cx);
        let _ = responder.respond(response);
        self.announce(&id, &loaded, note, &cx);
    }

    pub(super) async fn load_session(
        self: Arc<Self>,
        request: LoadSessionRequest,
        responder: Responder<LoadSessionResponse>,
        cx: ConnectionTo<Client>,
    ) {
        let id = request.session_id.0.to_string();
        if self.sessions().contains_key(&id) {
            let open = format!("session `{id}` is open already on this connection");
            let _ = responder.respond_with_error(error(ErrorCode::INVALID_REQUEST, open));
            return;
        }
        let opened = async {
            let mut loaded = self.workspace(&request.cwd)?;
            let note = mcp::add(&mut loaded, &request.mcp_servers, self.host.served());
            let history = self
                .host
                .history(id.clone(), None)
                .await
                .map_err(|e| error(ErrorCode::INVALID_PARAMS, e.to_string()))?;
            let workspace = loaded.workspace.clone();
            for event in &history.replay.events {
                for update in updates::replayed(event, &workspace) {
                    let _ = cx.send_notification(SessionNotification::new(id.clone(), update));
                }
            }
            let attached = self
                .host
                .open(
                    &loaded,
                    &self.cli,
                    SessionChoice::Resume(history.session.id),
                    self.options(),
                )
                .await
                .map_err(|e| error(ErrorCode::INTERNAL_ERROR, e.to_string()))?;
            Ok::<_, acp::Error>((loaded, attached, note))
        };
        match opened.await {
            Ok((loaded, attached, note)) => {
                self.offer(&attached).await;
                let response = LoadSessionResponse::new()
                    .modes(self.modes(&loaded))
                    .config_options(vec![self.model_option(&loaded)]);
                self.run(attached, &loaded, &cx);
                let _ = responder.respond(response);
                self.announce(&id, &loaded, note, &cx);
            }
            Err(e) => {
                let _ = responder.respond_with_error(e);
            }
        }
    }

    /// Offers the session the client's file-system and terminal services. A served session
    /// (`--attach`) outlives this client and may be watched by others, so it keeps mnemo's
    /// own tools.
    async fn offer(&self, attached: &Attachment) {
        let services = *self.offered.lock().unwrap_or_else(|p| p.into_inner());
        if services.any() && !self.host.served() {
            let _ = attached.ops.send(Op::OfferServices { services }).await;
        }
    }

    /// Forwards the session's events to the client from now on.
    fn run(&self, attached: Attachment, loaded: &Loaded, cx: &ConnectionTo<Client>) {
        let waiting = Waiting::default();
        self.sessions().insert(
            attached.session.clone(),
            Live {
                ops: attached.ops.clone(),
                waiting: waiting.clone(),
            },
        );
        let setting = pump::Setting {
            workspace: loaded.workspace.clone(),
            models: models(loaded),
        };
        tokio::spawn(pump::run(attached, waiting, setting, cx.clone()));
    }

    /// Tells the client the slash commands, what an untrusted workspace did not get, and
    /// `note` (the editor's MCP servers that were not started).
    fn announce(&self, id: &str, loaded: &Loaded, note: Option<String>, cx: &ConnectionTo<Client>) {
        let hint =
            |text: &str| AvailableCommandInput::Unstructured(UnstructuredCommandInput::new(text));
        let commands = vec![
            AvailableCommand::new("compact", "Compact the conversation now"),
            AvailableCommand::new("model", "Go on with another configured model")
                .input(hint("model name")),
        ];
        let update = SessionUpdate::AvailableCommandsUpdate(AvailableCommandsUpdate::new(commands));
        let _ = cx.send_notification(SessionNotification::new(id.to_string(), update));
        if !loaded.sources.ignored.is_empty() {
            let ignored: Vec<String> = loaded
                .sources
                .ignored
                .iter()
                .map(|s| s.to_string())
                .collect();
            let text = format!(
                "note: this workspace is not trusted, so its .mnemo/config.toml settings {} are \
                 not applied. Run `mnemo trust` in {} to apply them.\n",
                ignored.join("; "),
                loaded.workspace.display()
            );
            let chunk = ContentChunk::new(ContentBlock::from(text));
            let update = SessionUpdate::AgentMessageChunk(chunk);
            let _ = cx.send_notification(SessionNotification::new(id.to_string(), update));
        }
        if let Some(note) = note {
            let chunk = ContentChunk::new(ContentBlock::from(format!("note: {note}\n")));
            let update = SessionUpdate::AgentMessageChunk(chunk);
            let _ = cx.send_notification(SessionNotification::new(id.to_string(), update));
        }
    }

    /// The approval modes, as ACP session modes.
    fn modes(&self, loaded: &Loaded) -> SessionModeState {
        let current = self.cli.approval.unwrap_or(loaded.config.approval);
        let modes = ApprovalMode::ALL
            .iter()
            .map(|mode| SessionMode::new(mode.label(), mode.label()).description(mode.explain()))
            .collect();
        SessionModeState::new(current.label(), modes)
    }

    /// The model picker as a session of `loaded` starts (a stored session's own model
    /// follows as soon as it announces itself).
    fn model_option(&self, loaded: &Loaded) -> SessionConfigOption {
        let current = self
            .cli
            .model
            .clone()
            .unwrap_or_else(|| loaded.config.default_model.clone());
        updates::model_option(&current, &models(loaded))
    }

    /// `session/set_config_option`: the model picker goes on with another configured model.
    pub(super) async fn set_option(
        self: Arc<Self>,
        request: SetSessionConfigOptionRequest,
        responder: Responder<SetSessionConfigOptionResponse>,
    ) {
        let id = request.session_id.0.to_string();
        let Some((ops, _)) = self.ops(&id) else {
            let _ = responder.respond_with_error(unknown(&id));
            return;
        };
        let model = match request.value.as_value_id() {
            Some(model) if &*request.config_id.0 == updates::MODEL_OPTION => model.0.to_string(),
            _ => {
                let message = format!(
                    "unknown option `{}`: the one option is `{}`, a model name",
                    request.config_id.0,
                    updates::MODEL_OPTION
                );
                let _ = responder.respond_with_error(error(ErrorCode::INVALID_PARAMS, message));
                return;
            }
        };
        let models = models(&self.loaded);
        let options = vec![updates::model_option(&model, &models)];
        let _ = match ops.send(Op::SetModel { model }).await {
            Ok(()) => responder.respond(SetSessionConfigOptionResponse::new(options)),
            Err(_) => responder.respond_with_error(ended()),
        };
    }

    fn ops(&self, id: &str) -> Option<(mpsc::Sender<Op>, Waiting)> {
        self.sessions()
            .get(id)
            .map(|live| (live.ops.clone(), live.waiting.clone()))
    }

    pub(super) async fn prompt(
        self: Arc<Self>,
        request: PromptRequest,
        responder: Responder<PromptResponse>,
    ) {
        let id = request.session_id.0.to_string();
        let Some((ops, waiting)) = self.ops(&id) else {
            let _ = responder.respond_with_error(unknown(&id));
            return;
        };
        let text = prompt_text(&request.prompt);
        if let Some(op) = command(&text) {
            let sent = ops.send(op).await;
            let _ = match sent {
                Ok(()) => responder.respond(PromptResponse::new(StopReason::EndTurn)),
                Err(_) => responder.respond_with_error(ended()),
            };
            return;
        }
        let images = prompt_images(&request.prompt);
        if text.trim().is_empty() && images.is_empty() {
            let _ = responder
                .respond_with_error(error(ErrorCode::INVALID_PARAMS, "the prompt has no text"));
            return;
        }
        if !waiting.wait(responder) {
            return;
        }
        if ops.send(Op::UserInput { text, images }).await.is_err() {
            waiting.end(Err(ended()));
        }
    }

    /// `session/cancel`: the turn stops as on Esc in the TUI.
    pub(super) fn cancel(&self, id: &str) {
        if let Some((ops, _)) = self.ops(id) {
            tokio::spawn(async move { ops.send(Op::Interrupt).await });
        }
    }

    pub(super) async fn set_mode(
        self: Arc<Self>,
        request: SetSessionModeRequest,
        responder: Responder<SetSessionModeResponse>,
    ) {
        let id = request.session_id.0.to_string();
        let Some((ops, _)) = self.ops(&id) else {
            let _ = responder.respond_with_error(unknown(&id));
            return;
        };
        let Some(mode) = ApprovalMode::parse(&request.mode_id.0) else {
            let known: Vec<&str> = ApprovalMode::ALL.iter().map(|m| m.label()).collect();
            let message = format!(
                "unknown mode `{}`: the modes are {}",
                request.mode_id.0,
                known.join(", ")
            );
            let _ = responder.respond_with_error(error(ErrorCode::INVALID_PARAMS, message));
            return;
        };
        let _ = match ops.send(Op::SetApprovalMode { mode }).await {
            Ok(()) => responder.respond(SetSessionModeResponse::new()),
            Err(_) => responder.respond_with_error(ended()),
        };
    }

    /// Ends the sessions this process runs (a served host's go on: this only detaches).
    pub(super) async fn stop_all(&self) {
        let ids: Vec<String> = self.sessions().drain().map(|(id, _)| id).collect();
        for id in ids {
            self.host.stop(&id, STOP_WAIT).await;
        }
    }
}

/// The models the configuration names.
fn models(loaded: &Loaded) -> Vec<String> {
    loaded.config.models.keys().cloned().collect()
}

fn unknown(id: &str) -> acp::Error {
    error(
        ErrorCode::INVALID_PARAMS,
        format!("no session `{id}` is open here: create it with session/new or session/load"),
    )
}

pub(super) fn ended() -> acp::Error {
    error(ErrorCode::INTERNAL_ERROR, "the session ended unexpectedly")
}

/// The prompt as the text the agent gets: text blocks as they are, embedded files with
/// their path, links as their URI.
fn prompt_text(blocks: &[ContentBlock]) -> String {
    let mut text = String::new();
    for block in blocks {
        match block {
            ContentBlock::Text(part) => text.push_str(&part.text),
            ContentBlock::ResourceLink(link) => {
                text.push_str(&format!("\n{}\n", link.uri));
            }
            ContentBlock::Resource(resource) => {
                if let EmbeddedResourceResource::TextResourceContents(file) = &resource.resource {
                    text.push_str(&format!(
                        "\n<file uri=\"{}\">\n{}\n</file>\n",
                        file.uri, file.text
                    ));
                }
            }
            _ => {}
        }
    }
    text
}

/// The prompt's images, attached to the message (the session checks each before the model
/// sees it).
fn prompt_images(blocks: &[ContentBlock]) -> Vec<protocol::Attachment> {
    blocks
        .iter()
        .filter_map(|block| match block {
            ContentBlock::Image(image) => Some(protocol::Attachment {
                name: image
                    .uri
                    .as_deref()
                    .and_then(|uri| uri.rsplit('/').next())
                    .filter(|name| !name.is_empty())
                    .unwrap_or("image")
                    .to_string(),
                data: image.data.clone(),
            }),
            _ => None,
        })
        .collect()
}

/// The slash command a prompt is, when it is one.
fn command(text: &str) -> Option<Op> {
    let text = text.trim();
    if text == "/compact" {
        return Some(Op::Compact);
    }
    let model = text.strip_prefix("/model ")?.trim();
    (!model.is_empty()).then(|| Op::SetModel {
        model: model.to_string(),
    })
}
