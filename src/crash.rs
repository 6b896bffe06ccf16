//! The crash boundary. A panic anywhere writes a structured record (time, component, message,
//! where, backtrace, version, session) as JSON under `<data dir>/crashes/`, and, when the user
//! set `crash_webhook`, posts it there. A component that can go on (a tool call, a sub-agent,
//! a session's agent task) runs inside [`within`]: its panic becomes an error its caller handles
//! and the rest of mnemo carries on. A panic outside any component is fatal: the terminal is
//! restored first (through the cleanups front ends register), then the user is told where the
//! record is.

use std::cell::RefCell;
use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, OnceLock, PoisonError};
use std::time::Duration;

use futures_util::FutureExt;
use serde::{Deserialize, Serialize};

/// One crash, as written to its file and sent to the webhook.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CrashRecord {
    /// RFC 3339, UTC.
    pub time: String,
    /// What crashed: `tool:read_file`, `sub-agent`, `agent`, `main`, or a thread's name.
    pub component: String,
    pub message: String,
    /// `file:line:column` of the panic.
    pub location: Option<String>,
    pub backtrace: String,
    pub version: String,
    pub session_id: Option<String>,
}

/// A component's panic, caught.
#[derive(Debug, Clone, PartialEq)]
pub struct Crashed {
    pub message: String,
    /// Where the record was written, if it could be.
    pub record: Option<PathBuf>,
}

impl std::fmt::Display for Crashed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "it crashed ({})", self.message)?;
        if let Some(record) = &self.record {
            write!(f, "; a crash record was written to {}", record.display())?;
        }
        Ok(())
    }
}

#[derive(Debug, Clone)]
struct Scope {
    component: String,
    session_id: Option<String>,
}

tokio::task_local! {
    static SCOPE: Scope;
}

thread_local! {
    /// The record the last panic on this thread wrote, for the `within` that catches it.
    static LAST_HERE: RefCell<Option<PathBuf>> = const { RefCell::new(None) };
}

struct Settings {
    dir: Option<PathBuf>,
    webhook: Mutex<Option<String>>,
}

static SETTINGS: OnceLock<Settings> = OnceLock::new();
static CLEANUPS: Mutex<Vec<fn()>> = Mutex::new(Vec::new());
static LAST: Mutex<Option<PathBuf>> = Mutex::new(None);

/// The folder crash records go to, under a data directory.
pub fn crash_dir(data: &Path) -> PathBuf {
    data.join("crashes")
}

/// Installs the panic hook (once per process): records go under `data`'s `crashes` folder.
pub fn install(data: Option<&Path>) {
    let mut first = false;
    SETTINGS.get_or_init(|| {
        first = true;
        Settings {
            dir: data.map(crash_dir),
            webhook: Mutex::new(None),
        }
    });
    if first {
        std::panic::set_hook(Box::new(on_panic));
    }
}

/// Sends every later record to `url` too (the user's `crash_webhook`).
pub fn set_webhook(url: Option<String>) {
    if let Some(settings) = SETTINGS.get() {
        *settings
            .webhook
            .lock()
            .unwrap_or_else(PoisonError::into_inner) = url;
    }
}

/// Runs before anything is printed for a fatal panic; front ends restore the terminal here.
pub fn on_fatal(cleanup: fn()) {
    CLEANUPS
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .push(cleanup);
}

/// The record of the latest crash of this process, if any.
pub fn last_record() -> Option<PathBuf> {
    LAST.lock().unwrap_or_else(PoisonError::into_inner).clone()
}

/// Runs `future` as `component` (of `session_id`): a panic inside it is recorded and returned
/// as [`Crashed`] instead of unwinding further.
pub async fn within<F: Future>(
    component: impl Into<String>,
    session_id: Option<String>,
    future: F,
) -> Result<F::Output, Crashed> {
    let scope = Scope {
        component: component.into(),
        session_id,
    };
    match SCOPE
        .scope(scope, AssertUnwindSafe(future).catch_unwind())
        .await
    {
        Ok(output) => Ok(output),
        Err(payload) => Err(Crashed {
            message: payload_message(payload.as_ref()),
            record: LAST_HERE.with(|last| last.borrow_mut().take()),
        }),
    }
}

/// Runs a request someone waits on (a gateway client's, a chat's) as `component`: a panic
/// inside it is recorded and becomes the error answered, so the asker is told instead of being
/// left with no reply.
pub async fn answered<T>(
    component: impl Into<String>,
    future: impl Future<Output = Result<T, String>>,
) -> Result<T, String> {
    within(component, None, future)
        .await
        .unwrap_or_else(|crashed| Err(format!("mnemo failed inside: {crashed}")))
}

