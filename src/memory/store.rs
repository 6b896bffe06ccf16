//! The one owner of the database. rusqlite is synchronous, so a dedicated thread holds the
//! `Db` and runs jobs in the order they arrive; async code awaits the answer on a oneshot and
//! never blocks the runtime. Cloned handles share the thread, which ends (closing the
//! database) when the last handle is dropped.

use std::panic::AssertUnwindSafe;
use std::path::Path;

use tokio::sync::{mpsc, oneshot};

use super::db::Db;
use super::error::StoreError;

/// Jobs waiting for the thread; senders wait when it is full.
const QUEUE: usize = 256;

type Job = Box<dyn FnOnce(&mut Db) + Send>;

#[derive(Clone)]
pub struct Store {
    jobs: mpsc::Sender<Job>,
}

impl Store {
    pub fn open(path: &Path) -> Result<Store, StoreError> {
        Store::spawn(Db::open(path)?)
    }

    pub fn open_in_memory() -> Result<Store, StoreError> {
        Store::spawn(Db::open_in_memory()?)
    }

    /// Moves `db` to a new store thread.
    pub fn spawn(db: Db) -> Result<Store, StoreError> {
        let (jobs, mut queue) = mpsc::channel::<Job>(QUEUE);
        std::thread::Builder::new()
            .name("mnemo-store".to_owned())
            .spawn(move || {
                let mut db = db;
                while let Some(job) = queue.blocking_recv() {
                    // A panicking job drops its answer channel, so its caller sees `Closed`;
                    // the thread and the other callers carry on (an open transaction was
                    // rolled back while unwinding).
                    let _panicked = std::panic::catch_unwind(AssertUnwindSafe(|| job(&mut db)));
                }
            })
            .map_err(StoreError::Thread)?;
        Ok(Store { jobs })
    }

    /// Whether `other` is a handle on the same store thread.
    pub fn same_store(&self, other: &Store) -> bool {
        self.jobs.same_channel(&other.jobs)
    }

    /// Runs `job` on the store thread without waiting for it (releases from `Drop`); dropped
    /// when the queue is full, so only for what is safe to lose.
    pub fn call_detached(&self, job: impl FnOnce(&mut Db) + Send + 'static) {
        let _ = self.jobs.try_send(Box::new(job));
    }

    /// Runs `job` on the store thread and returns its answer.
    pub async fn call<R, F>(&self, job: F) -> Result<R, StoreError>
    where
        R: Send + 'static,
        F: FnOnce(&mut Db) -> Result<R, StoreError> + Send + 'static,
    {
        let (job, answer) = with_answer(job);
        self.jobs.send(job).await.map_err(|_| StoreError::Closed)?;
        answer.await.map_err(|_| StoreError::Closed)?
    }

    /// `call` for code outside an async runtime (CLI commands). Panics if called from
    /// inside a runtime, like every blocking tokio channel operation.
    pub fn call_blocking<R, F>(&self, job: F) -> Result<R, StoreError>
    where
        R: Send + 'static,
        F: FnOnce(&mut Db) -> Result<R, StoreError> + Send + 'static,
    {
        let (job, answer) = with_answer(job);
        self.jobs
            .blocking_send(job)
            .map_err(|_| StoreError::Closed)?;
        answer.blocking_recv().map_err(|_| StoreError::Closed)?
    }
}

type Answer<R> = oneshot::Receiver<Result<R, StoreError>>;

fn with_answer<R, F>(job: F) -> (Job, Answer<R>)
where
    R: Send + 'static,
    F: FnOnce(&mut Db) -> Result<R, StoreError> + Send + 'static,
{
    let (reply, answer) = oneshot::channel();
    let job: Job = Box::new(move |db| {
        // The caller may have stopped waiting; the job's writes stand either way.
        let _ignored = reply.send(job(db));
    });
    (job, answer)
}

#[cfg(test)]
mod tests {
    use std::time::{Duration, Instant};

    use super::*;
    use crate::llm::Message;
    use crate::memory::test_support::new_session;

    type TestResult = Result<(), Box<dyn std::error::Error>>;

    #[tokio::test]
    async fn async_calls_from_clones_run_in_submission_order_on_the_store_thread() -> TestResult {
        let store = Store::open_in_memory()?;
        store
            .call(|db| db.create_session(new_session("s1", "/w")))
            .await?;
        let calls = (1..=20).map(|seq: i64| {
            let handle = store.clone();
            async move {
                handle
                    .call(move |db| {
                        let order = db.kv_get("order")?.unwrap_or_default();
                        db.kv_set("order", &format!("{order}{seq},"))?;
                        let message = Message::user_text(format!("m{seq}"));
                        db.append_messages("s1", &[(seq, &message, 1)])
                    })
                    .await
            }
        });
        for result in futures_util::future::join_all(calls).await {
            result?;
        }
        let expected: String = (1..=20).map(|seq| format!("{seq},")).collect();
        assert_eq!(store.call(|db| db.kv_get("order")).await?, Some(expected));
        assert_eq!(store.call(|db| db.max_seq("s1")).await?, Some(20));
        let thread = store
            .call(|_db| Ok(std::thread::current().name().map(str::to_owned)))
            .await?;
        assert_eq!(thread.as_deref(), Some("mnemo-store"));
        let err = store.call(|db| db.session("nope-nope")).await;
        assert!(matches!(err, Err(StoreError::NotFound { .. })));
        Ok(())
    }

    #[test]
    fn blocking_calls_work_outside_a_runtime_and_survive_a_panicking_job() -> TestResult {
        let store = Store::open_in_memory()?;
        store.call_blocking(|db| db.kv_set("k", "v"))?;
        let panicked = store.call_blocking(|_db| -> Result<(), StoreError> { panic!("boom") });
        assert!(matches!(panicked, Err(StoreError::Closed)));
        assert_eq!(
            store.call_blocking(|db| db.kv_get("k"))?.as_deref(),
            Some("v")
        );
        Ok(())
    }

    #[test]
    fn dropping_the_last_handle_closes_the_database() -> TestResult {
        let dir = tempfile::tempdir()?;
        let path = dir.path().join("store.db");
        let wal = dir.path().join("store.db-wal");
        let store = Store::open(&path)?;
        let other = store.clone();
        store.call_blocking(|db| db.kv_set("k", "v"))?;
        drop(store);
        other.call_blocking(|db| db.kv_set("k", "w"))?;
        assert!(wal.exists());
        drop(other);
        // Closing the last connection checkpoints and removes the WAL file.
        let deadline = Instant::now() + Duration::from_secs(5);
        while wal.exists() && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(10));
        }
        assert!(!wal.exists(), "the store thread kept the database open");
        assert_eq!(Db::open(&path)?.kv_get("k")?.as_deref(), Some("w"));
        Ok(())
    }
}
