//! The daemon's real runner and book: a job runs as a stored headless session on the scripted
//! provider, an approval question in it is a denial the model is told about (on a paused
//! clock), and heartbeat files (good, broken, untrusted) run or are reported through the
//! scheduler. That last test waits for the log on the real clock: while the store's own thread
//! answers, a paused clock would jump ahead to the test's deadline.

use crate::jobs_support;

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use chrono::Utc;
use jobs_support::SharedBuffer;
use mnemo::config::Dirs;
use mnemo::jobs::book::StoreBook;
use mnemo::jobs::delivery::{Channel, Log};
use mnemo::jobs::job::{Job, RunOutcome, Source};
use mnemo::jobs::plan::{Rule, Timing};
use mnemo::jobs::scheduler::{JobRunner, Scheduler};
use mnemo::jobs::timing::Zone;
use mnemo::memory::Store;
use mnemo::serve::runner::HeadlessRunner;
use serde_json::json;
use tokio_util::sync::CancellationToken;

type TestResult = Result<(), Box<dyn std::error::Error>>;

struct Fixture {
    _root: tempfile::TempDir,
    root: PathBuf,
    dirs: Dirs,
    workspace: PathBuf,
}

fn fixture() -> Result<Fixture, Box<dyn std::error::Error>> {
    let dir = tempfile::tempdir()?;
    let root = dir.path().canonicalize()?;
    let workspace = root.join("ws");
    std::fs::create_dir_all(&workspace)?;
    Ok(Fixture {
        dirs: Dirs {
            config: Some(root.join("cfg")),
            data: Some(root.join("data")),
        },
        workspace,
        root,
        _root: dir,
    })
}

fn script(dir: &Path, name: &str, turns: serde_json::Value) -> Result<String, std::io::Error> {
    let path = dir.join(format!("{name}.json"));
    std::fs::write(&path, json!({ "turns": turns }).to_string())?;
    Ok(format!("scripted:{}", path.display()))
}

fn store(fx: &Fixture) -> Result<Store, Box<dyn std::error::Error>> {
    let data = fx.dirs.data.clone().ok_or("no data dir")?;
    Ok(Store::open(&data.join("mnemo.db"))?)
}

#[tokio::test(start_paused = true)]
async fn a_heartbeat_that_needs_approval_is_denied_and_the_model_told_why() -> TestResult {
    let fx = fixture()?;
    let model = script(
        &fx.root,
        "site",
        json!([
            {"tool_calls": [{"name": "shell", "arguments":
                {"command": "curl -s https://example.com", "escalation": "network"}}]},
            {"text": "Could not check the site: reaching the network needs approval."}
        ]),
    )?;
    let job = Job {
        key: "heartbeat:site".into(),
        label: "heartbeat site".into(),
        source: Source::Heartbeat(fx.root.join("site.md")),
        timing: Timing {
            rule: Rule::Every {
                every: Duration::from_secs(3600),
                first: None,
            },
            hours: None,
            zone: Zone::utc(),
        },
        since: Utc::now(),
        workspace: fx.workspace.clone(),
        model: Some(model),
        prompt: "Is https://example.com up?".into(),
        deliver: vec![Channel::Log],
        rights: None,
    };
    let runner = HeadlessRunner::new(
        fx.dirs.clone(),
        Default::default(),
        mnemo::host::SessionHost::new(),
    );
    let outcome = runner.run(job, CancellationToken::new()).await;
    let RunOutcome::Replied { session_id, text } = outcome else {
        return Err(format!("the run did not finish with a reply: {outcome:?}").into());
    };
    assert!(text.starts_with("Could not check the site"), "{text}");
    let store = store(&fx)?;
    let id = session_id.clone();
    let (session, messages) = store
        .call(move |db| Ok((db.session(&id)?, db.active_messages(&id)?)))
        .await?;
    assert_eq!(session.title, "heartbeat site");
    let history = serde_json::to_string(&messages.iter().map(|m| &m.message).collect::<Vec<_>>())?;
    assert!(
        history.contains("nobody is there to answer (heartbeat site runs in mnemo serve"),
        "{history}"
    );
    assert!(history.contains("was denied"), "{history}");
    Ok(())
}

