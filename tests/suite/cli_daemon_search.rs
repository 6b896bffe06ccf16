//! `mnemo memory search` with `mnemo serve` running on the same data directory: the daemon,
//! whose model stays loaded, answers by meaning with exactly what the command prints
//! without it; a daemon that does not answer (hung, stopped, without `search`) costs a bounded
//! wait and the search is made in-process.

use crate::cli_support;
use crate::embed_support;

use std::time::{Duration, Instant};

use cli_support::{Workspace, archive_note, text, wait_for};
use mnemo::gateway::search::{SearchAsk, ask_daemon};

type TestResult = Result<(), Box<dyn std::error::Error>>;

/// A `mnemo serve` this test started; continued and stopped however the test ends.
struct Daemon(std::process::Child);

impl Daemon {
    fn signal(&self, signal: libc::c_int) -> TestResult {
        let pid = libc::pid_t::try_from(self.0.id())?;
        // SAFETY: signals a child this test started.
        match unsafe { libc::kill(pid, signal) } {
            0 => Ok(()),
            _ => Err(std::io::Error::last_os_error().into()),
        }
    }
}

impl Drop for Daemon {
    fn drop(&mut self) {
        let _ = self.signal(libc::SIGCONT);
        let _ = self.signal(libc::SIGTERM);
        let _ = self.0.wait();
    }
}

/// Shares no word with the staging note: only meaning finds it.
const PARAPHRASE: &str = "what number does the preprod DB accept connections on";

#[test]
fn the_daemon_answers_by_meaning_with_what_the_command_prints_alone() -> TestResult {
    let model = embed_support::model_dir()?;
    let ws = Workspace::new();
    let data = ws.path().join(".data");
    let db = data.join("mnemo.db");
    let notes = [
        "The staging database listens on port 6543, not the default.",
        "Sort the list of contributors alphabetically by family name.",
        "Our invoices are generated every night by a cron job on the billing host.",
    ];
    for (i, said) in notes.iter().enumerate() {
        archive_note(&db, ws.path(), &format!("s{i}"), said)?;
    }
    let search = |args: &[&str]| {
        let mut all = vec!["memory", "search"];
        all.extend_from_slice(args);
        let out = ws.mnemo(&all, None);
        assert!(out.status.success(), "{}", text(&out.stderr));
        text(&out.stdout)
    };
    let by_keyword = search(&[PARAPHRASE]);
    assert!(
        by_keyword.contains("meaning search is off") && !by_keyword.contains("6543"),
        "keywords alone miss it: {by_keyword}"
    );
    mnemo::memory::local_embed::install_from(&model, &data.join("models/all-MiniLM-L6-v2"))?;
    let reindexed = ws.mnemo(&["memory", "reindex"], None);
    assert!(reindexed.status.success(), "{}", text(&reindexed.stderr));

    let asked: [&[&str]; 3] = [
        &[PARAPHRASE],
        &["--here", "--limit", "2", PARAPHRASE],
        &["billing", "cron"],
    ];
    let alone: Vec<String> = asked.iter().map(|args| search(args)).collect();
    let first = alone[0].lines().take(2).collect::<Vec<_>>().join("\n");
    assert!(first.contains("6543"), "found by meaning: {}", alone[0]);

    let script = ws.script(serde_json::json!({"turns": []}));
    let daemon = Daemon(ws.command(&["--model", &script, "serve"]).spawn()?);
    wait_for("the gateway socket", || data.join("gateway.sock").exists())?;
    let served: Vec<String> = asked.iter().map(|args| search(args)).collect();
    assert_eq!(served, alone, "the same output through the daemon");
    let log = std::fs::read_to_string(data.join("serve.log"))?;
    assert!(
        log.contains("searching by meaning with local:all-MiniLM-L6-v2"),
        "the daemon answered, with its own model: {log}"
    );

    // A hung daemon: the connection is accepted and nothing answers.
    daemon.signal(libc::SIGSTOP)?;
    let started = Instant::now();
    let hung = search(&[PARAPHRASE]);
    daemon.signal(libc::SIGCONT)?;
    assert_eq!(hung, alone[0]);
    // Not the minute a reply may take once connected.
    assert!(started.elapsed() < Duration::from_secs(8), "a bounded wait");
    drop(daemon);
    assert_eq!(search(&[PARAPHRASE]), alone[0], "and without a daemon");
    Ok(())
}

/// A daemon that holds the lock but cannot answer a search: one that never says hello, and
/// one whose gateway has no `search`, as an older one answers.
#[tokio::test]
async fn a_daemon_that_cannot_answer_leaves_the_search_to_the_caller() -> TestResult {
    let dir = tempfile::tempdir()?;
    let data = dir.path().join("data");
    std::fs::create_dir_all(&data)?;
    let ask = SearchAsk {
        query: "anything".into(),
        limit: 10,
        workspace: None,
        database: None,
        model: None,
        except_session: None,
    };
    let started = Instant::now();
    assert!(ask_daemon(&data, &ask).await.is_none(), "none runs");
    assert!(started.elapsed() < Duration::from_millis(50));

    let _lock = mnemo::host::daemon::ServeLock::acquire(&data)?;
    let socket = mnemo::gateway::client::default_socket(&data);
    let silent = tokio::net::UnixListener::bind(&socket)?;
    let accepted = tokio::spawn(async move { silent.accept().await.map(|(stream, _)| stream) });
    std::fs::write(data.join("gateway-token"), "t")?;
    let started = Instant::now();
    assert!(ask_daemon(&data, &ask).await.is_none(), "a silent daemon");
    assert!(
        started.elapsed() < Duration::from_secs(2),
        "{:?}",
        started.elapsed()
    );
    drop(accepted.await?);
    std::fs::remove_file(&socket)?;

    let cfg = dir.path().join("cfg");
    std::fs::create_dir_all(&cfg)?;
    let dirs = mnemo::config::Dirs {
        config: Some(cfg),
        data: Some(data.clone()),
    };
    let loaded = mnemo::host::load_config_from(&dirs, dir.path(), &Default::default())?;
    let cancel = tokio_util::sync::CancellationToken::new();
    let options = mnemo::gateway::GatewayOptions {
        listen: vec![mnemo::gateway::Listen::Unix(socket)],
        ..Default::default()
    };
    let _running = mnemo::gateway::start(
        mnemo::host::SessionHost::new(),
        std::sync::Arc::new(loaded),
        Default::default(),
        &options,
        cancel.clone(),
    )
    .await?;
    assert!(
        ask_daemon(&data, &ask).await.is_none(),
        "a gateway without searches"
    );
    cancel.cancel();
    Ok(())
}
