//! The MCP servers of a session. Each enabled server gets a supervisor task that connects,
//! lists its tools, re-lists them when the server announces a change, and restarts the
//! server with backoff when it exits. Nothing here blocks the caller: `start` returns at once,
//! and a model request that wants the first tool list waits with [`McpManager::wait_ready`].
//! Dropping the last handle stops the supervisors, which kills the servers.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rmcp::model::{CallToolRequestParams, ReadResourceRequestParams};
use rmcp::{Peer, RoleClient, ServiceError};
use serde_json::Value;
use tokio::sync::watch;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use super::config::{McpServerConfig, McpServerEntry};
use super::connection::ListChanges;
use super::content::{self, McpResult};
use super::names;
use super::supervisor::Supervisor;
use super::{McpError, McpResource, McpTool, ServerState};
use crate::sandbox::env_allow::EnvPolicy;

/// What the manager needs to start.
#[derive(Debug, Clone, Default)]
pub struct McpSettings {
    pub servers: BTreeMap<String, McpServerEntry>,
    /// Servers defined by a workspace the person has not trusted: listed, never started.
    pub not_trusted: BTreeSet<String>,
    /// Which of mnemo's variables the servers see (the sandbox's policy).
    pub env_policy: EnvPolicy,
    /// Where each server's stderr is appended (`mcp-<server>.log`); empty: nowhere.
    pub log_dir: PathBuf,
    pub backoff: Backoff,
    /// How long after `start` the servers are launched (their state is `starting` meanwhile).
    pub start_after: Duration,
}

/// Waits between restarts of a server that exited: `first`, doubled each time up to `max`.
/// A server that fails `give_up_after` starts in a row without ever getting ready (a wrong
/// command, a missing package) stays failed until the next session.
#[derive(Debug, Clone, Copy)]
pub struct Backoff {
    pub first: Duration,
    pub max: Duration,
    pub give_up_after: u32,
}

impl Default for Backoff {
    fn default() -> Self {
        Self {
            first: Duration::from_millis(500),
            max: Duration::from_secs(30),
            give_up_after: 5,
        }
    }
}

/// A handle on the session's servers; clones share them.
#[derive(Clone)]
pub struct McpManager {
    inner: Arc<Inner>,
}

struct Inner {
    shared: Arc<Shared>,
    shutdown: CancellationToken,
}

impl Drop for Inner {
    fn drop(&mut self) {
        self.shutdown.cancel();
    }
}

pub(super) struct Shared {
    pub(super) servers: BTreeMap<String, Server>,
    catalog: Mutex<Arc<Catalog>>,
    /// Bumped whenever the offered tools change.
    pub(super) tools_tx: watch::Sender<u64>,
    /// Bumped whenever a server's state changes.
    pub(super) states_tx: watch::Sender<u64>,
}

pub(super) struct Server {
    pub(super) config: Option<McpServerConfig>,
    pub(super) slot: Mutex<Slot>,
}

pub(super) struct Slot {
    pub(super) state: ServerState,
    pub(super) peer: Option<Peer<RoleClient>>,
    pub(super) pid: Option<u32>,
    pub(super) tools: Vec<rmcp::model::Tool>,
    /// The live connection's tool list announcements.
    pub(super) changes: Option<Arc<ListChanges>>,
    /// How many of the live connection's messages were too long to read.
    pub(super) oversized: Option<watch::Receiver<u64>>,
    /// It was ready once this session: a restart is not waited for.
    pub(super) ever_ready: bool,
}

#[derive(Default)]
struct Catalog {
    tools: Vec<McpTool>,
    /// Offered name → (server, the server's own tool name).
    by_name: HashMap<String, (String, String)>,
}

