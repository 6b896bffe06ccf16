//! The loop of `mnemo serve` that runs heartbeats and schedules. It asks the book for the
//! jobs, lets `plan` decide, starts what is due, and sleeps until the next deadline, a change
//! of the job set (`SchedulerHandle::jobs_changed`), the end of a run, or at most
//! `reload_every` (so edited heartbeat files and schedules made by other processes are seen
//! without a file watcher). It never polls faster than that.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use std::time::Duration;

use chrono::{DateTime, Utc};
use futures_util::future::BoxFuture;
use tokio::sync::Notify;
use tokio::task::JoinSet;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use super::book::JobBook;
use super::delivery::{Channel, Channels, Log, Report};
use super::job::{Job, Record, RunOutcome, Source, is_quiet};
use super::plan::{JobState, plan};

/// How often the job set is read again when nothing else wakes the scheduler.
pub const RELOAD_EVERY: Duration = Duration::from_secs(60);

/// Runs one job: a headless session in the daemon, a stand-in in tests. The run stops soon
/// after `cancel` fires (the daemon shuts down).
pub trait JobRunner: Send + Sync + 'static {
    fn run(&self, job: Job, cancel: CancellationToken) -> BoxFuture<'static, RunOutcome>;
}

/// Hears how each run ended, besides the log and the channels: `mnemo serve` tells the
/// session that made a schedule, and the desktop.
pub trait RunNotices: Send + Sync + 'static {
    fn ran<'a>(&'a self, job: &'a Job, outcome: &'a RunOutcome) -> BoxFuture<'a, ()>;
}

/// Where the scheduler reads the time.
#[derive(Debug, Clone, Copy)]
pub enum Clock {
    /// The system's wall clock.
    System,
    /// `base` at the tokio instant `start`, moving with tokio's clock (paused in tests).
    Tokio { base: DateTime<Utc>, start: Instant },
}

impl Clock {
    /// A clock that reads `base` now and then moves with tokio's (possibly paused) clock.
    pub fn following_tokio(base: DateTime<Utc>) -> Clock {
        Clock::Tokio {
            base,
            start: Instant::now(),
        }
    }

    pub fn now(&self) -> DateTime<Utc> {
        match self {
            Clock::System => Utc::now(),
            Clock::Tokio { base, start } => {
                let passed = chrono::Duration::from_std(start.elapsed()).unwrap_or_default();
                *base + passed
            }
        }
    }

    /// The tokio instant at which this clock reads `at` (now, when `at` has passed).
    fn instant_at(&self, at: DateTime<Utc>) -> Instant {
        let wait = (at - self.now()).to_std().unwrap_or_default();
        Instant::now() + wait
    }
}

/// Wakes a running scheduler to read its jobs again.
#[derive(Clone, Default)]
pub struct SchedulerHandle {
    changed: Arc<Notify>,
}

impl SchedulerHandle {
    /// The job set changed (a schedule was made, a heartbeat file edited).
    pub fn jobs_changed(&self) {
        // A stored permit wakes the loop even when it is busy right now.
        self.changed.notify_one();
    }
}

pub struct Scheduler<R, B> {
    runner: Arc<R>,
    book: Arc<B>,
    channels: Channels,
    log: Arc<Log>,
    clock: Clock,
    handle: SchedulerHandle,
    reload_every: Duration,
    /// Most schedule runs going at once; more wait until one ends.
    max_schedules_running: usize,
    notices: Option<Arc<dyn RunNotices>>,
}

/// What a finished run task hands back.
type Finished = (Job, String, Option<String>);

impl<R: JobRunner, B: JobBook> Scheduler<R, B> {
    /// A scheduler on the system clock whose reports go to `log` (the log channel).
    pub fn new(runner: R, book: B, log: Arc<Log>) -> Self {
        Self {
            runner: Arc::new(runner),
            book: Arc::new(book),
            channels: Channels::new(log.clone()),
            log,
            clock: Clock::System,
            handle: SchedulerHandle::default(),
            reload_every: RELOAD_EVERY,
            max_schedules_running: usize::MAX,
            notices: None,
        }
    }

