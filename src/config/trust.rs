//! Workspace trust. A workspace's `.mnemo/config.toml` arrives with the repository (or was
//! written by a command), so whoever wrote the repository wrote it. Settings in it that lower
//! safety (approval, sandbox, network, limits, the environment commands see) or choose where
//! keys and conversations go (which models a session uses, a model's URL, key variable or
//! script, the embedding endpoint, the database) take effect only once the person trusted the
//! workspace with this exact file:
//! `mnemo trust`, or the question the terminal front end asks. Until then they are dropped and
//! reported. Trust lives in the user's config dir (`trusted-workspaces.toml`), bound to the
//! file's SHA-256 as direnv binds `.envrc`: a changed file needs trusting again, so neither a
//! pull nor the agent can widen what the person agreed to. The workspace's heartbeat files are
//! bound the same way (`heartbeat_files.rs`).

use std::io;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use toml::{Table, Value};

use super::Dirs;
use crate::sandbox::ApprovalMode;
use crate::sandbox::workspace_read::{SkipReason, read_text};

pub const TRUST_FILE: &str = "trusted-workspaces.toml";

/// Where a workspace stands.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Trust {
    /// The workspace has no config file: nothing to trust.
    NoConfig,
    /// Trusted with this very file.
    Trusted,
    /// Never trusted.
    Untrusted,
    /// Trusted once, but the file changed since.
    Changed,
}

/// A setting of the workspace file that was dropped because the workspace is not trusted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Ignored {
    /// The dotted key, such as `sandbox.policy` or `models.fast.base_url`.
    pub key: String,
    /// Its value as written, in TOML.
    pub value: String,
}

impl std::fmt::Display for Ignored {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} = {}", self.key, self.value)
    }
}

