//! One live connection to a server: a child process spoken to over stdio, or a streamable
//! HTTP endpoint. The child gets a scrubbed environment (the sandbox's allow-list plus the
//! entry's own `env`), its own process group (so the whole tree dies with it), and its stderr
//! appended to `<log dir>/mcp-<server>.log`.

use std::ffi::OsString;
use std::path::Path;
use std::process::Stdio;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use rmcp::model::{ClientCapabilities, ClientConfig, Implementation};
use rmcp::service::{NotificationContext, RunningService};
use rmcp::{ClientHandler, Peer, RoleClient, ServiceExt};
use tokio::process::{Child, Command};
use tokio::sync::{Notify, watch};

use super::config::Transport;
use super::oversize::LineWatch;
use crate::sandbox::env_allow::EnvPolicy;

pub(crate) type Service = RunningService<RoleClient, Handler>;

/// Receives the server's notifications.
pub(crate) struct Handler {
    tools_changed: Arc<ListChanges>,
}

/// The server's announcements that its tools changed, counted, and how many of them a new
/// listing has answered: a step that follows a call can wait for the list the call changed.
#[derive(Default)]
pub(crate) struct ListChanges {
    notify: Notify,
    announced: AtomicU64,
    listed: AtomicU64,
}

impl ListChanges {
    fn announce(&self) {
        self.announced.fetch_add(1, Ordering::SeqCst);
        self.notify.notify_one();
    }

    /// Waits for an announcement; returns how many there have been.
    pub(crate) async fn next(&self) -> u64 {
        self.notify.notified().await;
        self.announced.load(Ordering::SeqCst)
    }

    /// A listing answered the first `count` announcements.
    pub(crate) fn listed(&self, count: u64) {
        self.listed.fetch_max(count, Ordering::SeqCst);
    }

    /// Whether an announcement waits for its listing.
    pub(crate) fn pending(&self) -> bool {
        self.announced.load(Ordering::SeqCst) > self.listed.load(Ordering::SeqCst)
    }
}

impl ClientHandler for Handler {
    fn get_info(&self) -> ClientConfig {
        ClientConfig::new(
            ClientCapabilities::default(),
            Implementation::new("mnemo", env!("CARGO_PKG_VERSION")),
        )
    }

    fn on_tool_list_changed(
        &self,
        _context: NotificationContext<RoleClient>,
    ) -> impl Future<Output = ()> + Send + '_ {
        self.tools_changed.announce();
        std::future::ready(())
    }
}

/// A child process whose whole process group is killed when this is dropped.
pub(crate) struct ChildGuard {
    child: Child,
    /// Kept from the spawn: once the child's exit has been collected `Child::id` is gone, but
    /// what it started may still run in its process group.
    pid: Option<u32>,
}

impl ChildGuard {
    pub(crate) fn pid(&self) -> Option<u32> {
        self.pid
    }

    /// How the child ended, if it did.
    pub(crate) fn exit_status(&mut self) -> Option<std::process::ExitStatus> {
        self.child.try_wait().ok().flatten()
    }
}

impl Drop for ChildGuard {
    fn drop(&mut self) {
        if let Some(pid) = self.pid.and_then(|p| i32::try_from(p).ok()) {
            // SAFETY: kill(2) with a negative pid signals the process group the child leads
            // (it was spawned with `process_group(0)`); no memory is touched.
            unsafe {
                libc::kill(-pid, libc::SIGKILL);
            }
        }
        let _ = self.child.start_kill();
    }
}

pub(crate) struct Connection {
    pub(crate) service: Service,
    pub(crate) child: Option<ChildGuard>,
    /// How many messages of a stdio server were too long to read (see `oversize`).
    pub(crate) oversized: Option<watch::Receiver<u64>>,
}

impl Connection {
    pub(crate) fn peer(&self) -> Peer<RoleClient> {
        self.service.peer().clone()
    }
}

