//! `mnemo serve`: the long-running process. It owns a session host, runs heartbeats and
//! schedules when they are due, the dream cycle at night, and embeds what was remembered
//! without vectors; between deadlines it sleeps. SIGTERM (or Ctrl+C) stops it: running turns
//! are interrupted (every completed message is already stored) and it exits.

pub mod banner;
pub mod dreamer;
pub mod idle;
pub mod log;
pub mod nightly;
pub mod notice;
pub mod paired;
pub mod reminders;
pub mod runner;
pub mod searcher;

use std::io::Write;
use std::sync::Arc;
use std::time::Duration;

use futures_util::future::BoxFuture;
use tokio_util::sync::CancellationToken;

use crate::channels::telegram::deliver::TelegramDelivery;
use crate::host::SessionHost;
use crate::host::daemon::{LockError, ServeLock};
use crate::host::{LaunchError, Loaded};
use crate::jobs::book::StoreBook;
use crate::jobs::delivery::Channels;
use crate::jobs::job::{Job, RunOutcome};
use crate::jobs::scheduler::{JobRunner, Scheduler};
use crate::signals::Stop;
use log::ServeLog;
use runner::HeadlessRunner;
use tokio::signal::unix::{Signal, SignalKind, signal};

/// The scheduler reads its jobs again when told; this only bounds a sleep.
const NO_RELOAD: Duration = Duration::from_secs(7 * 24 * 3600);

/// How long stopping waits for each running session.
const STOP_WAIT: Duration = Duration::from_secs(5);