#[derive(Debug, Default, Serialize, Deserialize)]
struct TrustFile {
    #[serde(default, rename = "workspace")]
    workspaces: Vec<TrustEntry>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
struct TrustEntry {
    path: PathBuf,
    /// SHA-256 of `.mnemo/config.toml` when it was trusted.
    config_sha256: String,
    /// The fingerprint of `.mnemo/heartbeat/` when it was trusted; heartbeats of an entry
    /// without one (trusted before heartbeats were bound) wait for the next `mnemo trust`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    heartbeats_sha256: Option<String>,
    /// The fingerprint of `.claude/settings.json` (whose hooks run commands) when it was
    /// trusted; its hooks run only while it is unchanged.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    claude_settings_sha256: Option<String>,
    trusted_at: String,
}

#[derive(Debug, thiserror::Error)]
pub enum TrustError {
    #[error("no config directory is known for this user; set MNEMO_CONFIG_DIR")]
    NoConfigDir,
    #[error("cannot read {}: {source}", .path.display())]
    Read { path: PathBuf, source: io::Error },
    #[error("{} is not a valid trust list: {message}", .path.display())]
    Parse { path: PathBuf, message: String },
    #[error("cannot write {}: {source}", .path.display())]
    Write { path: PathBuf, source: io::Error },
}

/// The SHA-256 of a workspace config file's bytes, in hex.
pub fn fingerprint(bytes: &[u8]) -> String {
    Sha256::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// The path and fingerprint of `workspace`'s config file, `None` when it has none (or it
/// cannot be read through the workspace guard).
pub fn workspace_config(workspace: &Path) -> Option<(PathBuf, String)> {
    let (path, text) = read_workspace_config(workspace).ok()??;
    Some((path, fingerprint(text.as_bytes())))
}

/// A workspace config file larger than this is refused.
const MAX_WORKSPACE_CONFIG_BYTES: usize = 1 << 20;

/// The path and text of `workspace`'s `.mnemo/config.toml`, read through the workspace guard
/// (the repository wrote it): `None` when there is none.
pub fn read_workspace_config(workspace: &Path) -> Result<Option<(PathBuf, String)>, SkipReason> {
    let relative = Path::new(".mnemo").join("config.toml");
    let confinement = crate::sandbox::Confinement::default();
    let Some(file) = read_text(
        workspace,
        &relative,
        &confinement,
        MAX_WORKSPACE_CONFIG_BYTES,
    )?
    else {
        return Ok(None);
    };
    if file.truncated {
        return Err(SkipReason::Unreadable {
            name: relative.display().to_string(),
            problem: format!("is larger than {MAX_WORKSPACE_CONFIG_BYTES} bytes"),
        });
    }
    Ok(Some((workspace.join(relative), file.text)))
}

fn trust_path(dirs: &Dirs) -> Result<PathBuf, TrustError> {
    dirs.config
        .as_ref()
        .map(|dir| dir.join(TRUST_FILE))
        .ok_or(TrustError::NoConfigDir)
}

fn read_list(path: &Path) -> Result<TrustFile, TrustError> {
    let text = match std::fs::read_to_string(path) {
        Ok(text) => text,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(TrustFile::default()),
        Err(source) => {
            return Err(TrustError::Read {
                path: path.to_path_buf(),
                source,
            });
        }
    };
    toml::from_str(&text).map_err(|e| TrustError::Parse {
        path: path.to_path_buf(),
        message: e.message().to_string(),
    })
}

/// How `workspace` (canonical) stands, given the fingerprint of its config file. An unreadable
/// trust list trusts nothing.
pub fn status(dirs: &Dirs, workspace: &Path, config: Option<&str>) -> Trust {
    let Some(config) = config else {
        return Trust::NoConfig;
    };
    let Ok(list) = trust_path(dirs).and_then(|path| read_list(&path)) else {
        return Trust::Untrusted;
    };
    match list.workspaces.iter().find(|w| w.path == workspace) {
        Some(entry) if entry.config_sha256 == config => Trust::Trusted,
        Some(_) => Trust::Changed,
        None => Trust::Untrusted,
    }
}

/// Trusts `workspace` with its config file as it is now.
pub fn trust(dirs: &Dirs, workspace: &Path) -> Result<Trust, TrustError> {
    let fingerprint = workspace_config(workspace).map(|(_, f)| f);
    let path = trust_path(dirs)?;
    let mut list = read_list(&path)?;
    list.workspaces.retain(|w| w.path != workspace);
    list.workspaces.push(TrustEntry {
        path: workspace.to_path_buf(),
        config_sha256: fingerprint.clone().unwrap_or_default(),
        heartbeats_sha256: super::heartbeat_files::fingerprint(workspace),
        claude_settings_sha256: claude_settings_fingerprint(workspace),
        trusted_at: chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Secs, true),
    });
    write_list(&path, &list)?;
    Ok(match fingerprint {
        Some(_) => Trust::Trusted,
        None => Trust::NoConfig,
    })
}

/// Whether the person trusted `workspace` with this config file (`None`: none) and these
/// heartbeat files (their fingerprint). An unreadable trust list trusts nothing.
pub fn covers(dirs: &Dirs, workspace: &Path, config: Option<&str>, heartbeats: &str) -> bool {
    let Ok(list) = trust_path(dirs).and_then(|path| read_list(&path)) else {
        return false;
    };
    list.workspaces.iter().any(|w| {
        w.path == workspace
            && w.config_sha256 == config.unwrap_or_default()
            && w.heartbeats_sha256.as_deref() == Some(heartbeats)
    })
}

/// The fingerprint of `workspace`'s `.claude/settings.json` as it is now; `None` when there
/// is none or it cannot be read.
pub fn claude_settings_fingerprint(workspace: &Path) -> Option<String> {
    let (_, text) = crate::hooks::read_claude_settings(workspace).ok()??;
    Some(fingerprint(text.as_bytes()))
}

/// Whether the person trusted `workspace` with this config file (`None`: none) and this
/// `.claude/settings.json` (its fingerprint). An unreadable trust list trusts nothing.
pub fn covers_claude_settings(
    dirs: &Dirs,
    workspace: &Path,
    config: Option<&str>,
    settings: &str,
) -> bool {
    let Ok(list) = trust_path(dirs).and_then(|path| read_list(&path)) else {
        return false;
    };
    list.workspaces.iter().any(|w| {
        w.path == workspace
            && w.config_sha256 == config.unwrap_or_default()
            && w.claude_settings_sha256.as_deref() == Some(settings)
    })
}

/// Forgets `workspace`; `true` when it was trusted.
pub fn revoke(dirs: &Dirs, workspace: &Path) -> Result<bool, TrustError> {
    let path = trust_path(dirs)?;
    let mut list = read_list(&path)?;
    let before = list.workspaces.len();
    list.workspaces.retain(|w| w.path != workspace);
    if list.workspaces.len() == before {
        return Ok(false);
    }
    write_list(&path, &list)?;
    Ok(true)
}

/// The trusted workspaces, with when they were trusted.
pub fn list(dirs: &Dirs) -> Result<Vec<(PathBuf, String)>, TrustError> {
    let list = read_list(&trust_path(dirs)?)?;
    Ok(list
        .workspaces
        .into_iter()
        .map(|w| (w.path, w.trusted_at))
        .collect())
}

/// Writes the list whole, through a private temporary file renamed into place.
fn write_list(path: &Path, list: &TrustFile) -> Result<(), TrustError> {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    let error = |source| TrustError::Write {
        path: path.to_path_buf(),
        source,
    };
    let text = format!(
        "# Workspaces whose .mnemo/config.toml may lower safety or choose models' endpoints.\n\
         # Written by `mnemo trust`; each entry holds for the config file with this SHA-256.\n\n{}",
        toml::to_string(list).map_err(|e| error(io::Error::other(e)))?
    );
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent).map_err(error)?;
    }
    let temp = path.with_extension(format!("toml.{}", std::process::id()));
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(&temp)
        .map_err(error)?;
    file.write_all(text.as_bytes()).map_err(error)?;
    file.sync_all().map_err(error)?;
    std::fs::rename(&temp, path).map_err(error)
}

