//! Runs the real `mnemo` binary in a temporary workspace, with its own config and data
//! directories and no keys in its environment.

// Each test binary uses a different part of this module.
#![allow(dead_code)]

use std::io::Write;
use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use mnemo::llm::{ContentBlock, Message};
use mnemo::memory::{Db, NewArchiveEntry, NewSession};

pub struct Workspace {
    dir: tempfile::TempDir,
}

impl Workspace {
    pub fn new() -> Self {
        Self {
            dir: tempfile::tempdir().unwrap_or_else(|e| panic!("{e}")),
        }
    }

    pub fn path(&self) -> &Path {
        self.dir.path()
    }

    pub fn write(&self, name: &str, text: &str) {
        std::fs::write(self.path().join(name), text).unwrap_or_else(|e| panic!("{e}"));
    }

    pub fn read(&self, name: &str) -> String {
        std::fs::read_to_string(self.path().join(name)).unwrap_or_else(|e| panic!("{e}"))
    }

    pub fn script(&self, script: serde_json::Value) -> String {
        let path = self.path().join(".script.json");
        std::fs::write(&path, script.to_string()).unwrap_or_else(|e| panic!("{e}"));
        format!("scripted:{}", path.display())
    }

    /// Runs mnemo in the workspace with an empty environment of keys and config.
    pub fn mnemo(&self, args: &[&str], stdin: Option<&str>) -> Output {
        self.mnemo_with(args, stdin, &[])
    }

    /// The command [`Workspace::mnemo`] runs, for a process the test starts and stops.
    pub fn command(&self, args: &[&str]) -> Command {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_mnemo"));
        cmd.args(args)
            .current_dir(self.path())
            .env("MNEMO_CONFIG_DIR", self.path().join(".cfg"))
            .env("MNEMO_DATA_DIR", self.path().join(".data"))
            .env_remove("ANTHROPIC_API_KEY")
            .env_remove("OPENAI_API_KEY")
            .env_remove("MNEMO_MODEL")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        cmd
    }

    /// Like [`Workspace::mnemo`], with `env` added to its environment.
    pub fn mnemo_with(&self, args: &[&str], stdin: Option<&str>, env: &[(&str, &str)]) -> Output {
        let mut cmd = self.command(args);
        cmd.stdin(Stdio::piped()).envs(env.iter().copied());
        let mut child = cmd.spawn().unwrap_or_else(|e| panic!("{e}"));
        if let Some(mut pipe) = child.stdin.take()
            && let Some(text) = stdin
        {
            pipe.write_all(text.as_bytes())
                .unwrap_or_else(|e| panic!("{e}"));
        }
        child.wait_with_output().unwrap_or_else(|e| panic!("{e}"))
    }
}

/// Runs `mnemo ARGS` with the in-test servers' key in `LLM_KEY`, on a blocking thread so
/// those servers keep serving meanwhile.
pub async fn mnemo_with_key(
    ws: &std::sync::Arc<Workspace>,
    args: Vec<String>,
) -> Result<Output, tokio::task::JoinError> {
    let ws = ws.clone();
    tokio::task::spawn_blocking(move || {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        ws.mnemo_with(&args, None, &[("LLM_KEY", "k")])
    })
    .await
}

pub fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// Waits (within a limit) until `ready` holds.
pub fn wait_for(what: &str, mut ready: impl FnMut() -> bool) -> Result<(), String> {
    let deadline = Instant::now() + Duration::from_secs(20);
    while !ready() {
        if Instant::now() > deadline {
            return Err(format!("timed out waiting for {what}"));
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    Ok(())
}

/// A session `id` in `cwd` in the database at `db_path`.
pub fn with_session(
    db_path: &Path,
    cwd: &Path,
    id: &str,
) -> Result<Db, Box<dyn std::error::Error>> {
    let mut db = Db::open(db_path)?;
    db.create_session(NewSession {
        id: id.into(),
        parent_id: None,
        cwd: cwd.display().to_string(),
        model: "m".into(),
        title: String::new(),
    })?;
    Ok(db)
}

/// An archive entry of its own session `id` in `cwd`, saying `said`.
pub fn archive_note(
    db_path: &Path,
    cwd: &Path,
    id: &str,
    said: &str,
) -> Result<(), Box<dyn std::error::Error>> {
    let mut db = with_session(db_path, cwd, id)?;
    let messages = vec![
        Message::user_text(format!("Note for later: {said}")),
        Message::assistant(vec![ContentBlock::Text {
            text: "Noted.".into(),
        }]),
    ];
    let (topic, summary) = mnemo::memory::mechanical_summary(&messages);
    db.archive_messages(NewArchiveEntry {
        session_id: id.into(),
        topic: topic.unwrap_or_default(),
        summary,
        token_count: 20,
        importance: 0.5,
        first_seq: 0,
        last_seq: 1,
        started_at: 1,
        ended_at: 2,
        messages,
    })?;
    Ok(())
}
