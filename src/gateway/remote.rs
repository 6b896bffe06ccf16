//! The host API of a running `mnemo serve`, through its gateway: `mnemo attach` hands this to
//! the TUI, which then behaves as it does with the host in its own process.

use std::time::Duration;

use futures_util::future::BoxFuture;
use serde::de::DeserializeOwned;

use super::client::{ClientError, GatewayClient};
use super::wire::HostOp;
use crate::config::CliOverrides;
use crate::host::api::{
    CapabilityUse, History, HostApi, HostResult, LiveSession, SearchAsk, SkillUse,
};
use crate::host::{Attachment, LaunchError, Loaded, OpenOptions, SessionChoice};
use crate::memory::embed::ArchiveSearch;
use crate::memory::types::SessionRow;

fn served(error: ClientError) -> LaunchError {
    LaunchError::Served(error.to_string())
}

impl GatewayClient {
    /// Asks the daemon's host `op` and reads the reply as `T`.
    async fn ask<T: DeserializeOwned>(&self, op: HostOp) -> Result<T, LaunchError> {
        self.ask_about(None, op).await
    }

    /// Like `ask`, about `session`.
    async fn ask_about<T: DeserializeOwned>(
        &self,
        session: Option<&str>,
        op: HostOp,
    ) -> Result<T, LaunchError> {
        let op = serde_json::to_value(op).map_err(|e| LaunchError::Served(e.to_string()))?;
        let reply = self.request(session, op).await.map_err(served)?;
        serde_json::from_value(reply)
            .map_err(|e| LaunchError::Served(format!("unreadable reply from mnemo serve: {e}")))
    }
}

/// The reply to `list_sessions`.
#[derive(serde::Deserialize)]
struct Live {
    sessions: Vec<LiveSession>,
}

impl HostApi for GatewayClient {
    fn open<'a>(
        &'a self,
        loaded: &'a Loaded,
        cli: &'a CliOverrides,
        choice: SessionChoice,
        _options: OpenOptions,
    ) -> HostResult<'a, Attachment> {
        Box::pin(async move {
            match choice {
                SessionChoice::Resume(id) => self.attach(&id).await.map_err(served),
                SessionChoice::New => self
                    .create(&loaded.workspace, cli.model.as_deref())
                    .await
                    .map_err(served),
                SessionChoice::Continue => {
                    let workspace = loaded.workspace_str();
                    let latest = self.latest_session(workspace.clone()).await?;
                    let row = latest.ok_or(LaunchError::NothingToContinue(workspace))?;
                    self.attach(&row.id).await.map_err(served)
                }
            }
        })
    }

    fn attach<'a>(&'a self, id: &'a str, after: Option<u64>) -> HostResult<'a, Attachment> {
        Box::pin(async move { self.attach_after(id, after).await.map_err(served) })
    }

    fn stop<'a>(&'a self, _id: &'a str, _wait: Duration) -> BoxFuture<'a, ()> {
        Box::pin(async {})
    }

    fn live_sessions(&self) -> HostResult<'_, Vec<LiveSession>> {
        Box::pin(async move {
            let live: Live = self.ask(HostOp::ListSessions).await?;
            Ok(live.sessions)
        })
    }

    fn stored_sessions(
        &self,
        workspace: Option<String>,
        limit: usize,
    ) -> HostResult<'_, Vec<SessionRow>> {
        Box::pin(self.ask(HostOp::StoredSessions { workspace, limit }))
    }

    fn stored_session(&self, id: String) -> HostResult<'_, SessionRow> {
        Box::pin(async move { self.ask_about(Some(&id), HostOp::StoredSession).await })
    }

    fn rename(&self, id: String, title: String) -> HostResult<'_, SessionRow> {
        Box::pin(async move {
            self.ask_about(Some(&id), HostOp::RenameSession { title })
                .await
        })
    }

    fn latest_session(&self, workspace: String) -> HostResult<'_, Option<SessionRow>> {
        Box::pin(self.ask(HostOp::LatestSession { workspace }))
    }

    fn history(&self, id: String, recent: Option<usize>) -> HostResult<'_, History> {
        Box::pin(async move { self.ask_about(Some(&id), HostOp::History { recent }).await })
    }

    fn search(&self, ask: SearchAsk) -> HostResult<'_, ArchiveSearch> {
        Box::pin(self.ask(HostOp::Search(ask)))
    }

    fn skill_stats(&self) -> HostResult<'_, Vec<SkillUse>> {
        Box::pin(self.ask(HostOp::SkillStats))
    }

    fn capabilities(&self) -> HostResult<'_, Vec<CapabilityUse>> {
        Box::pin(self.ask(HostOp::Capabilities))
    }

    fn jobs_changed(&self) -> BoxFuture<'_, bool> {
        Box::pin(async move {
            let told: Result<serde_json::Value, LaunchError> = self.ask(HostOp::JobsChanged).await;
            told.is_ok()
        })
    }

    fn show_notices<'a>(&'a self, _id: &'a str) -> BoxFuture<'a, bool> {
        // The daemon hands its sessions their notices as they come and when one attaches.
        Box::pin(async { false })
    }

    fn schedules(&self, workspace: String) -> HostResult<'_, String> {
        Box::pin(self.ask(HostOp::Schedules { workspace }))
    }

    fn daemon(&self) -> HostResult<'_, Option<u32>> {
        Box::pin(self.ask(HostOp::Daemon))
    }

    fn served(&self) -> bool {
        true
    }
}