/// Runs `future` as `component` without catching a panic: one inside it is recorded under that
/// name and unwinds on (the caller sees the task end).
pub async fn scoped<F: Future>(
    component: impl Into<String>,
    session_id: Option<String>,
    future: F,
) -> F::Output {
    let scope = Scope {
        component: component.into(),
        session_id,
    };
    SCOPE.scope(scope, future).await
}

fn payload_message(payload: &(dyn std::any::Any + Send)) -> String {
    payload
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "a panic without a message".to_string())
}

fn on_panic(info: &std::panic::PanicHookInfo<'_>) {
    let scope = SCOPE.try_with(Scope::clone).ok();
    let thread = std::thread::current();
    let fatal = scope.is_none() && thread.name() == Some("main");
    if fatal {
        let cleanups = CLEANUPS.lock().map(|c| c.clone()).unwrap_or_default();
        for cleanup in cleanups {
            cleanup();
        }
    }
    let record = CrashRecord {
        time: chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Millis, true),
        component: match &scope {
            Some(scope) => scope.component.clone(),
            None => thread.name().unwrap_or("unnamed thread").to_string(),
        },
        message: payload_message(info.payload()),
        location: info.location().map(|l| l.to_string()),
        backtrace: std::backtrace::Backtrace::force_capture().to_string(),
        version: env!("CARGO_PKG_VERSION").to_string(),
        session_id: scope.and_then(|s| s.session_id),
    };
    let path = SETTINGS
        .get()
        .and_then(|s| s.dir.as_deref())
        .and_then(|dir| write(dir, &record).ok());
    if let Some(path) = &path {
        *LAST.lock().unwrap_or_else(PoisonError::into_inner) = Some(path.clone());
        LAST_HERE.with(|last| *last.borrow_mut() = Some(path.clone()));
    }
    let webhook = SETTINGS
        .get()
        .and_then(|s| s.webhook.lock().ok().and_then(|w| w.clone()));
    if let Some(url) = webhook {
        send(&url, &record);
    }
    if fatal {
        let at = record.location.as_deref().unwrap_or("an unknown place");
        eprintln!("mnemo crashed: {} (at {at})", record.message);
        match path {
            Some(path) => eprintln!(
                "A crash record was written to {}; please include it when you report this.",
                path.display()
            ),
            None => eprintln!("{}", record.backtrace),
        }
    }
}

/// Writes the record as `<time>-<component>.json`; the file is private to the user.
fn write(dir: &Path, record: &CrashRecord) -> std::io::Result<PathBuf> {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    std::fs::create_dir_all(dir)?;
    let component: String = record
        .component
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
        .collect();
    let stamp = record.time.replace([':', '.'], "-");
    let path = dir.join(format!("{stamp}-{component}-{}.json", std::process::id()));
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(&path)?;
    let text = serde_json::to_string_pretty(record).map_err(std::io::Error::other)?;
    file.write_all(text.as_bytes())?;
    Ok(path)
}

/// Posts the record to the webhook on a thread of its own (a panic may happen anywhere, even
/// inside the runtime), waiting at most a few seconds for it.
fn send(url: &str, record: &CrashRecord) {
    const WAIT: Duration = Duration::from_secs(3);
    let (url, body) = (url.to_string(), record.clone());
    let (done, finished) = std::sync::mpsc::channel();
    let spawned = std::thread::Builder::new()
        .name("mnemo-crash-report".into())
        .spawn(move || {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build();
            if let Ok(runtime) = runtime {
                runtime.block_on(async {
                    let client = reqwest::Client::new();
                    let _ = client.post(&url).json(&body).timeout(WAIT).send().await;
                });
            }
            let _ = done.send(());
        });
    if spawned.is_ok() {
        let _ = finished.recv_timeout(WAIT);
    }
}

/// The newest records in `dir`, newest first, at most `limit`.
pub fn recent(dir: &Path, limit: usize) -> Vec<(PathBuf, CrashRecord)> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut records: Vec<(PathBuf, CrashRecord)> = entries
        .flatten()
        .map(|entry| entry.path())
        .filter(|path| path.extension().is_some_and(|e| e == "json"))
        .filter_map(|path| {
            let text = std::fs::read_to_string(&path).ok()?;
            let record: CrashRecord = serde_json::from_str(&text).ok()?;
            Some((path, record))
        })
        .collect();
    records.sort_by(|a, b| b.1.time.cmp(&a.1.time));
    records.truncate(limit);
    records
}

#[cfg(test)]
mod tests {
    // Beside the code, not in tests/crash.rs: a panic here must not race the records that
    // binary's tests check.
    #[tokio::test]
    async fn a_request_that_panics_is_answered_with_an_error() {
        let answer: Result<u32, String> = super::answered("gateway:test", async {
            let empty: Vec<u32> = Vec::new();
            Ok(empty[1])
        })
        .await;
        let error = answer.err().unwrap_or_default();
        assert!(error.contains("mnemo failed inside"), "{error}");
        assert!(error.contains("index out of bounds"), "{error}");
    }
}
