//! The task that keeps one MCP server running: connect, list its tools, re-list them when the
//! server announces a change, and restart it with backoff when it exits.

use std::sync::Arc;
use std::time::Duration;

use tokio_util::sync::CancellationToken;

use super::ServerState;
use super::config::Transport;
use super::connection::{self, Connection, ListChanges};
use super::manager::{McpSettings, Shared, lock};

/// Keeps one server running.
pub(super) struct Supervisor {
    pub(super) name: String,
    pub(super) transport: Transport,
    pub(super) shared: Arc<Shared>,
    pub(super) settings: Arc<McpSettings>,
    pub(super) shutdown: CancellationToken,
}

/// What a failed server's reason ends with while it is restarted, before the delay.
pub(super) const RESTARTING: &str = "; restarting in ";

/// A server ready this long before it exits counts as having worked.
const STABLE_AFTER: Duration = Duration::from_secs(10);

impl Supervisor {
    pub(super) async fn run(self) {
        let backoff = self.settings.backoff;
        let mut delay = backoff.first;
        let mut failed_starts = 0;
        tokio::select! {
            () = tokio::time::sleep(self.settings.start_after) => {}
            () = self.shutdown.cancelled() => return,
        }
        loop {
            let outcome = tokio::select! {
                outcome = self.session() => outcome,
                () = self.shutdown.cancelled() => return,
            };
            let Ended { reason, ready_for } = outcome;
            // Only a server that stayed up a while starts the backoff over: one that crashes
            // as soon as it is ready is given up like one that never starts.
            if ready_for.is_some_and(|up| up >= STABLE_AFTER) {
                delay = backoff.first;
                failed_starts = 0;
            } else {
                failed_starts += 1;
            }
            let giving_up = failed_starts >= backoff.give_up_after.max(1);
            let reason = if giving_up && failed_starts == 1 {
                reason
            } else if giving_up {
                format!("{reason} (gave up after {failed_starts} attempts)")
            } else {
                format!("{reason}{RESTARTING}{:.1}s", delay.as_secs_f64())
            };
            self.shared
                .set_state(&self.name, ServerState::Failed { reason });
            self.shared.rebuild_catalog();
            if giving_up {
                return;
            }
            tokio::select! {
                () = tokio::time::sleep(delay) => {}
                () = self.shutdown.cancelled() => return,
            }
            delay = (delay * 2).min(backoff.max);
            self.shared.set_state(&self.name, ServerState::Starting);
        }
    }

    /// One connection, from start to its end.
    async fn session(&self) -> Ended {
        let Some(config) = self
            .shared
            .servers
            .get(&self.name)
            .and_then(|s| s.config.clone())
        else {
            return Ended::new("no configuration", None);
        };
        let tools_changed = Arc::new(ListChanges::default());
        let started = tokio::time::timeout(config.startup_timeout(), async {
            let connection = connection::connect(
                &self.name,
                &self.transport,
                &self.settings.env_policy,
                &self.settings.log_dir,
                Arc::clone(&tools_changed),
            )
            .await?;
            let tools = connection
                .peer()
                .list_all_tools()
                .await
                .map_err(|e| format!("listing its tools failed: {e}"))?;
            Ok::<_, String>((connection, tools))
        })
        .await;
        let (connection, tools) = match started {
            Err(_) => {
                return Ended::new(
                    &format!(
                        "did not start within {}s (startup_timeout_secs)",
                        config.startup_timeout_secs
                    ),
                    None,
                );
            }
            Ok(Err(reason)) => return Ended::new(&reason, None),
            Ok(Ok(started)) => started,
        };
        self.publish(&connection, tools, &tools_changed);
        let ready_at = tokio::time::Instant::now();
        let reason = self
            .serve(connection, &tools_changed, config.startup_timeout())
            .await;
        Ended::new(&reason, Some(ready_at.elapsed()))
    }

    /// Offers the tools of a new connection; the state turns ready only once the catalog
    /// holds them, so whoever sees `Ready` also sees its tools.
    fn publish(
        &self,
        connection: &Connection,
        tools: Vec<rmcp::model::Tool>,
        changes: &Arc<ListChanges>,
    ) {
        if let Some(server) = self.shared.servers.get(&self.name) {
            let mut slot = lock(&server.slot);
            slot.peer = Some(connection.peer());
            slot.changes = Some(Arc::clone(changes));
            slot.oversized = connection.oversized.clone();
            slot.ever_ready = true;
            slot.pid = connection
                .child
                .as_ref()
                .and_then(connection::ChildGuard::pid);
        }
        self.publish_tools(tools);
    }

    /// Runs until the connection ends; re-lists tools on `list_changed`. Returns why it
    /// ended.
    async fn serve(
        &self,
        connection: Connection,
        tools_changed: &ListChanges,
        list_timeout: Duration,
    ) -> String {
        let Connection {
            service, mut child, ..
        } = connection;
        let peer = service.peer().clone();
        let mut waiting = Box::pin(service.waiting());
        loop {
            tokio::select! {
                _ = &mut waiting => break,
                announced = tools_changed.next() => {
                    let listed = tokio::time::timeout(list_timeout, peer.list_all_tools()).await;
                    if let Ok(Ok(tools)) = listed {
                        self.publish_tools(tools);
                    }
                    tools_changed.listed(announced);
                    // Whoever waits for the listing (`McpManager::settle`) looks again.
                    self.shared.states_tx.send_modify(|n| *n += 1);
                }
            }
        }
        if let Some(server) = self.shared.servers.get(&self.name) {
            let mut slot = lock(&server.slot);
            slot.peer = None;
            slot.pid = None;
            slot.changes = None;
            slot.oversized = None;
            // Never `Ready` without a connection; `run` words the reason and the restart.
            slot.state = ServerState::Failed {
                reason: "the connection to the server closed; restarting in a moment".to_string(),
            };
        }
        self.shared.states_tx.send_modify(|n| *n += 1);
        let mut status = None;
        if let Some(guard) = child.as_mut() {
            for _ in 0..20 {
                status = guard.exit_status();
                if status.is_some() {
                    break;
                }
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
        }
        drop(child);
        match status {
            Some(status) => format!("the server exited ({status})"),
            None => "the connection to the server closed".to_string(),
        }
    }

    fn publish_tools(&self, tools: Vec<rmcp::model::Tool>) {
        // The count says what is offered: enabled_tools and disabled_tools applied.
        let config = self
            .shared
            .servers
            .get(&self.name)
            .and_then(|s| s.config.as_ref());
        let count = tools
            .iter()
            .filter(|t| config.is_some_and(|c| c.offers(&t.name)))
            .count();
        // A first listing turns the state ready after the catalog holds the tools; a later
        // one updates the count before the catalog offers them. Either way whoever sees the
        // tools sees their server ready with their count.
        let mut refreshed = false;
        if let Some(server) = self.shared.servers.get(&self.name) {
            let mut slot = lock(&server.slot);
            slot.tools = tools;
            if matches!(slot.state, ServerState::Ready { .. }) {
                slot.state = ServerState::Ready { tools: count };
                refreshed = true;
            }
        }
        self.shared.rebuild_catalog();
        if refreshed {
            self.shared.states_tx.send_modify(|n| *n += 1);
        } else {
            self.shared
                .set_state(&self.name, ServerState::Ready { tools: count });
        }
    }
}

/// How one connection ended.
struct Ended {
    reason: String,
    /// How long it was ready, if it got there.
    ready_for: Option<Duration>,
}

impl Ended {
    fn new(reason: &str, ready_for: Option<Duration>) -> Self {
        Self {
            reason: reason.to_string(),
            ready_for,
        }
    }
}
