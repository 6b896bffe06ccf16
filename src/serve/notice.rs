//! How sessions tell the scheduler that schedules changed. A session of `mnemo serve` tells the
//! daemon's scheduler in process; a standalone session dials a running daemon's socket.

use std::path::PathBuf;
use std::sync::{Arc, OnceLock};

use futures_util::future::BoxFuture;

use crate::jobs::scheduler::SchedulerHandle;
use crate::tools::services::ToolServices;

/// A standalone session's services: a daemon of the same data directory, when one runs.
pub struct DaemonNotice {
    data_dir: Option<PathBuf>,
}

impl DaemonNotice {
    pub fn new(data_dir: Option<PathBuf>) -> Self {
        Self { data_dir }
    }
}

impl ToolServices for DaemonNotice {
    fn jobs_changed(&self) -> BoxFuture<'_, bool> {
        Box::pin(async move {
            match &self.data_dir {
                Some(data) => crate::gateway::client::tell_jobs_changed(data).await,
                None => false,
            }
        })
    }

    fn scheduler_running(&self) -> bool {
        self.data_dir
            .as_deref()
            .is_some_and(crate::host::daemon::serve_running)
    }
}

/// The daemon's own sessions' services: its scheduler, told directly. The scheduler is made
/// after the launch its sessions share, so it is set here once it exists.
#[derive(Clone, Default)]
pub struct InProcessNotice {
    scheduler: Arc<OnceLock<SchedulerHandle>>,
}

impl InProcessNotice {
    /// From now on changes go to `scheduler`.
    pub fn connect(&self, scheduler: SchedulerHandle) {
        let _ = self.scheduler.set(scheduler);
    }
}

impl ToolServices for InProcessNotice {
    fn jobs_changed(&self) -> BoxFuture<'_, bool> {
        let told = match self.scheduler.get() {
            Some(scheduler) => {
                scheduler.jobs_changed();
                true
            }
            None => false,
        };
        Box::pin(async move { told })
    }

    fn scheduler_running(&self) -> bool {
        true
    }
}
