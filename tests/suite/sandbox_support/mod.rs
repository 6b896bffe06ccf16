//! The fixture and helpers of the real-bubblewrap tests: a workspace with a scratch directory
//! under one temporary directory, tool calls in it, and finding processes left behind.

// Each test binary uses a different part of this module.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use mnemo::sandbox::{Sandbox, SandboxConfig, SandboxPolicy};
use mnemo::tools::shell::Shell;
use mnemo::tools::{Approvals, Tool, ToolContext, ToolError};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

pub type TestResult = Result<(), Box<dyn std::error::Error>>;

/// A workspace and a scratch directory under one temporary directory (itself under `/tmp`,
/// which the sandbox replaces: the binds must still show them).
pub struct Fixture {
    pub dir: tempfile::TempDir,
    pub ws: PathBuf,
}

impl Fixture {
    pub fn new() -> std::io::Result<Self> {
        let dir = tempfile::tempdir()?;
        let ws = dir.path().canonicalize()?.join("ws");
        std::fs::create_dir(&ws)?;
        Ok(Self { dir, ws })
    }

    pub fn sandbox(&self, policy: SandboxPolicy, network: bool) -> Result<Sandbox, String> {
        let config = SandboxConfig { policy, network };
        let scratch = self.dir.path().join("scratch");
        Sandbox::new(config, &self.ws, &scratch).map_err(|e| e.to_string())
    }

    pub fn shell(&self, policy: SandboxPolicy, network: bool) -> Result<Shell, String> {
        self.sandbox(policy, network).map(Shell::in_sandbox)
    }
}

pub fn context(ws: &Path, session: &str) -> ToolContext {
    context_with(ws, session, mnemo::tools::approvals::detached())
}

pub fn context_with(ws: &Path, session: &str, approvals: Arc<Approvals>) -> ToolContext {
    let timeout = Duration::from_secs(30);
    ToolContext::new(
        ws.to_path_buf(),
        session,
        "call",
        CancellationToken::new(),
        timeout,
        None,
        approvals,
    )
}

pub async fn call(tool: &dyn Tool, ws: &Path, input: Value) -> Result<String, ToolError> {
    tool.call(input, &context(ws, "sandbox-test")).await
}

pub async fn run(tool: &dyn Tool, ws: &Path, command: &str) -> Result<String, ToolError> {
    call(tool, ws, json!({ "command": command })).await
}

/// The message of a failed command; a success fails the test.
pub fn failure(result: Result<String, ToolError>) -> String {
    match result {
        Ok(output) => panic!("expected the command to fail, got {output:?}"),
        Err(e) => e.to_string(),
    }
}

/// Whether a process with `sleep <marker>` on its command line is still running (zombies
/// waiting for their reaper do not count).
pub fn sleeper_alive(marker: &str) -> bool {
    let needle = format!("sleep\0{marker}\0");
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return false;
    };
    entries.flatten().any(|entry| {
        let dir = entry.path();
        let cmdline = std::fs::read(dir.join("cmdline")).unwrap_or_default();
        let stat = std::fs::read_to_string(dir.join("stat")).unwrap_or_default();
        let zombie = stat
            .rsplit(')')
            .next()
            .is_some_and(|s| s.trim().starts_with('Z'));
        !zombie
            && cmdline
                .windows(needle.len())
                .any(|w| w == needle.as_bytes())
    })
}

pub async fn wait_until_gone(marker: &str) -> bool {
    for _ in 0..60 {
        if !sleeper_alive(marker) {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    false
}

/// A `sleep` duration no other test uses, to find the process on the host.
pub fn marker(salt: u32) -> String {
    format!("{}.{}", 600 + salt, std::process::id())
}

/// A host directory the sandbox sees as it is (it puts its own /tmp over the host's): the
/// build's temp dir, or /var/tmp when the checkout itself lives under /tmp.
pub fn host_dir() -> std::io::Result<tempfile::TempDir> {
    let target = std::path::Path::new(env!("CARGO_TARGET_TMPDIR"));
    match target.starts_with("/tmp") {
        true => tempfile::tempdir_in("/var/tmp"),
        false => tempfile::tempdir_in(target),
    }
}