impl McpManager {
    /// Starts every enabled, trusted, valid server in the background. Call inside a tokio
    /// runtime.
    pub fn start(settings: McpSettings) -> Self {
        let mut servers = BTreeMap::new();
        let mut launch = Vec::new();
        for (name, entry) in &settings.servers {
            let trusted = !settings.not_trusted.contains(name);
            let (config, state) = match entry.config(name) {
                Err(e) => (None, failed(&e)),
                Ok(config) if !trusted => (Some(config.clone()), ServerState::NotTrusted),
                Ok(config) if !config.enabled => (Some(config.clone()), ServerState::Disabled),
                Ok(config) => match config.transport(name) {
                    Err(e) => (Some(config.clone()), failed(&e)),
                    Ok(transport) => {
                        launch.push((name.clone(), transport));
                        (Some(config.clone()), ServerState::Starting)
                    }
                },
            };
            servers.insert(name.clone(), Server::new(config, state));
        }
        for name in &settings.not_trusted {
            servers
                .entry(name.clone())
                .or_insert_with(|| Server::new(None, ServerState::NotTrusted));
        }
        let shared = Arc::new(Shared {
            servers,
            catalog: Mutex::new(Arc::new(Catalog::default())),
            tools_tx: watch::channel(0).0,
            states_tx: watch::channel(0).0,
        });
        let shutdown = CancellationToken::new();
        let settings = Arc::new(settings);
        for (name, transport) in launch {
            let supervisor = Supervisor {
                name,
                transport,
                shared: Arc::clone(&shared),
                settings: Arc::clone(&settings),
                shutdown: shutdown.clone(),
            };
            tokio::spawn(supervisor.run());
        }
        Self {
            inner: Arc::new(Inner { shared, shutdown }),
        }
    }

    /// Each server's state, by name.
    pub fn states(&self) -> Vec<(String, ServerState)> {
        self.shared()
            .servers
            .iter()
            .map(|(name, server)| (name.clone(), lock(&server.slot).state.clone()))
            .collect()
    }

    /// The servers starting for the first time this session (a restart is not listed).
    pub fn first_starts(&self) -> Vec<String> {
        self.shared()
            .servers
            .iter()
            .filter(|(_, s)| {
                let slot = lock(&s.slot);
                slot.state == ServerState::Starting && !slot.ever_ready
            })
            .map(|(name, _)| name.clone())
            .collect()
    }

    /// Waits until no server is starting for the first time, or until `deadline`. Each
    /// server's start is bounded by its `startup_timeout_secs`, so this never waits longer
    /// than the slowest of those.
    pub async fn wait_ready(&self, deadline: Instant) {
        let mut changes = self.shared().states_tx.subscribe();
        loop {
            if self.first_starts().is_empty() {
                return;
            }
            match tokio::time::timeout_at(deadline, changes.changed()).await {
                Ok(Ok(())) => {}
                Ok(Err(_)) | Err(_) => return,
            }
        }
    }

    /// Waits until every tool list a server announced as changed has been listed again, or
    /// until `deadline`: a tool call that made a server add tools is followed by a step that
    /// offers them.
    pub async fn settle(&self, deadline: Instant) {
        let mut changes = self.shared().states_tx.subscribe();
        loop {
            let pending = self.shared().servers.values().any(|s| {
                let slot = lock(&s.slot);
                slot.peer.is_some() && slot.changes.as_ref().is_some_and(|c| c.pending())
            });
            if !pending {
                return;
            }
            match tokio::time::timeout_at(deadline, changes.changed()).await {
                Ok(Ok(())) => {}
                Ok(Err(_)) | Err(_) => return,
            }
        }
    }

    /// The tools the servers that are ready offer now, under their offered names.
    pub fn tools(&self) -> Vec<McpTool> {
        lock(&self.shared().catalog).tools.clone()
    }

    /// How many times the offered tools changed so far.
    pub fn tools_generation(&self) -> u64 {
        *self.shared().tools_tx.borrow()
    }

    /// The longest startup timeout of the servers: no wait for them to start needs longer.
    pub fn longest_startup(&self) -> Duration {
        self.shared()
            .servers
            .values()
            .filter_map(|s| s.config.as_ref())
            .map(McpServerConfig::startup_timeout)
            .max()
            .unwrap_or_default()
    }

    /// Changes (its value is a counter) whenever the offered tools change: a server became
    /// ready or went down, or announced a new tool list.
    pub fn tools_changed(&self) -> watch::Receiver<u64> {
        self.shared().tools_tx.subscribe()
    }

    /// Changes whenever a server's state changes.
    pub fn states_changed(&self) -> watch::Receiver<u64> {
        self.shared().states_tx.subscribe()
    }

    /// The process id of a stdio server while it runs (for diagnostics and tests).
    pub fn server_pid(&self, server: &str) -> Option<u32> {
        self.shared()
            .servers
            .get(server)
            .and_then(|s| lock(&s.slot).pid)
    }

