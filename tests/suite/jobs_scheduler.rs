//! The scheduler of `mnemo serve` on a paused tokio clock, with a stand-in runner and an
//! in-memory book: intervals, cron lines, active hours, skipping while busy, one catch-up
//! after downtime, a run interrupted by a kill, wake-ups on a change, quiet heartbeats that
//! are not delivered, and shutdown.

use crate::jobs_support;

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use chrono::{DateTime, TimeZone, Utc};
use futures_util::future::BoxFuture;
use jobs_support::SharedBuffer;
use mnemo::jobs::book::JobBook;
use mnemo::jobs::cron::CronLine;
use mnemo::jobs::delivery::{Channel, Channels, Deliver, DeliveryError, Log, Report};
use mnemo::jobs::job::{Job, Record, RunOutcome, Source};
use mnemo::jobs::plan::{Rule, Timing};
use mnemo::jobs::scheduler::{Clock, JobRunner, Scheduler, SchedulerHandle};
use mnemo::jobs::timing::{ActiveHours, Zone};
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

const MINUTE: Duration = Duration::from_secs(60);

/// Tuesday 2026-11-24 08:00 UTC: where every test's clock starts.
fn base() -> DateTime<Utc> {
    Utc.with_ymd_and_hms(2026, 11, 24, 8, 0, 0)
        .single()
        .unwrap_or_default()
}

fn minutes(n: i64) -> DateTime<Utc> {
    base() + chrono::Duration::minutes(n)
}

fn job(name: &str, rule: Rule) -> Job {
    Job {
        key: format!("heartbeat:{name}"),
        label: format!("heartbeat {name}"),
        source: Source::Heartbeat(PathBuf::from(format!("/beats/{name}.md"))),
        timing: Timing {
            rule,
            hours: None,
            zone: Zone::utc(),
        },
        since: base(),
        workspace: PathBuf::from("/w"),
        model: None,
        prompt: format!("run {name}"),
        deliver: vec![Channel::Log],
        rights: None,
    }
}

/// A job every `period` minutes whose first run is at the clock's start.
fn every(name: &str, period: u64) -> Job {
    job(
        name,
        Rule::Every {
            every: MINUTE * period as u32,
            first: Some(base()),
        },
    )
}

/// Jobs and their records in memory, as the store would keep them; clones share them.
#[derive(Clone, Default)]
struct Book {
    jobs: Arc<Mutex<Vec<(Job, Record)>>>,
    finished: Arc<Mutex<Vec<(String, String)>>>,
}

impl Book {
    fn with(jobs: impl IntoIterator<Item = (Job, Record)>) -> Book {
        Book {
            jobs: Arc::new(Mutex::new(jobs.into_iter().collect())),
            ..Book::default()
        }
    }

    fn add(&self, job: Job) {
        self.jobs
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push((job, Record::default()));
    }

    /// The label and status of every finished run, in order.
    fn statuses(&self) -> Vec<(String, String)> {
        self.finished
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }
}

impl JobBook for Book {
    fn load(&self, _now: DateTime<Utc>) -> BoxFuture<'_, Vec<(Job, Record)>> {
        let jobs = self
            .jobs
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone();
        Box::pin(async move { jobs })
    }

    fn started<'a>(&'a self, job: &'a Job, seen: Record, at: DateTime<Utc>) -> BoxFuture<'a, bool> {
        let mut jobs = self.jobs.lock().unwrap_or_else(PoisonError::into_inner);
        let claimed = match jobs.iter_mut().find(|(j, _)| j.key == job.key) {
            Some((_, record)) if *record == seen => {
                record.last_run = Some(at);
                record.running = Some((at, std::process::id()));
                true
            }
            _ => false,
        };
        Box::pin(async move { claimed })
    }

    fn finished<'a>(
        &'a self,
        job: &'a Job,
        status: &'a str,
        _session: Option<&'a str>,
    ) -> BoxFuture<'a, ()> {
        let mut jobs = self.jobs.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some((_, record)) = jobs.iter_mut().find(|(j, _)| j.key == job.key) {
            record.running = None;
        }
        self.finished
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push((job.label.clone(), status.to_string()));
        Box::pin(async {})
    }
}

/// Which job started when.
type Starts = Vec<(String, DateTime<Utc>)>;

/// Answers each job with its reply after `takes`, noting when each run started.
#[derive(Clone)]
struct Runner {
    clock: Clock,
    takes: Duration,
    replies: HashMap<String, String>,
    starts: Arc<Mutex<Starts>>,
    at_once: Arc<Mutex<(usize, usize)>>,
}

