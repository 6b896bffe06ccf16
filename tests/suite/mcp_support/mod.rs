//! Real MCP servers for the tests: `@modelcontextprotocol/server-everything` and
//! `@modelcontextprotocol/server-filesystem` from npm, installed once into `target/npm-mcp/`
//! (a lock file keeps parallel tests and test binaries from installing at the same time).

#![allow(dead_code)]

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;
use std::time::Duration;

use mnemo::mcp::{Backoff, McpManager, McpServerConfig, McpServerEntry, McpSettings};

pub const EVERYTHING: &str = "@modelcontextprotocol/server-everything@2026.8.31";
pub const FILESYSTEM: &str = "@modelcontextprotocol/server-filesystem@2026.8.31";

pub type TestResult = Result<(), Box<dyn std::error::Error>>;

/// `target/npm-mcp`, with both servers installed; an error says what is missing.
pub fn npm_cache() -> Result<PathBuf, String> {
    static INSTALLED: OnceLock<Result<PathBuf, String>> = OnceLock::new();
    INSTALLED.get_or_init(install).clone()
}

fn install() -> Result<PathBuf, String> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("target/npm-mcp");
    let ready = |root: &Path| {
        ["server-everything", "server-filesystem"].iter().all(|p| {
            root.join("node_modules/@modelcontextprotocol")
                .join(p)
                .join("package.json")
                .is_file()
        })
    };
    if ready(&root) {
        return Ok(root);
    }
    std::fs::create_dir_all(&root).map_err(|e| format!("cannot create {}: {e}", root.display()))?;
    let lock = std::fs::File::create(root.join("install.lock"))
        .map_err(|e| format!("cannot create the install lock: {e}"))?;
    // SAFETY: flock on a file descriptor we own; it is released when `lock` is closed.
    let locked = unsafe {
        use std::os::fd::AsRawFd;
        libc::flock(lock.as_raw_fd(), libc::LOCK_EX)
    };
    if locked != 0 {
        return Err("cannot lock target/npm-mcp/install.lock".to_string());
    }
    if ready(&root) {
        return Ok(root);
    }
    for tool in ["node", "npm"] {
        let found = Command::new(tool)
            .arg("--version")
            .output()
            .is_ok_and(|o| o.status.success());
        if !found {
            return Err(format!(
                "the MCP tests run real servers from npm and need `{tool}`: install Node.js 18 \
                 or newer (with npm) and run the tests again"
            ));
        }
    }
    let output = Command::new("npm")
        .args(["install", "--no-audit", "--no-fund", "--prefix"])
        .arg(&root)
        .args([EVERYTHING, FILESYSTEM])
        .output()
        .map_err(|e| format!("cannot run npm: {e}"))?;
    if !output.status.success() || !ready(&root) {
        return Err(format!(
            "npm install of the MCP test servers failed: {}",
            String::from_utf8_lossy(&output.stderr)
        ));
    }
    Ok(root)
}

pub fn script(package: &str) -> Result<PathBuf, String> {
    Ok(npm_cache()?
        .join("node_modules/@modelcontextprotocol")
        .join(package)
        .join("dist/index.js"))
}

/// server-everything over stdio.
pub fn everything() -> Result<McpServerConfig, String> {
    Ok(McpServerConfig {
        command: Some("node".to_string()),
        args: vec![
            script("server-everything")?.display().to_string(),
            "stdio".into(),
        ],
        startup_timeout_secs: 60,
        ..Default::default()
    })
}

/// server-filesystem allowed to see `dir`.
pub fn filesystem(dir: &Path) -> Result<McpServerConfig, String> {
    Ok(McpServerConfig {
        command: Some("node".to_string()),
        args: vec![
            script("server-filesystem")?.display().to_string(),
            dir.display().to_string(),
        ],
        startup_timeout_secs: 60,
        ..Default::default()
    })
}

/// A manager for these servers, logging into `logs`.
pub fn manager(servers: Vec<(&str, McpServerConfig)>, logs: &Path) -> McpManager {
    let servers: BTreeMap<String, McpServerEntry> = servers
        .into_iter()
        .map(|(name, config)| (name.to_string(), McpServerEntry::Valid(config)))
        .collect();
    McpManager::start(McpSettings {
        servers,
        log_dir: logs.to_path_buf(),
        backoff: Backoff {
            first: Duration::from_millis(200),
            max: Duration::from_secs(2),
            give_up_after: 3,
        },
        ..Default::default()
    })
}

/// Waits for every server to leave `starting`.
pub async fn ready(manager: &McpManager) {
    manager
        .wait_ready(tokio::time::Instant::now() + Duration::from_secs(90))
        .await;
}

/// A server on the official TypeScript SDK whose `add-tool` registers `extra-tool`.
pub fn dynamic() -> Result<McpServerConfig, String> {
    let sdk = npm_cache()?.join("node_modules/@modelcontextprotocol/sdk/dist/esm");
    let script =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/mcp/dynamic-server.mjs");
    Ok(McpServerConfig {
        command: Some("node".to_string()),
        args: vec![script.display().to_string(), sdk.display().to_string()],
        startup_timeout_secs: 60,
        ..Default::default()
    })
}
