//! The host API in this process: sessions run in a `SessionHost`, reads go to the store of
//! the host's configuration. A daemon's gateway answers its clients through one of these.

use std::sync::Arc;
use std::time::Duration;

use futures_util::future::BoxFuture;

use super::api::{CapabilityUse, History, HostApi, HostResult, LiveSession, SearchAsk, SkillUse};
use super::replay::{self, Replay};
use super::{Attachment, Delivery, LaunchError, Loaded, OpenOptions, SessionChoice, SessionHost};
use crate::config::CliOverrides;
use crate::memory::embed::ArchiveSearch;
use crate::memory::recall::RecallScope;
use crate::memory::search_archive;
use crate::memory::types::SessionRow;

/// Cheap to clone; clones share the sessions and the store.
#[derive(Clone)]
pub struct LocalHost {
    sessions: SessionHost,
    loaded: Arc<Loaded>,
}

impl LocalHost {
    /// Reads go to `loaded`'s store; sessions run in `sessions`.
    pub fn new(sessions: SessionHost, loaded: Arc<Loaded>) -> Self {
        Self { sessions, loaded }
    }

    async fn with_store<R, F>(&self, job: F) -> Result<R, LaunchError>
    where
        R: Send + 'static,
        F: FnOnce(&mut crate::memory::Db) -> Result<R, crate::memory::StoreError> + Send + 'static,
    {
        Ok(self.loaded.store()?.call(job).await?)
    }
}

impl HostApi for LocalHost {
    fn open<'a>(
        &'a self,
        loaded: &'a Loaded,
        cli: &'a CliOverrides,
        choice: SessionChoice,
        options: OpenOptions,
    ) -> HostResult<'a, Attachment> {
        Box::pin(self.sessions.open(loaded, cli, choice, options))
    }

    fn attach<'a>(&'a self, id: &'a str, after: Option<u64>) -> HostResult<'a, Attachment> {
        Box::pin(async move {
            let attached = self.sessions.attach_after(id, Delivery::Wait, after).await;
            match attached {
                Ok(Some(attachment)) => Ok(attachment),
                Ok(None) => Err(LaunchError::Served(format!("session {id} is not running"))),
                Err(error) => Err(LaunchError::Served(error.to_string())),
            }
        })
    }

    fn stop<'a>(&'a self, id: &'a str, wait: Duration) -> BoxFuture<'a, ()> {
        Box::pin(async move {
            self.sessions.stop(id, wait).await;
        })
    }

    fn live_sessions(&self) -> HostResult<'_, Vec<LiveSession>> {
        let live = self
            .sessions
            .live()
            .into_iter()
            .map(|session| LiveSession {
                last_seq: self.sessions.last_seq(&session),
                session,
            })
            .collect();
        Box::pin(async move { Ok(live) })
    }

    fn stored_sessions(
        &self,
        workspace: Option<String>,
        limit: usize,
    ) -> HostResult<'_, Vec<SessionRow>> {
        Box::pin(self.with_store(move |db| db.people_sessions(workspace.as_deref(), limit)))
    }

    fn stored_session(&self, id: String) -> HostResult<'_, SessionRow> {
        Box::pin(self.with_store(move |db| db.session(&id)))
    }

    fn rename(&self, id: String, title: String) -> HostResult<'_, SessionRow> {
        Box::pin(self.with_store(move |db| {
            let row = db.session(&id)?;
            db.rename_session(&row.id, &title)?;
            db.session(&row.id)
        }))
    }

    fn latest_session(&self, workspace: String) -> HostResult<'_, Option<SessionRow>> {
        Box::pin(self.with_store(move |db| db.latest_session(&workspace)))
    }

    fn history(&self, id: String, recent: Option<usize>) -> HostResult<'_, History> {
        Box::pin(self.with_store(move |db| {
            let session = db.session(&id)?;
            let replay = match recent {
                Some(keep) => {
                    let active = db.active_messages(&session.id)?;
                    replay::recent(&active, session.message_count, keep)
                }
                None => Replay {
                    events: replay::events(&db.all_messages(&session.id)?),
                    earlier: 0,
                },
            };
            Ok(History { session, replay })
        }))
    }

    fn search(&self, ask: SearchAsk) -> HostResult<'_, ArchiveSearch> {
        Box::pin(async move {
            let store = self.loaded.store()?;
            let embedder = self.loaded.embedder();
            let scope = RecallScope {
                workspace: ask.workspace,
                except_session: ask.except_session,
            };
            let found = search_archive(&store, embedder.as_deref(), &ask.query, scope, ask.limit);
            Ok(found.await?)
        })
    }

    fn skill_stats(&self) -> HostResult<'_, Vec<SkillUse>> {
        Box::pin(async move {
            let stats = self.with_store(|db| db.skill_stats()).await?;
            let uses = stats.into_iter().map(|s| SkillUse {
                name: s.name,
                origin: s.origin.as_str().to_string(),
                loads: s.loads,
                pinned: s.pinned,
                stale: s.stale,
                suspect: s.suspect,
            });
            Ok(uses.collect())
        })
    }

    fn capabilities(&self) -> HostResult<'_, Vec<CapabilityUse>> {
        Box::pin(async move {
            let stored = self.with_store(|db| db.list_capabilities()).await?;
            let uses = stored.into_iter().map(|c| CapabilityUse {
                name: c.name,
                version: c.version,
                description: c.description,
                access_count: c.access_count,
                pinned: c.pinned,
            });
            Ok(uses.collect())
        })
    }

    fn jobs_changed(&self) -> BoxFuture<'_, bool> {
        self.loaded.services.jobs_changed()
    }

    fn show_notices<'a>(&'a self, id: &'a str) -> BoxFuture<'a, bool> {
        Box::pin(async move {
            self.sessions.hand_notices(id).await;
            let made = id.to_string();
            self.with_store(move |db| db.session_has_schedules(&made))
                .await
                .unwrap_or(false)
        })
    }

    fn schedules(&self, workspace: String) -> HostResult<'_, String> {
        Box::pin(async move {
            let (rows, runs) = self
                .with_store(|db| Ok((db.list_schedules()?, db.job_runs()?)))
                .await?;
            let workspace = [std::path::PathBuf::from(workspace)];
            let found = crate::jobs::heartbeat::load(&self.loaded.dirs, &workspace);
            let data = self.loaded.dirs.data.as_deref();
            let serving = data.is_some_and(super::daemon::serve_running);
            let now = chrono::Utc::now();
            Ok(crate::jobs::listing::overview(
                &rows, &runs, &found, serving, now,
            ))
        })
    }

    fn daemon(&self) -> HostResult<'_, Option<u32>> {
        let pid = self
            .loaded
            .dirs
            .data
            .as_deref()
            .and_then(super::daemon::running);
        Box::pin(async move { Ok(pid) })
    }

    fn served(&self) -> bool {
        false
    }
}