    /// Calls the tool offered as `tool_name`. `args` must be a JSON object (or null). The
    /// call ends at the server's `tool_timeout_secs`, or when `cancel` fires; either way the
    /// server is sent a cancellation notification.
    pub async fn call(
        &self,
        tool_name: &str,
        args: Value,
        cancel: CancellationToken,
    ) -> Result<McpResult, McpError> {
        let (server_name, tool) = lock(&self.shared().catalog)
            .by_name
            .get(tool_name)
            .cloned()
            .ok_or_else(|| McpError::UnknownTool(tool_name.to_string()))?;
        self.call_on(server_name, tool, args, cancel).await
    }

    /// Calls `expected` only if the servers still offer exactly that tool under its name (the
    /// same server, the same tool, the same read-only hint): what was approved is what runs.
    pub async fn call_exact(
        &self,
        expected: &McpTool,
        args: Value,
        cancel: CancellationToken,
    ) -> Result<McpResult, McpError> {
        let same = lock(&self.shared().catalog)
            .tools
            .iter()
            .any(|t| t == expected);
        if !same {
            return Err(McpError::Changed(expected.name.clone()));
        }
        self.call_on(expected.server.clone(), expected.tool.clone(), args, cancel)
            .await
    }

    async fn call_on(
        &self,
        server_name: String,
        tool: String,
        args: Value,
        cancel: CancellationToken,
    ) -> Result<McpResult, McpError> {
        let (peer, timeout) = self.peer(&server_name)?;
        let mut oversized = self.oversized(&server_name);
        let mut params = CallToolRequestParams::new(tool.clone());
        match args {
            Value::Object(map) => params = params.with_arguments(map),
            Value::Null => {}
            other => {
                return Err(McpError::BadArguments(format!(
                    "arguments must be a JSON object, not {other}"
                )));
            }
        }
        let call = tokio::time::timeout(timeout, peer.call_tool(params));
        let result = tokio::select! {
            result = call => result,
            () = cancel.cancelled() => return Err(McpError::Cancelled),
            () = super::oversize::dropped(&mut oversized) => {
                return Err(McpError::TooLarge { server: server_name, tool });
            }
        };
        match result {
            Err(_) => Err(McpError::Timeout {
                server: server_name,
                tool,
                secs: timeout.as_secs(),
            }),
            Ok(Err(e)) => Err(self.service_error(&server_name, &peer, e)),
            Ok(Ok(result)) => {
                let blocks: Vec<Value> = result
                    .content
                    .iter()
                    .filter_map(|b| serde_json::to_value(b).ok())
                    .collect();
                Ok(McpResult {
                    text: content::result_text(&blocks, result.structured_content.as_ref()),
                    is_error: result.is_error.unwrap_or(false),
                    images: content::result_images(&blocks),
                })
            }
        }
    }

    /// The resources a server offers.
    pub async fn list_resources(&self, server: &str) -> Result<Vec<McpResource>, McpError> {
        let (peer, timeout) = self.peer(server)?;
        let listed = tokio::time::timeout(timeout, peer.list_all_resources())
            .await
            .map_err(|_| McpError::Timeout {
                server: server.to_string(),
                tool: "resources/list".to_string(),
                secs: timeout.as_secs(),
            })?
            .map_err(|e| self.service_error(server, &peer, e))?;
        Ok(listed
            .into_iter()
            .map(|r| McpResource {
                uri: r.uri.clone(),
                name: r.name.clone(),
                description: r.description.clone(),
                mime_type: r.mime_type.clone(),
            })
            .collect())
    }

    /// A resource's contents as text (blobs described by type and size).
    pub async fn read_resource(&self, server: &str, uri: &str) -> Result<String, McpError> {
        let (peer, timeout) = self.peer(server)?;
        let read = tokio::time::timeout(
            timeout,
            peer.read_resource(ReadResourceRequestParams::new(uri)),
        )
        .await
        .map_err(|_| McpError::Timeout {
            server: server.to_string(),
            tool: "resources/read".to_string(),
            secs: timeout.as_secs(),
        })?
        .map_err(|e| self.service_error(server, &peer, e))?;
        let parts: Vec<String> = read
            .contents
            .iter()
            .filter_map(|c| serde_json::to_value(c).ok())
            .map(|c| content::resource_text(&c))
            .collect();
        Ok(parts.join("\n"))
    }