impl Runner {
    fn new(clock: Clock, takes: Duration) -> Self {
        Self {
            clock,
            takes,
            replies: HashMap::new(),
            starts: Arc::default(),
            at_once: Arc::default(),
        }
    }

    fn starts(&self) -> Vec<(String, DateTime<Utc>)> {
        self.starts
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    fn start_times(&self, label: &str) -> Vec<DateTime<Utc>> {
        let starts = self.starts();
        starts
            .into_iter()
            .filter(|(l, _)| l == label)
            .map(|(_, t)| t)
            .collect()
    }

    /// The most runs that were in progress at one time.
    fn most_at_once(&self) -> usize {
        self.at_once
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .1
    }
}

impl JobRunner for Runner {
    fn run(&self, job: Job, cancel: CancellationToken) -> BoxFuture<'static, RunOutcome> {
        let runner = self.clone();
        Box::pin(async move {
            let now = runner.clock.now();
            runner
                .starts
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .push((job.label.clone(), now));
            {
                let mut at_once = runner
                    .at_once
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner);
                at_once.0 += 1;
                at_once.1 = at_once.1.max(at_once.0);
            }
            let stopped = tokio::select! {
                () = tokio::time::sleep(runner.takes) => false,
                () = cancel.cancelled() => true,
            };
            runner
                .at_once
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .0 -= 1;
            let session_id = format!("session-{}", job.key);
            if stopped {
                return RunOutcome::Interrupted {
                    session_id: Some(session_id),
                };
            }
            let text = runner
                .replies
                .get(&job.key)
                .cloned()
                .unwrap_or("done".into());
            RunOutcome::Replied { session_id, text }
        })
    }
}

struct Running {
    cancel: CancellationToken,
    task: JoinHandle<()>,
    handle: SchedulerHandle,
    log: SharedBuffer,
}

impl Running {
    async fn stop(self) -> String {
        self.cancel.cancel();
        let _ = self.task.await;
        self.log.text()
    }
}

fn start(runner: &Runner, book: &Book, reload: Duration) -> Running {
    let log = SharedBuffer::default();
    let scheduler = Scheduler::new(
        runner.clone(),
        book.clone(),
        Arc::new(Log::new(log.clone())),
    )
    .with_clock(runner.clock)
    .with_reload_every(reload);
    let handle = scheduler.handle();
    let cancel = CancellationToken::new();
    let task = tokio::spawn(scheduler.run(cancel.clone()));
    Running {
        cancel,
        task,
        handle,
        log,
    }
}

async fn wait(minutes: u64) {
    tokio::time::sleep(MINUTE * minutes as u32).await;
}

#[tokio::test(start_paused = true)]
async fn an_interval_first_runs_one_period_after_its_start_then_every_period() {
    let clock = Clock::following_tokio(base());
    let runner = Runner::new(clock, MINUTE);
    let inbox = job(
        "inbox",
        Rule::Every {
            every: MINUTE * 30,
            first: None,
        },
    );
    let book = Book::with([(inbox, Record::default())]);
    let running = start(&runner, &book, Duration::from_secs(86_400));
    wait(95).await;
    running.stop().await;
    let expected = [minutes(30), minutes(60), minutes(90)];
    assert_eq!(runner.start_times("heartbeat inbox"), expected);
    assert_eq!(book.statuses().len(), 3);
}

#[tokio::test(start_paused = true)]
async fn a_cron_line_runs_at_its_slots_only() -> Result<(), String> {
    let clock = Clock::following_tokio(base());
    let runner = Runner::new(clock, MINUTE);
    let cron = job("standup", Rule::Cron(CronLine::parse("0 9,11 * * 1-5")?));
    let book = Book::with([(cron, Record::default())]);
    // The periodic reload must not make runs of its own.
    let running = start(&runner, &book, Duration::from_secs(600));
    wait(60 * 24).await;
    running.stop().await;
    assert_eq!(
        runner.start_times("heartbeat standup"),
        [minutes(60), minutes(180)]
    );
    Ok(())
}

#[tokio::test(start_paused = true)]
async fn active_hours_hold_runs_until_they_open() -> Result<(), String> {
    let clock = Clock::following_tokio(base());
    let runner = Runner::new(clock, MINUTE);
    let mut hourly = every("office", 60);
    hourly.timing.hours = Some(ActiveHours::parse("10:00-12:00")?);
    let book = Book::with([(hourly, Record::default())]);
    let running = start(&runner, &book, Duration::from_secs(86_400));
    wait(60 * 24 + 150).await;
    running.stop().await;
    // 08:00 is closed: 10:00 and 11:00, then 10:00 the next day.
    let next_day = minutes(60 * 24 + 120);
    assert_eq!(
        runner.start_times("heartbeat office"),
        [minutes(120), minutes(180), next_day]
    );
    Ok(())
}