/// Opens the connection and completes the MCP handshake. The error is a sentence for the
/// person.
pub(crate) async fn connect(
    server: &str,
    transport: &Transport,
    env_policy: &EnvPolicy,
    log_dir: &Path,
    tools_changed: Arc<ListChanges>,
) -> Result<Connection, String> {
    let handler = Handler { tools_changed };
    match transport {
        Transport::Stdio {
            command,
            args,
            env,
            cwd,
        } => {
            let mut cmd = Command::new(command);
            cmd.args(args)
                .env_clear()
                .envs(child_env(env_policy, env, |n| std::env::var_os(n)))
                .stdin(Stdio::piped())
                .stdout(Stdio::piped())
                .stderr(log_file(server, log_dir))
                .kill_on_drop(true)
                .process_group(0);
            if let Some(cwd) = cwd {
                cmd.current_dir(cwd);
            }
            #[cfg(target_os = "linux")]
            // SAFETY: the closure runs between fork and exec and only calls prctl(2), which is
            // async-signal-safe. The server then gets SIGKILL when mnemo dies, even by SIGKILL.
            unsafe {
                cmd.pre_exec(|| {
                    if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL) == 0 {
                        Ok(())
                    } else {
                        Err(std::io::Error::last_os_error())
                    }
                });
            }
            let mut child = cmd
                .spawn()
                .map_err(|e| format!("cannot start `{command}`: {e}"))?;
            let (Some(stdout), Some(stdin)) = (child.stdout.take(), child.stdin.take()) else {
                return Err("the server's stdio could not be opened".to_string());
            };
            let pid = child.id();
            let mut guard = ChildGuard { child, pid };
            let (stdout, oversized) = LineWatch::new(stdout);
            match handler.serve((stdout, stdin)).await {
                Ok(service) => Ok(Connection {
                    service,
                    child: Some(guard),
                    oversized: Some(oversized),
                }),
                Err(e) => {
                    tokio::time::sleep(std::time::Duration::from_millis(50)).await;
                    let ended = guard
                        .exit_status()
                        .map(|s| format!(" (the process exited: {s})"))
                        .unwrap_or_default();
                    Err(format!(
                        "handshake failed: {e}{ended}; see {}",
                        log_path(server, log_dir).display()
                    ))
                }
            }
        }
        Transport::Http {
            url,
            headers,
            bearer_token_env,
        } => {
            use rmcp::transport::StreamableHttpClientTransport;
            use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
            let mut config = StreamableHttpClientTransportConfig::with_uri(url.as_str());
            if let Some(var) = bearer_token_env {
                let token = std::env::var(var)
                    .map_err(|_| format!("the variable `{var}` (bearer_token_env) is not set"))?;
                config = config.auth_header(token);
            }
            let mut map = std::collections::HashMap::new();
            for (name, value) in headers {
                let name = reqwest::header::HeaderName::from_bytes(name.as_bytes())
                    .map_err(|e| format!("header `{name}`: {e}"))?;
                let value = reqwest::header::HeaderValue::from_str(value)
                    .map_err(|e| format!("header `{name}`: {e}"))?;
                map.insert(name, value);
            }
            // rmcp's reqwest is built without a crypto provider (one provider, ring, keeps
            // aws-lc-rs out of the build) and takes the process default; an Err means one is set.
            let _ = tokio_rustls::rustls::crypto::ring::default_provider().install_default();
            let transport = StreamableHttpClientTransport::from_config(config.custom_headers(map));
            let service = handler
                .serve(transport)
                .await
                .map_err(|e| format!("cannot connect to {url}: {e}"))?;
            Ok(Connection {
                service,
                child: None,
                oversized: None,
            })
        }
    }
}

/// The environment of a server process: what `policy` lets through of the parent's, then the
/// entry's `env`, where a value `${NAME}` takes the parent's `NAME` (so a key reaches only the
/// server it was listed for).
pub(crate) fn child_env(
    policy: &EnvPolicy,
    entry: &std::collections::BTreeMap<String, String>,
    parent: impl Fn(&str) -> Option<OsString>,
) -> Vec<(OsString, OsString)> {
    let mut env = policy.filter(std::env::vars_os());
    for (name, value) in entry {
        let value = match value
            .strip_prefix("${")
            .and_then(|rest| rest.strip_suffix('}'))
        {
            Some(var) => match parent(var) {
                Some(v) => v,
                None => continue,
            },
            None => OsString::from(value),
        };
        env.retain(|(n, _)| n != name.as_str());
        env.push((OsString::from(name), value));
    }
    env
}

pub(crate) fn log_path(server: &str, log_dir: &Path) -> std::path::PathBuf {
    let safe: String = server
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' {
                c
            } else {
                '_'
            }
        })
        .collect();
    log_dir.join(format!("mcp-{safe}.log"))
}

/// A log past this size is moved to `mcp-<server>.log.1` when the server starts.
const LOG_ROTATE_BYTES: u64 = 4 * 1024 * 1024;

/// The server's stderr: appended to its log file, or dropped when that cannot be opened (or
/// there is no log directory).
fn log_file(server: &str, log_dir: &Path) -> Stdio {
    if log_dir.as_os_str().is_empty() {
        return Stdio::null();
    }
    let _ = std::fs::create_dir_all(log_dir);
    let path = log_path(server, log_dir);
    if std::fs::metadata(&path).is_ok_and(|m| m.len() > LOG_ROTATE_BYTES) {
        let _ = std::fs::rename(&path, path.with_extension("log.1"));
    }
    std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(&path)
        .map_or_else(|_| Stdio::null(), Stdio::from)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    #[test]
    fn entry_env_adds_literals_and_named_parent_variables() {
        let entry = BTreeMap::from([
            ("MODE".to_string(), "fast".to_string()),
            ("GITHUB_TOKEN".to_string(), "${MY_GH}".to_string()),
            ("ABSENT".to_string(), "${NOT_SET_ANYWHERE}".to_string()),
        ]);
        let parent = |name: &str| (name == "MY_GH").then(|| OsString::from("gh-secret"));
        let env = child_env(&EnvPolicy::default(), &entry, parent);
        let get = |name: &str| env.iter().find(|(n, _)| n == name).map(|(_, v)| v.clone());
        assert_eq!(get("MODE"), Some("fast".into()));
        assert_eq!(get("GITHUB_TOKEN"), Some("gh-secret".into()));
        assert_eq!(get("ABSENT"), None);
    }
}