    fn shared(&self) -> &Shared {
        &self.inner.shared
    }

    /// What counts the messages of `server` too long to read, marked as seen so far.
    fn oversized(&self, server: &str) -> Option<watch::Receiver<u64>> {
        let entry = self.shared().servers.get(server)?;
        let mut seen = lock(&entry.slot).oversized.clone()?;
        seen.mark_unchanged();
        Some(seen)
    }

    /// The connection to a ready server, or why there is none.
    fn peer(&self, server: &str) -> Result<(Peer<RoleClient>, Duration), McpError> {
        let entry = self
            .shared()
            .servers
            .get(server)
            .ok_or_else(|| McpError::UnknownServer(server.to_string()))?;
        let slot = lock(&entry.slot);
        let timeout = entry
            .config
            .as_ref()
            .map_or(Duration::from_secs(60), McpServerConfig::tool_timeout);
        match (&slot.peer, &slot.state) {
            (Some(peer), ServerState::Ready { .. }) => Ok((peer.clone(), timeout)),
            (_, state) => Err(McpError::NotRunning {
                server: server.to_string(),
                state: state.to_string(),
            }),
        }
    }

    fn service_error(
        &self,
        server: &str,
        peer: &Peer<RoleClient>,
        error: ServiceError,
    ) -> McpError {
        match error {
            ServiceError::McpError(data) => McpError::Server {
                server: server.to_string(),
                message: data.message.to_string(),
            },
            _ if peer.is_transport_closed()
                || matches!(
                    error,
                    ServiceError::TransportClosed | ServiceError::TransportSend(_)
                ) =>
            {
                McpError::ServerExited {
                    server: server.to_string(),
                }
            }
            other => McpError::Server {
                server: server.to_string(),
                message: other.to_string(),
            },
        }
    }
}

fn failed(error: &super::McpConfigError) -> ServerState {
    ServerState::Failed {
        reason: error.to_string(),
    }
}

impl Server {
    fn new(config: Option<McpServerConfig>, state: ServerState) -> Self {
        Self {
            config,
            slot: Mutex::new(Slot {
                state,
                peer: None,
                pid: None,
                tools: Vec::new(),
                changes: None,
                oversized: None,
                ever_ready: false,
            }),
        }
    }
}

pub(super) fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

impl Shared {
    pub(super) fn set_state(&self, server: &str, state: ServerState) {
        if let Some(entry) = self.servers.get(server) {
            lock(&entry.slot).state = state;
        }
        self.states_tx.send_modify(|n| *n += 1);
    }

    /// Recomputes the offered tools from every connected server's list.
    pub(super) fn rebuild_catalog(&self) {
        // Held from reading the slots to storing the result: two servers getting ready at
        // once must not store their catalogs in the wrong order.
        let mut stored = lock(&self.catalog);
        let mut listed = Vec::new();
        for (name, server) in &self.servers {
            let slot = lock(&server.slot);
            if slot.peer.is_none() {
                continue;
            }
            for tool in &slot.tools {
                let offered = server.config.as_ref().is_some_and(|c| c.offers(&tool.name));
                if offered {
                    listed.push((name.clone(), tool.clone()));
                }
            }
        }
        let pairs: Vec<(String, String)> = listed
            .iter()
            .map(|(server, tool)| (server.clone(), tool.name.to_string()))
            .collect();
        let offered_names = names::assign(&pairs);
        let mut catalog = Catalog::default();
        for ((server, tool), name) in listed.into_iter().zip(offered_names) {
            catalog
                .by_name
                .insert(name.clone(), (server.clone(), tool.name.to_string()));
            catalog.tools.push(McpTool {
                name,
                server,
                tool: tool.name.to_string(),
                description: tool.description.as_deref().unwrap_or("").to_string(),
                input_schema: Value::Object((*tool.input_schema).clone()),
                read_only: tool
                    .annotations
                    .as_ref()
                    .and_then(|a| a.read_only_hint)
                    .unwrap_or(false),
            });
        }
        *stored = Arc::new(catalog);
        drop(stored);
        self.tools_tx.send_modify(|n| *n += 1);
    }
}