/// Keys of a model entry that choose where its requests and key go.
const ROUTING_KEYS: &[&str] = &["base_url", "api_key_env", "script"];

/// The workspace layer with every setting an untrusted workspace may not make removed, given
/// `lower` (the defaults and the user's file merged). Settings that only make things stricter
/// stay. `deny_read` entries are added to the lower list, never replace it.
pub fn restrict(lower: &Table, mut layer: Table) -> (Table, Vec<Ignored>) {
    let mut ignored = Vec::new();
    let mut drop = |table: &mut Table, key: &str, prefix: &str| {
        if let Some(value) = table.remove(key) {
            ignored.push(Ignored {
                key: format!("{prefix}{key}"),
                value: value.to_string(),
            });
        }
    };
    if looser(lower.get("approval"), layer.get("approval"), approval_rank) {
        drop(&mut layer, "approval", "");
    }
    // Where crash records go is the person's choice too.
    drop(&mut layer, "crash_webhook", "");
    // The channel's base_url receives the bot token, and its chats reach the agent.
    drop(&mut layer, "telegram", "");
    // How many schedules run, and how often, is the person's to raise.
    drop(&mut layer, "schedules", "");
    // Hooks run commands outside the sandbox.
    drop(&mut layer, "hooks", "");
    // Where searches go, and which variable's key goes with them, is the person's choice.
    drop(&mut layer, "web", "");
    // Which models get the conversation is the person's choice, not the repository's.
    for key in ["default_model", "fallbacks"] {
        if layer.get(key).is_some() && layer.get(key) != lower.get(key) {
            drop(&mut layer, key, "");
        }
    }
    if let Some(Value::Table(agent)) = layer.get_mut("agent") {
        let lower = match lower.get("agent") {
            Some(Value::Table(t)) => t.clone(),
            _ => Table::new(),
        };
        for key in ["compressor_model", "subagent_models"] {
            if agent.get(key).is_some() && agent.get(key) != lower.get(key) {
                drop(agent, key, "agent.");
            }
        }
    }
    // The dream cycle sends the whole archive to its model.
    if let Some(Value::Table(dream)) = layer.get_mut("dream") {
        let lower = match lower.get("dream") {
            Some(Value::Table(t)) => t.get("model").cloned(),
            _ => None,
        };
        if dream.get("model").is_some() && dream.get("model") != lower.as_ref() {
            drop(dream, "model", "dream.");
        }
    }
    if let Some(Value::Table(sandbox)) = layer.get_mut("sandbox") {
        let lower = match lower.get("sandbox") {
            Some(Value::Table(t)) => t.clone(),
            _ => Table::new(),
        };
        if looser(lower.get("policy"), sandbox.get("policy"), policy_rank) {
            drop(sandbox, "policy", "sandbox.");
        }
        if sandbox.get("network") == Some(&Value::Boolean(true))
            && lower.get("network") != Some(&Value::Boolean(true))
        {
            drop(sandbox, "network", "sandbox.");
        }
        drop(sandbox, "env_allow", "sandbox.");
        if sandbox.get("allow_domains").is_some()
            && sandbox.get("allow_domains") != lower.get("allow_domains")
        {
            drop(sandbox, "allow_domains", "sandbox.");
        }
        for key in ["max_processes", "max_memory_mb"] {
            if larger(lower.get(key), sandbox.get(key)) {
                drop(sandbox, key, "sandbox.");
            }
        }
        if let Some(Value::Array(added)) = sandbox.get("deny_read") {
            let mut union = match lower.get("deny_read") {
                Some(Value::Array(existing)) => existing.clone(),
                _ => Vec::new(),
            };
            union.extend(
                added
                    .iter()
                    .filter(|v| !union.contains(v))
                    .cloned()
                    .collect::<Vec<_>>(),
            );
            sandbox.insert("deny_read".into(), Value::Array(union));
        }
    }
    if let Some(Value::Table(memory)) = layer.get_mut("memory") {
        drop(memory, "db_path", "memory.");
        drop(memory, "embedding", "memory.");
    }
    // An MCP server runs commands (or sends headers and tokens to a URL): the workspace's own
    // entries, and its changes to the person's, wait for trust.
    if let Some(Value::Table(servers)) = layer.get_mut("mcp_servers") {
        let lower = match lower.get("mcp_servers") {
            Some(Value::Table(t)) => t.clone(),
            _ => Table::new(),
        };
        let names: Vec<String> = servers.keys().cloned().collect();
        for name in names {
            if servers.get(&name) != lower.get(&name) {
                drop(servers, &name, "mcp_servers.");
            }
        }
    }
    if let Some(Value::Table(models)) = layer.get_mut("models") {
        let known = match lower.get("models") {
            Some(Value::Table(t)) => t.keys().cloned().collect::<Vec<_>>(),
            None | Some(_) => Vec::new(),
        };
        for (name, entry) in models.iter_mut() {
            let Value::Table(entry) = entry else { continue };
            let prefix = format!("models.{name}.");
            for key in ROUTING_KEYS {
                drop(entry, key, &prefix);
            }
            if known.contains(name) {
                drop(entry, "provider", &prefix);
            }
        }
    }
    (layer, ignored)
}