#[tokio::test(start_paused = true)]
async fn a_job_still_running_is_skipped_and_runs_once_after() {
    let clock = Clock::following_tokio(base());
    let runner = Runner::new(clock, MINUTE * 50);
    let book = Book::with([(every("slow", 20), Record::default())]);
    let running = start(&runner, &book, Duration::from_secs(86_400));
    wait(110).await;
    running.stop().await;
    // Slots at 20 and 40 pass while the first run goes on: one run when it ends.
    assert_eq!(
        runner.start_times("heartbeat slow"),
        [minutes(0), minutes(50), minutes(100)]
    );
    assert_eq!(runner.most_at_once(), 1);
}

#[tokio::test(start_paused = true)]
async fn after_downtime_a_missed_job_runs_once_not_once_per_slot() {
    let clock = Clock::following_tokio(base());
    let runner = Runner::new(clock, MINUTE);
    let five_hours_ago = Record {
        last_run: Some(minutes(-300)),
        running: None,
    };
    let book = Book::with([(every("inbox", 30), five_hours_ago)]);
    let running = start(&runner, &book, Duration::from_secs(86_400));
    wait(45).await;
    running.stop().await;
    assert_eq!(
        runner.start_times("heartbeat inbox"),
        [minutes(0), minutes(30)]
    );
}

#[tokio::test(start_paused = true)]
async fn a_run_interrupted_by_a_kill_does_not_block_the_next_one() {
    let clock = Clock::following_tokio(base());
    let runner = Runner::new(clock, MINUTE);
    // pid_max on Linux is at most 2^22: no process has this pid.
    let dead_pid = i32::MAX as u32;
    let killed = Record {
        last_run: Some(minutes(-45)),
        running: Some((minutes(-45), dead_pid)),
    };
    // pid 1 always lives: a run it holds is left alone.
    let elsewhere = Record {
        last_run: Some(minutes(-45)),
        running: Some((minutes(-45), 1)),
    };
    let book = Book::with([
        (every("killed", 30), killed),
        (every("elsewhere", 30), elsewhere),
    ]);
    let running = start(&runner, &book, Duration::from_secs(86_400));
    wait(10).await;
    running.stop().await;
    assert_eq!(runner.start_times("heartbeat killed"), [minutes(0)]);
    assert!(runner.start_times("heartbeat elsewhere").is_empty());
}

#[tokio::test(start_paused = true)]
async fn a_new_job_wakes_the_scheduler_without_waiting_for_a_reload() {
    let clock = Clock::following_tokio(base());
    let runner = Runner::new(clock, MINUTE);
    let book = Book::with([]);
    let running = start(&runner, &book, Duration::from_secs(86_400));
    wait(7).await;
    let mut reminder = job("reminder", Rule::Once(minutes(20)));
    reminder.source = Source::Schedule {
        id: 1,
        one_shot: true,
    };
    book.add(reminder);
    running.handle.jobs_changed();
    wait(60).await;
    running.stop().await;
    assert_eq!(runner.start_times("heartbeat reminder"), [minutes(20)]);
}

#[tokio::test(start_paused = true)]
async fn heartbeat_ok_is_not_delivered_and_a_report_is() {
    let clock = Clock::following_tokio(base());
    let mut runner = Runner::new(clock, MINUTE);
    runner
        .replies
        .insert("heartbeat:quiet".into(), " HEARTBEAT_OK\n".into());
    runner
        .replies
        .insert("heartbeat:disk".into(), "disk 91% full".into());
    let book = Book::with([
        (every("quiet", 60), Record::default()),
        (every("disk", 60), Record::default()),
    ]);
    let running = start(&runner, &book, Duration::from_secs(86_400));
    wait(5).await;
    let log = running.stop().await;
    assert!(log.contains("heartbeat quiet: nothing to report"), "{log}");
    assert!(!log.contains("── heartbeat quiet"), "{log}");
    assert!(
        log.contains("── heartbeat disk (session session-) ──\ndisk 91% full"),
        "{log}"
    );
    let mut finished = book.statuses();
    finished.sort();
    assert_eq!(
        finished,
        [
            ("heartbeat disk".to_string(), "reported".to_string()),
            ("heartbeat quiet".to_string(), "quiet".to_string())
        ]
    );
}

#[tokio::test(start_paused = true)]
async fn shutdown_interrupts_runs_in_progress_and_records_them() {
    let clock = Clock::following_tokio(base());
    let runner = Runner::new(clock, MINUTE * 600);
    let book = Book::with([(every("long", 60), Record::default())]);
    let running = start(&runner, &book, Duration::from_secs(86_400));
    wait(1).await;
    let log = running.stop().await;
    assert_eq!(
        book.statuses(),
        [("heartbeat long".to_string(), "interrupted".to_string())]
    );
    assert!(log.contains("heartbeat long: interrupted"), "{log}");
}

