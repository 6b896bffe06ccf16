//! The `[mcp_servers.NAME]` and `[mcp]` config sections. An entry is read leniently: a broken
//! entry does not fail the whole config (the other servers and the session must still start),
//! it is kept with its error, which names the server and the key, and the manager lists that
//! server as failed.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use toml::Value;

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct McpConfig {
    /// A server whose tool specs would take more tokens than this is not listed tool by tool
    /// (its tools are found on demand).
    pub max_tool_tokens: u32,
}

impl Default for McpConfig {
    fn default() -> Self {
        Self {
            max_tool_tokens: 3000,
        }
    }
}

/// One `[mcp_servers.NAME]` entry as written: valid, or kept with the reason it is not.
#[derive(Debug, Clone, PartialEq)]
pub enum McpServerEntry {
    Valid(McpServerConfig),
    Invalid { raw: Value, error: String },
}

/// A server entry whose keys have the right types. Whether it describes a runnable server
/// (`command` xor `url`) is checked by [`McpServerConfig::transport`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct McpServerConfig {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub command: Option<String>,
    pub args: Vec<String>,
    /// Added to the scrubbed environment; a value `${NAME}` takes the parent's `NAME`.
    pub env: BTreeMap<String, String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cwd: Option<PathBuf>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    pub headers: BTreeMap<String, String>,
    /// The variable holding a bearer token for `url`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub bearer_token_env: Option<String>,
    pub enabled: bool,
    pub startup_timeout_secs: u64,
    pub tool_timeout_secs: u64,
    /// Only these tools are offered, when set.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub enabled_tools: Option<Vec<String>>,
    pub disabled_tools: Vec<String>,
}

impl Default for McpServerConfig {
    fn default() -> Self {
        Self {
            command: None,
            args: Vec::new(),
            env: BTreeMap::new(),
            cwd: None,
            url: None,
            headers: BTreeMap::new(),
            bearer_token_env: None,
            enabled: true,
            startup_timeout_secs: 10,
            tool_timeout_secs: 60,
            enabled_tools: None,
            disabled_tools: Vec::new(),
        }
    }
}

/// How a server is reached.
#[derive(Debug, Clone, PartialEq)]
pub enum Transport {
    Stdio {
        command: String,
        args: Vec<String>,
        env: BTreeMap<String, String>,
        cwd: Option<PathBuf>,
    },
    Http {
        url: String,
        headers: BTreeMap<String, String>,
        bearer_token_env: Option<String>,
    },
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("MCP server `{server}`: key `mcp_servers.{server}.{key}`: {message}")]
pub struct McpConfigError {
    pub server: String,
    pub key: String,
    pub message: String,
}

impl McpServerConfig {
    pub fn startup_timeout(&self) -> Duration {
        Duration::from_secs(self.startup_timeout_secs.max(1))
    }

    pub fn tool_timeout(&self) -> Duration {
        Duration::from_secs(self.tool_timeout_secs.max(1))
    }

    /// Whether the server's tool `name` is offered under `enabled_tools` / `disabled_tools`.
    pub fn offers(&self, name: &str) -> bool {
        let enabled = self
            .enabled_tools
            .as_ref()
            .is_none_or(|list| list.iter().any(|t| t == name));
        enabled && !self.disabled_tools.iter().any(|t| t == name)
    }

    /// The transport this entry describes, or the key that is wrong.
    pub fn transport(&self, server: &str) -> Result<Transport, McpConfigError> {
        let error = |key: &str, message: &str| McpConfigError {
            server: server.to_string(),
            key: key.to_string(),
            message: message.to_string(),
        };
        match (&self.command, &self.url) {
            (Some(_), Some(_)) => Err(error("url", "set either `command` or `url`, not both")),
            (None, None) => Err(error(
                "command",
                "missing: set `command` (a local server) or `url` (a remote one)",
            )),
            (Some(command), None) => {
                if command.trim().is_empty() {
                    return Err(error("command", "is empty"));
                }
                for key in ["headers", "bearer_token_env"] {
                    let set = match key {
                        "headers" => !self.headers.is_empty(),
                        _ => self.bearer_token_env.is_some(),
                    };
                    if set {
                        return Err(error(key, "applies only to `url` servers"));
                    }
                }
                Ok(Transport::Stdio {
                    command: command.clone(),
                    args: self.args.clone(),
                    env: self.env.clone(),
                    cwd: self.cwd.clone(),
                })
            }
            (None, Some(url)) => {
                if !(url.starts_with("http://") || url.starts_with("https://")) {
                    return Err(error("url", "must start with http:// or https://"));
                }
                if !self.args.is_empty() || !self.env.is_empty() || self.cwd.is_some() {
                    return Err(error(
                        "args",
                        "`args`, `env` and `cwd` apply only to `command` servers",
                    ));
                }
                for name in self.headers.keys() {
                    if reqwest::header::HeaderName::from_bytes(name.as_bytes()).is_err() {
                        return Err(error(
                            &format!("headers.{name}"),
                            "is not a valid header name",
                        ));
                    }
                }
                Ok(Transport::Http {
                    url: url.clone(),
                    headers: self.headers.clone(),
                    bearer_token_env: self.bearer_token_env.clone(),
                })
            }
        }
    }
}