/// Whether `value` is more permissive than `lower` under `rank` (an unparsable value counts
/// as looser: it is dropped and the file's own check reports it).
fn looser(lower: Option<&Value>, value: Option<&Value>, rank: fn(&str) -> Option<u8>) -> bool {
    let Some(value) = value else { return false };
    let rank_of = |v: &Value| v.as_str().and_then(rank);
    match (lower.and_then(rank_of), rank_of(value)) {
        (Some(lower), Some(value)) => value > lower,
        (None, Some(value)) => value > 0,
        (_, None) => true,
    }
}

fn larger(lower: Option<&Value>, value: Option<&Value>) -> bool {
    let Some(value) = value else { return false };
    match (lower.and_then(Value::as_integer), value.as_integer()) {
        (Some(lower), Some(value)) => value > lower || (value == 0 && lower != 0),
        _ => true,
    }
}

fn approval_rank(text: &str) -> Option<u8> {
    Some(match ApprovalMode::parse(text)? {
        ApprovalMode::ReadOnly => 0,
        ApprovalMode::Ask => 1,
        ApprovalMode::Auto => 2,
        ApprovalMode::Full => 3,
    })
}

fn policy_rank(text: &str) -> Option<u8> {
    Some(match text.replace('-', "_").as_str() {
        "read_only" => 0,
        "workspace_write" => 1,
        "full_access" => 2,
        _ => return None,
    })
}

#[cfg(test)]
#[path = "trust_tests.rs"]
mod tests;
