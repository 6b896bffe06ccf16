//! The daemon's runner: one job is one new headless session in the job's workspace, started
//! the way `mnemo run` starts one (config layers, model chain, tools, sandbox) and stored like
//! any other session. Nobody watches it, so its approval questions are denied at once and the
//! model is told why.

use futures_util::future::BoxFuture;
use tokio_util::sync::CancellationToken;

use crate::config::{CliOverrides, Dirs};
use crate::host::{self, Attachment, SessionHost};
use crate::jobs::job::{Job, RunOutcome};
use crate::jobs::scheduler::JobRunner;
use crate::protocol::{Event, Op, TurnStatus};

/// How long a finished run waits for its session to end.
const STOP_WAIT: std::time::Duration = std::time::Duration::from_secs(10);

/// Runs jobs as headless sessions in `host` with mnemo's directories `dirs` and the daemon's
/// command-line overrides `cli` (a job's own model wins over the one there).
#[derive(Clone)]
pub struct HeadlessRunner {
    dirs: Dirs,
    cli: CliOverrides,
    host: SessionHost,
    /// The daemon's launch, whose store and model runs share.
    shared: Option<std::sync::Arc<host::Loaded>>,
}

impl HeadlessRunner {
    pub fn new(dirs: Dirs, cli: CliOverrides, host: SessionHost) -> Self {
        Self {
            dirs,
            cli,
            host,
            shared: None,
        }
    }

    /// Runs share `loaded`'s open store and model instead of opening their own.
    pub fn sharing(mut self, loaded: std::sync::Arc<host::Loaded>) -> Self {
        self.shared = Some(loaded);
        self
    }

    async fn run_job(self, job: Job, cancel: CancellationToken) -> RunOutcome {
        let mut cli = self.cli.clone();
        if job.model.is_some() {
            cli.model = job.model.clone();
        }
        // A schedule made before its workspace was trusted runs as it was made.
        if job.rights.is_some_and(|maker| !maker.trusted) {
            cli.distrust_workspace = true;
        }
        let failed = |error: String| RunOutcome::Failed {
            session_id: None,
            error,
        };
        // Reading the config files and the trust list is blocking IO, kept off the runtime.
        let (shared, dirs, workspace, load_cli) = (
            self.shared.clone(),
            self.dirs.clone(),
            job.workspace.clone(),
            cli.clone(),
        );
        let loaded = tokio::task::spawn_blocking(move || match shared {
            Some(shared) => shared.for_workspace(&workspace, &load_cli),
            None => host::load_config_from(&dirs, &workspace, &load_cli),
        })
        .await;
        let mut loaded = match loaded {
            Ok(Ok(loaded)) => loaded,
            Ok(Err(e)) => return failed(e.to_string()),
            Err(e) => return failed(format!("loading the configuration failed: {e}")),
        };
        if let Some(maker) = &job.rights {
            crate::jobs::schedule::limit_to(&mut loaded.config, maker);
        }
        let store = match loaded.store() {
            Ok(store) => store,
            Err(e) => return failed(e.to_string()),
        };
        let unattended = format!("{} runs in mnemo serve while nobody watches", job.label);
        let handle = match self.host.open_unattended(&loaded, &cli, unattended).await {
            Ok(handle) => handle,
            Err(e) => return failed(e.to_string()),
        };
        let session_id = handle.session.clone();
        let outcome = drive(handle, job.prompt.clone(), session_id.clone(), cancel).await;
        self.host.stop(&session_id, STOP_WAIT).await;
        let (id, title) = (session_id, job.label.clone());
        // The title says which job ran; the first line of the long prompt would not.
        let _ = store.call(move |db| db.rename_session(&id, &title)).await;
        outcome
    }
}

impl JobRunner for HeadlessRunner {
    fn run(&self, job: Job, cancel: CancellationToken) -> BoxFuture<'static, RunOutcome> {
        Box::pin(self.clone().run_job(job, cancel))
    }
}

/// Sends the prompt and follows the session until its turn (and any turn that sub-agents
/// still running open) ends; the last reply is the run's report.
async fn drive(
    mut handle: Attachment,
    prompt: String,
    session_id: String,
    cancel: CancellationToken,
) -> RunOutcome {
    let gone = |session_id: String| RunOutcome::Failed {
        session_id: Some(session_id),
        error: "the agent task ended unexpectedly".into(),
    };
    if handle.ops.send(Op::user_input(prompt)).await.is_err() {
        return gone(session_id);
    }
    let mut reply = String::new();
    let mut agents_pending = false;
    let mut interrupted = false;
    loop {
        let event = tokio::select! {
            event = handle.events.recv() => event.map(|numbered| numbered.event),
            () = cancel.cancelled(), if !interrupted => {
                interrupted = true;
                let _ = handle.ops.send(Op::Interrupt).await;
                continue;
            }
        };
        let Some(event) = event else {
            break gone(session_id);
        };
        match event {
            Event::AssistantMessage { text } if !text.trim().is_empty() => reply = text,
            Event::AgentsPending { .. } => agents_pending = true,
            Event::TurnFinished { .. } if std::mem::take(&mut agents_pending) && !interrupted => {}
            Event::TurnFinished {
                status, message, ..
            } => {
                break match (status, interrupted) {
                    (_, true) | (TurnStatus::Interrupted, _) => RunOutcome::Interrupted {
                        session_id: Some(session_id),
                    },
                    (TurnStatus::Completed, false) => RunOutcome::Replied {
                        session_id,
                        text: reply,
                    },
                    (other, false) => RunOutcome::Failed {
                        session_id: Some(session_id),
                        error: message.unwrap_or_else(|| format!("the turn ended: {other:?}")),
                    },
                };
            }
            _ => {}
        }
    }
}
