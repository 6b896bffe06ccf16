//! Sub-agents: a session hands a task to a child session that runs its own turn loop on a task of
//! its own, concurrently, and reports back. Each session keeps the runs it started in
//! [`AgentRuns`]; each run is a [`Run`] with a cancellation token under the session's subtree
//! token, so interrupting or cancelling a parent reaches every descendant.
//!
//! The tools (`spawn_agent`, `read_agent_output`, `list_agents`, `cancel_agent`, `fork`,
//! `gather_all`) are registry tools (`tools.rs`); what they need of the calling session (its
//! context, model chain and store) reaches them as an [`AgentHost`] in their tool context.

mod args;
mod calls;
mod child;
mod host;
mod tools;

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use tokio::sync::{Notify, mpsc, watch};
use tokio_util::sync::CancellationToken;

use crate::llm::fallback::FallbackChain;
use crate::protocol::{AgentKind, AgentStatus, Event};

pub use host::AgentHost;
pub(crate) use tools::is_agent_tool;
pub use tools::register;

/// Builds the model chain of a named model for a sub-agent that asks for one.
pub type ModelResolver = Arc<dyn Fn(&str) -> Result<Arc<FallbackChain>, String> + Send + Sync>;

/// Builds the whole chain (the model and its fallbacks) of a named model for `Op::SetModel`.
pub type ModelFactory = ModelResolver;

/// Where a session's user-side messages arrive while it is not asking for them: injected text
/// and, for background sub-agents, their results. `wake` rouses an idle agent task.
#[derive(Clone, Default)]
pub(crate) struct Mailbox {
    pub inbox: super::Inbox,
    pub wake: Arc<Notify>,
}

impl Mailbox {
    pub fn deliver(&self, text: String) {
        if let Ok(mut pending) = self.inbox.lock() {
            pending.texts.push_back(text);
        }
        self.wake.notify_one();
    }
}

/// The sub-agents one session started.
pub(crate) struct AgentRuns {
    /// 0 for a top-level session, 1 for its sub-agents, and so on.
    pub depth: u32,
    pub max_depth: u32,
    /// Set for a read-only sub-agent: whatever it starts is read-only too.
    pub readonly: bool,
    /// The run this session is, when it is a sub-agent.
    pub run_id: Option<String>,
    /// Where `Agent*` events go: the top-level front end, shared by the whole tree.
    sink: Mutex<Option<mpsc::Sender<Event>>>,
    runs: Mutex<Vec<Arc<Run>>>,
    /// Parent of every run's token; cancelled (and replaced) when the session is interrupted.
    subtree: Mutex<CancellationToken>,
    next: AtomicU32,
}

impl AgentRuns {
    pub fn top_level(max_depth: u32) -> Self {
        Self::new(0, max_depth, false, None, None, CancellationToken::new())
    }

    fn new(
        depth: u32,
        max_depth: u32,
        readonly: bool,
        run_id: Option<String>,
        sink: Option<mpsc::Sender<Event>>,
        subtree: CancellationToken,
    ) -> Self {
        Self {
            depth,
            max_depth,
            readonly,
            run_id,
            sink: Mutex::new(sink),
            runs: Mutex::new(Vec::new()),
            subtree: Mutex::new(subtree),
            next: AtomicU32::new(1),
        }
    }

    /// The runs registry of the session that `run` is.
    fn for_child(&self, run: &Run, readonly: bool) -> Self {
        Self::new(
            self.depth + 1,
            self.max_depth,
            self.readonly || readonly,
            Some(run.id.clone()),
            self.sink(),
            run.cancel.child_token(),
        )
    }

    /// The top-level session's front end receives the events of the whole tree.
    pub fn attach(&self, events: mpsc::Sender<Event>) {
        *lock(&self.sink) = Some(events);
    }

    pub fn detach(&self) {
        *lock(&self.sink) = None;
    }

    fn sink(&self) -> Option<mpsc::Sender<Event>> {
        lock(&self.sink).clone()
    }

    async fn emit(&self, event: Event) {
        if let Some(sink) = self.sink() {
            let _ = sink.send(event).await;
        }
    }

    /// Cancels every run this session started, and their descendants.
    pub fn cancel_all(&self) {
        let mut subtree = lock(&self.subtree);
        subtree.cancel();
        *subtree = CancellationToken::new();
    }

    /// Waits (at most `limit`) until every run has finished.
    pub async fn wait_all(&self, limit: Duration) {
        let deadline = tokio::time::Instant::now() + limit;
        let never = CancellationToken::new();
        for run in self.all() {
            let left = deadline.saturating_duration_since(tokio::time::Instant::now());
            run.wait(left, &never).await;
        }
    }

    /// Whether a run whose result will come as a message is still going.
    pub fn any_in_background(&self) -> bool {
        self.in_background() > 0
    }

    /// How many runs whose results will come as messages are still going.
    pub fn in_background(&self) -> u32 {
        let runs = lock(&self.runs);
        let going = runs.iter().filter(|run| {
            let state = lock(&run.state);
            state.background && state.status == AgentStatus::Running
        });
        u32::try_from(going.count()).unwrap_or(u32::MAX)
    }