fn heartbeat(model: &str, workspace: &Path, extra: &str) -> String {
    format!(
        "---\nevery: 1h\nworkspace: {}\nmodel: {model}\n{extra}---\n- [ ] anything to report?\n",
        workspace.display()
    )
}

#[tokio::test]
async fn heartbeat_files_run_through_the_scheduler_and_only_reports_are_delivered() -> TestResult {
    let fx = fixture()?;
    let beats = fx
        .dirs
        .config
        .clone()
        .ok_or("no config dir")?
        .join("heartbeat");
    std::fs::create_dir_all(&beats)?;
    let quiet = script(&fx.root, "quiet", json!([{"text": "HEARTBEAT_OK"}]))?;
    let disk = script(&fx.root, "disk", json!([{"text": "disk 91% full"}]))?;
    std::fs::write(beats.join("quiet.md"), heartbeat(&quiet, &fx.workspace, ""))?;
    std::fs::write(beats.join("disk.md"), heartbeat(&disk, &fx.workspace, ""))?;
    let off = heartbeat(&disk, &fx.workspace, "enabled: false\n");
    std::fs::write(beats.join("off.md"), off)?;
    std::fs::write(
        beats.join("broken.md"),
        "---\nevery: 1h\ncron: 0 9 * * *\n---\nx\n",
    )?;
    let own = fx.workspace.join(".mnemo").join("heartbeat");
    std::fs::create_dir_all(&own)?;
    std::fs::write(own.join("local.md"), "---\nevery: 1m\n---\nrun me\n")?;

    let buffer = SharedBuffer::default();
    let log = Arc::new(Log::new(buffer.clone()));
    let store = store(&fx)?;
    let workspaces = vec![fx.workspace.clone()];
    // A heartbeat's first run comes one interval after it is seen: these last ran an hour ago.
    let hour_ago = chrono::Utc::now().timestamp_millis() - 3_600_000;
    for name in ["quiet", "disk"] {
        let key = format!("heartbeat:{}", beats.join(format!("{name}.md")).display());
        store
            .call(move |db| {
                db.claim_job_run(&key, None, (None, None), hour_ago, 1)?;
                db.job_finished(&key, "quiet", None)
            })
            .await?;
    }
    let book = StoreBook::new(store.clone(), fx.dirs.clone(), workspaces, log.clone());
    let runner = HeadlessRunner::new(
        fx.dirs.clone(),
        Default::default(),
        mnemo::host::SessionHost::new(),
    );
    let cancel = CancellationToken::new();
    let task = tokio::spawn(Scheduler::new(runner, book, log).run(cancel.clone()));
    let deadline = tokio::time::Instant::now() + Duration::from_secs(60);
    let done =
        |text: &str| text.contains("quiet: nothing to report") && text.contains("disk: reported");
    while !done(&buffer.text()) && tokio::time::Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    cancel.cancel();
    task.await?;
    let text = buffer.text();
    assert!(done(&text), "{text}");
    assert!(text.contains("── heartbeat disk (session "), "{text}");
    assert!(text.contains("──\ndisk 91% full"), "{text}");
    assert!(!text.contains("── heartbeat quiet"), "{text}");
    assert!(!text.contains("heartbeat off"), "{text}");
    assert!(
        text.contains("broken.md: give either `every` or `cron`, not both"),
        "{text}"
    );
    assert!(
        text.contains(&format!(
            "heartbeats of {} do not run: the workspace is not trusted",
            fx.workspace.display()
        )),
        "{text}"
    );
    let runs = store.call(|db| db.job_runs()).await?;
    let statuses: Vec<(bool, Option<&str>)> = runs
        .iter()
        .map(|r| (r.running.is_some(), r.last_status.as_deref()))
        .collect();
    assert_eq!(
        statuses,
        [(false, Some("reported")), (false, Some("quiet"))]
    );
    Ok(())
}