#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    #[error(transparent)]
    Lock(#[from] LockError),
    #[error(transparent)]
    Launch(#[from] LaunchError),
    #[error(transparent)]
    Gateway(#[from] crate::gateway::GatewayError),
    #[error("mnemo has no data directory (set MNEMO_DATA_DIR)")]
    NoDataDir,
    #[error("cannot write the daemon log: {0}")]
    Log(std::io::Error),
    #[error("opening the database stopped: {0}")]
    Open(String),
    #[error("cannot listen for signals: {0}")]
    Signals(std::io::Error),
}

/// What the daemon shares with its jobs.
#[derive(Clone)]
pub struct Daemon {
    pub loaded: Arc<Loaded>,
    pub host: SessionHost,
    pub log: ServeLog,
    pub cancel: CancellationToken,
}

/// How the daemon was asked to run.
#[derive(Clone, Default)]
pub struct ServeOptions {
    /// Where the gateway listens besides the local socket, and with which TLS.
    pub gateway: crate::gateway::GatewayOptions,
    /// The command line's overrides, for the sessions the daemon opens.
    pub cli: crate::config::CliOverrides,
}

/// Runs the daemon until a signal stops it; returns that signal.
pub async fn serve(loaded: Loaded, options: ServeOptions) -> Result<Stop, ServeError> {
    let data = loaded.dirs.data.clone().ok_or(ServeError::NoDataDir)?;
    let _lock = ServeLock::acquire(&data)?;
    let log = ServeLog::open(&data).map_err(ServeError::Log)?;
    let mut signals = DaemonSignals::new().map_err(ServeError::Signals)?;
    let mut loaded = loaded;
    // Its sessions tell the scheduler in process: the daemon never dials its own socket.
    let notice = notice::InProcessNotice::default();
    loaded.services = Arc::new(notice.clone());
    let loaded = Arc::new(loaded);
    // Opening (and migrating) the database is blocking IO, kept off the runtime's threads.
    let opening = loaded.clone();
    let store = tokio::task::spawn_blocking(move || opening.store())
        .await
        .map_err(|e| ServeError::Open(e.to_string()))??;
    let daemon = Daemon {
        loaded,
        host: SessionHost::new(),
        log,
        cancel: CancellationToken::new(),
    };
    daemon
        .log
        .line(&format!("mnemo serve started (pid {})", std::process::id()));
    // The local socket is always there, for `mnemo attach` and `mnemo run --attach`.
    let reports = Arc::new(crate::jobs::delivery::Log::new(daemon.log.clone()));
    let telegram = telegram(&daemon, &options.cli, reports.clone()).await;
    let mut channels = Channels::new(reports.clone());
    if let Some(ctx) = &telegram {
        let out = TelegramDelivery::new(ctx.api.clone(), ctx.store.clone());
        channels = channels.with_telegram(Arc::new(out));
    }
    let scheduler = scheduler(
        &daemon,
        store,
        options.cli.clone(),
        reports.clone(),
        channels,
    );
    let jobs_changed = scheduler.handle();
    notice.connect(jobs_changed.clone());
    let mut listening = options.gateway.clone();
    listening.jobs_changed = Some(jobs_changed.clone());
    listening.telegram_paired = telegram.as_ref().map(|ctx| {
        let told = paired::TellPaired {
            api: ctx.api.clone(),
            log: reports.clone(),
        };
        Arc::new(told) as Arc<dyn crate::gateway::PairedChats>
    });
    listening.searcher = Some(searcher::Searcher::new(
        daemon.loaded.clone(),
        daemon.log.clone(),
        daemon.cancel.clone(),
    ));
    let socket = crate::gateway::client::default_socket(&data);
    listening.listen.push(crate::gateway::Listen::Unix(socket));
    let gateway = crate::gateway::start(
        daemon.host.clone(),
        daemon.loaded.clone(),
        options.cli.clone(),
        &listening,
        daemon.cancel.clone(),
    )
    .await?;
    let tls = match listening.tls {
        Some(_) => " (TLS on TCP)",
        None => "",
    };
    daemon
        .log
        .line(&format!("gateway listening on {:?}{tls}", listening.listen));
    let what = serving(&daemon, &data, &listening, telegram.is_some()).await;
    daemon.log.line(&what);
    // The person who started it reads this in the terminal (or in journalctl).
    let _ = writeln!(std::io::stderr(), "{what}");
    let backfill = tokio::spawn(backfill(daemon.clone()));
    let jobs = tokio::spawn(scheduler.run(daemon.cancel.clone()));
    let night = tokio::spawn(nightly::run(daemon.clone(), options.cli.clone()));
    let phone = telegram.map(|ctx| tokio::spawn(crate::channels::telegram::run(Arc::new(ctx))));
    let settle = tokio::spawn(idle::run(daemon.cancel.clone()));
    idle::work_done();
    let stop = loop {
        match signals.recv().await {
            Wake::Stop(stop) => break stop,
            Wake::Reload => {
                daemon
                    .log
                    .line("SIGHUP: reading schedules and heartbeat files again");
                jobs_changed.jobs_changed();
            }
        }
    };
    daemon.log.line(&format!("stopping on {}", stop.name()));
    daemon.cancel.cancel();
    // The scheduler interrupts its runs and records how they ended.
    let _ = tokio::time::timeout(STOP_WAIT, jobs).await;
    daemon.host.stop_all(STOP_WAIT).await;
    let _ = tokio::time::timeout(STOP_WAIT, backfill).await;
    let _ = tokio::time::timeout(STOP_WAIT, night).await;
    if let Some(phone) = phone {
        let _ = tokio::time::timeout(STOP_WAIT, phone).await;
    }
    drop(gateway);
    let _ = tokio::time::timeout(STOP_WAIT, settle).await;
    daemon.log.line("stopped");
    Ok(stop)
}

/// Heartbeats and schedules, each run a session of the daemon's host. It reads them again
/// only when told (a schedule tool or `mnemo schedule rm` through the gateway, SIGHUP), so
/// between deadlines the daemon sleeps.
fn scheduler(
    daemon: &Daemon,
    store: crate::memory::Store,
    cli: crate::config::CliOverrides,
    log: Arc<crate::jobs::delivery::Log>,
    channels: Channels,
) -> Scheduler<Settling, StoreBook> {
    let dirs = daemon.loaded.dirs.clone();
    let workspaces = vec![daemon.loaded.workspace.clone()];
    let keep_runs = daemon.loaded.config.schedules.keep_runs;
    let reminders = reminders::Reminders {
        store: store.clone(),
        host: daemon.host.clone(),
    };
    let book = StoreBook::new(store, dirs.clone(), workspaces, log.clone())
        .keeping_runs(usize::try_from(keep_runs).unwrap_or(usize::MAX));
    let runner = HeadlessRunner::new(dirs, cli, daemon.host.clone()).sharing(daemon.loaded.clone());
    let max_running = daemon.loaded.config.schedules.max_running;
    Scheduler::new(Settling(runner), book, log)
        .with_channels(channels)
        .with_notices(Arc::new(reminders))
        .with_reload_every(NO_RELOAD)
        .with_max_schedules_running(usize::try_from(max_running).unwrap_or(usize::MAX))
}

/// The daemon's runner, saying when each run is over so the daemon can hand back what the
/// run made it touch.
struct Settling(HeadlessRunner);

impl JobRunner for Settling {
    fn run(&self, job: Job, cancel: CancellationToken) -> BoxFuture<'static, RunOutcome> {
        let run = self.0.run(job, cancel);
        Box::pin(async move {
            let outcome = run.await;
            idle::work_done();
            outcome
        })
    }
}

/// The Telegram channel's context when `[telegram]` enables it; why not, in the log and for
/// `mnemo status`, when it cannot run. The daemon goes on without it either way.
async fn telegram(
    daemon: &Daemon,
    cli: &crate::config::CliOverrides,
    log: Arc<crate::jobs::delivery::Log>,
) -> Option<crate::channels::telegram::Ctx> {
    if !daemon.loaded.config.telegram.enabled {
        return None;
    }
    let ctx = crate::channels::telegram::Ctx::new(
        daemon.loaded.clone(),
        daemon.host.clone(),
        cli.clone(),
        log,
        daemon.cancel.clone(),
    );
    match ctx {
        Ok(ctx) => Some(ctx),
        Err(err) => {
            daemon.log.line(&format!("telegram: not started: {err}"));
            if let Ok(store) = daemon.loaded.store() {
                let state = format!("not started: {err}");
                let _ = store.call(move |db| db.set_telegram_state(&state)).await;
            }
            None
        }
    }
}

/// The start lines: what the daemon serves, where it logs, how to stop it.
async fn serving(
    daemon: &Daemon,
    data: &std::path::Path,
    listening: &crate::gateway::GatewayOptions,
    telegram: bool,
) -> String {
    let (dirs, workspace) = (daemon.loaded.dirs.clone(), daemon.loaded.workspace.clone());
    let found = tokio::task::spawn_blocking(move || {
        crate::jobs::heartbeat::load(&dirs, std::slice::from_ref(&workspace))
    })
    .await
    .unwrap_or_default();
    let schedules = match daemon.loaded.store() {
        Ok(store) => store
            .call(|db| db.list_schedules())
            .await
            .unwrap_or_default(),
        Err(_) => Vec::new(),
    };
    let beats: Vec<_> = found.found.iter().filter(|b| b.enabled).collect();
    let mut workspaces: Vec<String> = beats
        .iter()
        .map(|b| b.workspace.display().to_string())
        .chain(schedules.iter().map(|s| s.workspace.clone()))
        .collect();
    workspaces.sort();
    workspaces.dedup();
    banner::banner(&banner::Serving {
        pid: std::process::id(),
        data_dir: data,
        log: daemon.log.path(),
        heartbeats: beats.len(),
        schedules: schedules.len(),
        workspaces: workspaces.len(),
        listen: &listening.listen,
        tls: listening.tls.is_some(),
        telegram,
        telegram_enabled: daemon.loaded.config.telegram.enabled,
        systemd: std::env::var_os("INVOCATION_ID").is_some(),
    })
}

/// Why the daemon woke from its signals.
enum Wake {
    Stop(Stop),
    Reload,
}

/// SIGTERM and SIGINT stop the daemon; SIGHUP makes it read its jobs again, as daemons do.
struct DaemonSignals {
    terminate: Signal,
    interrupt: Signal,
    hangup: Signal,
}

impl DaemonSignals {
    fn new() -> std::io::Result<Self> {
        Ok(Self {
            terminate: signal(SignalKind::terminate())?,
            interrupt: signal(SignalKind::interrupt())?,
            hangup: signal(SignalKind::hangup())?,
        })
    }

    async fn recv(&mut self) -> Wake {
        tokio::select! {
            _ = self.terminate.recv() => Wake::Stop(Stop::Terminate),
            _ = self.interrupt.recv() => Wake::Stop(Stop::Interrupt),
            _ = self.hangup.recv() => Wake::Reload,
        }
    }
}

/// Embeds what has no vectors yet (at start and every night, what the day's runs said), with
/// a model loaded for that round only (the daemon's idle memory stays small).
pub(crate) async fn backfill(daemon: Daemon) {
    let Some(embedder) = daemon.loaded.new_embedder() else {
        return;
    };
    let Ok(store) = daemon.loaded.store() else {
        return;
    };
    let done = tokio::select! {
        done = crate::memory::embed::backfill::embed_pending(&store, &embedder, |_, _| {}) => done,
        () = daemon.cancel.cancelled() => return,
    };
    drop(embedder);
    let _ = store.call(|db| db.release_memory()).await;
    idle::work_done();
    match done {
        Ok(0) => {}
        Ok(count) => daemon.log.line(&format!(
            "embedded {count} remembered items for search by meaning"
        )),
        Err(err) => daemon.log.line(&format!("embedding stopped: {err}")),
    }
}