    /// A fresh id: `a1`, `f2`, or under a sub-agent `a1.a1`.
    fn next_id(&self, kind: AgentKind) -> String {
        let letter = match kind {
            AgentKind::Spawn => 'a',
            AgentKind::Fork => 'f',
        };
        let n = self.next.fetch_add(1, Ordering::Relaxed);
        match &self.run_id {
            Some(parent) => format!("{parent}.{letter}{n}"),
            None => format!("{letter}{n}"),
        }
    }

    fn subtree_token(&self) -> CancellationToken {
        lock(&self.subtree).child_token()
    }

    fn add(&self, run: Arc<Run>) {
        lock(&self.runs).push(run);
    }

    fn get(&self, id: &str) -> Option<Arc<Run>> {
        lock(&self.runs).iter().find(|r| r.id == id).cloned()
    }

    fn all(&self) -> Vec<Arc<Run>> {
        lock(&self.runs).clone()
    }

    /// At the end of a turn, the forks it never gathered: a running one reports back as a
    /// background run does, a finished one reports now through `mail`, so no result is
    /// dropped unseen. Returns how many reported now.
    pub fn release_open_forks(&self, mail: &Mailbox) -> u32 {
        let mut reported = 0;
        for run in self.all().into_iter().filter(|run| run.is_open_fork()) {
            run.mark_gathered();
            if run.move_to_background() {
                continue;
            }
            let (status, response) = run.report();
            if status != AgentStatus::Cancelled {
                mail.deliver(background_report(&run, status, &response));
                reported += 1;
            }
        }
        reported
    }
}

/// The message that brings a run's result to its parent after the parent stopped waiting.
pub(super) fn background_report(run: &Run, status: AgentStatus, response: &str) -> String {
    let what = match run.kind {
        AgentKind::Spawn => "sub-agent",
        AgentKind::Fork => "fork",
    };
    format!(
        "[{what} {} {} in the background]\n{response}",
        run.id,
        status.label()
    )
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

/// One sub-agent run.
pub(crate) struct Run {
    pub id: String,
    pub session_id: String,
    pub kind: AgentKind,
    pub label: String,
    pub started: Instant,
    pub cancel: CancellationToken,
    state: Mutex<RunState>,
    done: watch::Sender<bool>,
}

struct RunState {
    status: AgentStatus,
    /// The final answer once finished.
    response: String,
    /// What it does now, while running.
    activity: String,
    /// Its result goes to the parent as a message when it finishes.
    background: bool,
    /// `gather_all` has returned it.
    gathered: bool,
}

/// How waiting for a run ended.
#[derive(Debug, PartialEq, Eq)]
enum Waited {
    Done,
    TimedOut,
    Cancelled,
}

impl Run {
    fn new(
        id: String,
        session_id: String,
        kind: AgentKind,
        label: String,
        background: bool,
        cancel: CancellationToken,
    ) -> Self {
        Self {
            id,
            session_id,
            kind,
            label,
            started: Instant::now(),
            cancel,
            state: Mutex::new(RunState {
                status: AgentStatus::Running,
                response: String::new(),
                activity: "starting".into(),
                background,
                gathered: false,
            }),
            done: watch::channel(false).0,
        }
    }

    pub(super) fn status(&self) -> AgentStatus {
        lock(&self.state).status
    }

    /// Status and answer (or current activity, while running).
    fn report(&self) -> (AgentStatus, String) {
        let state = lock(&self.state);
        match state.status {
            AgentStatus::Running => (state.status, state.activity.clone()),
            status => (status, state.response.clone()),
        }
    }

    fn set_activity(&self, activity: String) {
        lock(&self.state).activity = activity;
    }

    /// Records the end of the run. When the parent stopped waiting for it, `report` passes the
    /// result on, in the same step, so no one sees the run finished before its report is out.
    fn finish(&self, status: AgentStatus, response: String, report: impl FnOnce(&str)) {
        {
            let mut state = lock(&self.state);
            if state.background {
                report(&response);
            }
            state.status = status;
            state.response = response;
        }
        self.done.send_replace(true);
    }

    /// The parent stops waiting: the result will come as a message. `false` when the run
    /// already finished (its result can be returned at once).
    fn move_to_background(&self) -> bool {
        let mut state = lock(&self.state);
        if state.status != AgentStatus::Running {
            return false;
        }
        state.background = true;
        true
    }

    /// A fork whose answer `gather_all` has not returned yet.
    fn is_open_fork(&self) -> bool {
        self.kind == AgentKind::Fork && !lock(&self.state).gathered
    }

    fn mark_gathered(&self) {
        lock(&self.state).gathered = true;
    }

    async fn wait(&self, limit: Duration, cancel: &CancellationToken) -> Waited {
        let mut done = self.done.subscribe();
        tokio::select! {
            finished = done.wait_for(|d| *d) => match finished {
                Ok(_) => Waited::Done,
                Err(_) => Waited::Cancelled,
            },
            () = tokio::time::sleep(limit) => Waited::TimedOut,
            () = cancel.cancelled() => Waited::Cancelled,
        }
    }
}