/// A channel that keeps what it was given.
#[derive(Default)]
struct Recorded(Mutex<Vec<(Option<i64>, String)>>);

impl Deliver for Recorded {
    fn deliver<'a>(
        &'a self,
        to: Option<i64>,
        report: &'a Report,
    ) -> BoxFuture<'a, Result<(), DeliveryError>> {
        let mut got = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        got.push((to, format!("{}: {}", report.job, report.text)));
        Box::pin(async { Ok(()) })
    }
}

#[tokio::test(start_paused = true)]
async fn a_report_goes_to_the_telegram_chats_its_job_names_and_a_missing_channel_is_logged()
-> Result<(), String> {
    let clock = Clock::following_tokio(base());
    let mut runner = Runner::new(clock, MINUTE);
    for name in ["all", "ada", "log"] {
        runner
            .replies
            .insert(format!("heartbeat:{name}"), format!("news for {name}"));
    }
    let mut all = every("all", 60);
    all.deliver = vec![Channel::Log, Channel::parse("telegram")?];
    let mut ada = every("ada", 60);
    ada.deliver = vec![Channel::parse("telegram:42")?];
    let book = Book::with([
        (all, Record::default()),
        (ada, Record::default()),
        (every("log", 60), Record::default()),
    ]);
    let telegram = Arc::new(Recorded::default());
    let log = SharedBuffer::default();
    let reports = Arc::new(Log::new(log.clone()));
    let scheduler = Scheduler::new(runner.clone(), book.clone(), reports.clone())
        .with_channels(Channels::new(reports).with_telegram(telegram.clone()))
        .with_clock(clock);
    let cancel = CancellationToken::new();
    let task = tokio::spawn(scheduler.run(cancel.clone()));
    wait(5).await;
    cancel.cancel();
    let _ = task.await;
    let mut got = telegram
        .0
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .clone();
    got.sort();
    assert_eq!(
        got,
        [
            (None, "heartbeat all: news for all".to_string()),
            (Some(42), "heartbeat ada: news for ada".to_string())
        ],
        "only the jobs naming Telegram went there"
    );
    let text = log.text();
    assert!(
        text.contains("── heartbeat log"),
        "the log gets every report: {text}"
    );

    // Without the channel running, the report still reaches the log and the failure is said.
    let mut named = every("ada", 60);
    named.deliver = vec![Channel::parse("telegram")?];
    let failing = Book::with([(named, Record::default())]);
    let running = start(&runner, &failing, Duration::from_secs(86_400));
    wait(5).await;
    let text = running.stop().await;
    assert!(text.contains("── heartbeat ada"), "{text}");
    assert!(
        text.contains("cannot deliver to telegram: the Telegram channel is not running"),
        "{text}"
    );
    Ok(())
}

#[tokio::test(start_paused = true)]
async fn at_most_max_running_schedules_run_at_once_and_the_rest_wait_their_turn() {
    let runner = Runner::new(Clock::following_tokio(base()), MINUTE * 10);
    let schedule = |id: i64| Job {
        key: format!("schedule:{id}"),
        label: format!("schedule #{id}"),
        source: Source::Schedule {
            id,
            one_shot: false,
        },
        ..every(&format!("s{id}"), 60)
    };
    let book = Book::with((1..=3).map(|id| (schedule(id), Record::default())));
    book.add(every("beat", 60));
    let log = SharedBuffer::default();
    let scheduler = Scheduler::new(
        runner.clone(),
        book.clone(),
        Arc::new(Log::new(log.clone())),
    )
    .with_clock(runner.clock)
    .with_reload_every(MINUTE * 60)
    .with_max_schedules_running(2);
    let cancel = CancellationToken::new();
    let task = tokio::spawn(scheduler.run(cancel.clone()));
    wait(15).await;
    // Two schedules and the heartbeat (not counted) at once; the third schedule after one ends.
    assert_eq!(runner.most_at_once(), 3);
    assert_eq!(runner.start_times("schedule #1"), [minutes(0)]);
    assert_eq!(runner.start_times("schedule #2"), [minutes(0)]);
    assert_eq!(runner.start_times("schedule #3"), [minutes(10)]);
    assert_eq!(runner.start_times("heartbeat beat"), [minutes(0)]);
    cancel.cancel();
    let _ = task.await;
    let said = log.text();
    assert!(
        said.contains("1 due schedules wait: at most 2 run at once ([schedules] max_running)"),
        "{said}"
    );
}