    /// `notices` hears how every run ended.
    pub fn with_notices(mut self, notices: Arc<dyn RunNotices>) -> Self {
        self.notices = Some(notices);
        self
    }

    /// At most `max` schedule runs at once (heartbeats, the person's own, are not counted).
    pub fn with_max_schedules_running(mut self, max: usize) -> Self {
        self.max_schedules_running = max.max(1);
        self
    }

    /// Reports also go to these channels (Telegram), besides the log.
    pub fn with_channels(mut self, channels: Channels) -> Self {
        self.channels = channels;
        self
    }

    pub fn with_clock(mut self, clock: Clock) -> Self {
        self.clock = clock;
        self
    }

    pub fn with_reload_every(mut self, every: Duration) -> Self {
        self.reload_every = every;
        self
    }

    pub fn handle(&self) -> SchedulerHandle {
        self.handle.clone()
    }

    /// Runs jobs until `cancel` fires; then the runs in progress are cancelled, awaited and
    /// recorded.
    pub async fn run(self, cancel: CancellationToken) {
        let pid = std::process::id();
        let mut running: HashSet<String> = HashSet::new();
        let mut tasks: JoinSet<Finished> = JoinSet::new();
        let mut task_keys: HashMap<tokio::task::Id, Job> = HashMap::new();
        let mut told_waiting = false;
        loop {
            let now = self.clock.now();
            let jobs = self.book.load(now).await;
            let states = jobs.iter().map(|(job, record)| {
                let busy = running.contains(&job.key) || runs_elsewhere(record, pid);
                let state = JobState {
                    since: job.since,
                    last_run: record.last_run,
                    running: busy,
                };
                ((job, record), &job.timing, state)
            });
            let decided = plan(states, now);
            let mut schedules_running = task_keys
                .values()
                .filter(|job| matches!(job.source, Source::Schedule { .. }))
                .count();
            let mut waiting = 0;
            let mut lost_claim = false;
            for (job, record) in decided.due {
                let schedule = matches!(job.source, Source::Schedule { .. });
                if schedule && schedules_running >= self.max_schedules_running {
                    waiting += 1;
                    continue;
                }
                // Another daemon on the same database may have taken it since the load.
                if !self.book.started(job, *record, now).await {
                    lost_claim = true;
                    continue;
                }
                schedules_running += usize::from(schedule);
                self.log
                    .line(&format!("{} {}: started", stamp(now), job.label));
                running.insert(job.key.clone());
                let handle = tasks.spawn(self.run_one(job.clone(), cancel.child_token()));
                task_keys.insert(handle.id(), job.clone());
            }
            if waiting > 0 && !told_waiting {
                self.log.line(&format!(
                    "{} {waiting} due schedules wait: at most {} run at once ([schedules] \
                     max_running)",
                    stamp(now),
                    self.max_schedules_running
                ));
            }
            told_waiting = waiting > 0;
            // A run another daemon took is looked at again soon, not only when told.
            let reload = match lost_claim {
                true => self.reload_every.min(RELOAD_EVERY),
                false => self.reload_every,
            };
            let cap = now + chrono::Duration::from_std(reload).unwrap_or_default();
            let wake = decided.next.map_or(cap, |next| next.min(cap));
            tokio::select! {
                () = cancel.cancelled() => break,
                () = tokio::time::sleep_until(self.clock.instant_at(wake)) => {}
                () = self.handle.changed.notified() => {}
                Some(done) = tasks.join_next_with_id() => {
                    self.settle(done, &mut running, &mut task_keys).await;
                }
            }
        }
        while let Some(done) = tasks.join_next_with_id().await {
            self.settle(done, &mut running, &mut task_keys).await;
        }
    }