impl McpServerEntry {
    /// Reads one entry; the error names the first wrong key.
    pub fn from_value(raw: Value) -> Self {
        match check_keys(&raw) {
            Err(error) => Self::Invalid { raw, error },
            Ok(()) => match McpServerConfig::deserialize(raw.clone()) {
                Ok(config) => Self::Valid(config),
                Err(e) => Self::Invalid {
                    raw,
                    error: e.to_string(),
                },
            },
        }
    }

    /// The entry's config, or the error naming `server` and the key.
    pub fn config(&self, server: &str) -> Result<&McpServerConfig, McpConfigError> {
        match self {
            Self::Valid(config) => Ok(config),
            Self::Invalid { error, .. } => {
                let (key, message) = error.split_once(": ").unwrap_or(("", error.as_str()));
                Err(McpConfigError {
                    server: server.to_string(),
                    key: key.to_string(),
                    message: message.to_string(),
                })
            }
        }
    }
}

enum Kind {
    Str,
    StrList,
    StrTable,
    Int,
    Bool,
}

fn kind_of(key: &str) -> Option<Kind> {
    Some(match key {
        "command" | "cwd" | "url" | "bearer_token_env" => Kind::Str,
        "args" | "enabled_tools" | "disabled_tools" => Kind::StrList,
        "env" | "headers" => Kind::StrTable,
        "startup_timeout_secs" | "tool_timeout_secs" => Kind::Int,
        "enabled" => Kind::Bool,
        _ => return None,
    })
}

/// Checks each key's type so that an error reads `key: message`.
fn check_keys(raw: &Value) -> Result<(), String> {
    let Value::Table(table) = raw else {
        return Err(": must be a table such as `[mcp_servers.NAME]`".to_string());
    };
    for (key, value) in table {
        let Some(kind) = kind_of(key) else {
            return Err(format!(
                "{key}: unknown key (known: command, args, env, cwd, url, headers, \
                 bearer_token_env, enabled, startup_timeout_secs, tool_timeout_secs, \
                 enabled_tools, disabled_tools)"
            ));
        };
        let ok = match (kind, value) {
            (Kind::Str, Value::String(_)) | (Kind::Bool, Value::Boolean(_)) => true,
            (Kind::Int, Value::Integer(n)) => *n >= 0,
            (Kind::StrList, Value::Array(items)) => items.iter().all(Value::is_str),
            (Kind::StrTable, Value::Table(items)) => items.values().all(Value::is_str),
            _ => false,
        };
        if !ok {
            let expected = match kind_of(key) {
                Some(Kind::Str) => "a string",
                Some(Kind::StrList) => "a list of strings",
                Some(Kind::StrTable) => "a table of strings",
                Some(Kind::Int) => "a whole number of seconds (0 or more)",
                Some(Kind::Bool) | None => "true or false",
            };
            return Err(format!("{key}: expected {expected}, found `{value}`"));
        }
    }
    Ok(())
}

impl<'de> Deserialize<'de> for McpServerEntry {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        Value::deserialize(deserializer).map(Self::from_value)
    }
}

impl Serialize for McpServerEntry {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            Self::Valid(config) => config.serialize(serializer),
            Self::Invalid { raw, .. } => raw.serialize(serializer),
        }
    }
}

#[cfg(test)]
#[path = "config_tests.rs"]
mod tests;