    /// Records a finished run task (one that panicked counts as failed).
    async fn settle(
        &self,
        done: Result<(tokio::task::Id, Finished), tokio::task::JoinError>,
        running: &mut HashSet<String>,
        task_keys: &mut HashMap<tokio::task::Id, Job>,
    ) {
        let (job, status, session) = match done {
            Ok((id, finished)) => {
                task_keys.remove(&id);
                finished
            }
            Err(error) => {
                let Some(job) = task_keys.remove(&error.id()) else {
                    return;
                };
                self.log.line(&format!(
                    "{} {}: failed: {error}",
                    stamp(self.clock.now()),
                    job.label
                ));
                (job, format!("failed: {error}"), None)
            }
        };
        running.remove(&job.key);
        self.book.finished(&job, &status, session.as_deref()).await;
    }

    /// One run: the runner, then the report delivered (unless there is nothing to report)
    /// and the end logged.
    fn run_one(&self, job: Job, cancel: CancellationToken) -> BoxFuture<'static, Finished> {
        let (runner, channels, log, clock) = (
            self.runner.clone(),
            self.channels.clone(),
            self.log.clone(),
            self.clock,
        );
        let notices = self.notices.clone();
        Box::pin(async move {
            let outcome = runner.run(job.clone(), cancel).await;
            let session = outcome.session_id().map(str::to_string);
            let short = session.as_deref().map_or(String::new(), |s| {
                format!(" (session {})", s.chars().take(8).collect::<String>())
            });
            let (status, line) = match &outcome {
                RunOutcome::Replied { text, .. } if is_quiet(text) => {
                    ("quiet".into(), format!("nothing to report{short}"))
                }
                RunOutcome::Replied { session_id, text } => {
                    let report = Report {
                        job: job.label.clone(),
                        session_id: session_id.clone(),
                        text: text.clone(),
                    };
                    // The log always gets the report; the other channels when the job names them.
                    let named = job.deliver.iter().filter(|c| **c != Channel::Log);
                    for channel in std::iter::once(&Channel::Log).chain(named) {
                        if let Err(e) = channels.deliver(*channel, &report).await {
                            log.line(&format!("{}: {e}", job.label));
                        }
                    }
                    ("reported".into(), format!("reported{short}"))
                }
                RunOutcome::Failed { error, .. } => (
                    format!("failed: {}", one_line(error, REASON_CHARS)),
                    format!("failed{short}: {error}"),
                ),
                RunOutcome::Interrupted { .. } => {
                    ("interrupted".into(), format!("interrupted{short}"))
                }
            };
            log.line(&format!("{} {}: {line}", stamp(clock.now()), job.label));
            if let Some(notices) = notices {
                notices.ran(&job, &outcome).await;
            }
            (job, status, session)
        })
    }
}

/// Whether another live process runs the job. A record left by a process that died (killed
/// mid-run) or by an earlier process with this pid does not count.
fn runs_elsewhere(record: &Record, own_pid: u32) -> bool {
    record
        .running
        .is_some_and(|(_, pid)| pid != own_pid && process_alive(pid))
}

fn process_alive(pid: u32) -> bool {
    let Ok(pid) = i32::try_from(pid) else {
        return false;
    };
    if pid <= 0 {
        return false;
    }
    // SAFETY: signal 0 sends nothing; it only asks whether the process exists.
    let found = unsafe { libc::kill(pid, 0) } == 0;
    found || std::io::Error::last_os_error().raw_os_error() == Some(libc::EPERM)
}

/// The longest reason a failed run's record keeps.
const REASON_CHARS: usize = 160;

/// `text` on one line, cut to `max` characters.
fn one_line(text: &str, max: usize) -> String {
    let line = text.split_whitespace().collect::<Vec<_>>().join(" ");
    match line.chars().count() > max {
        true => format!("{}…", line.chars().take(max).collect::<String>()),
        false => line,
    }
}

fn stamp(at: DateTime<Utc>) -> String {
    at.format("%Y-%m-%d %H:%M:%S").to_string()
}
