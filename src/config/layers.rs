//! Reading and merging the config layers. Each file is checked on its own first, so an error
//! names the file, the line and the key; the merged result is then checked as a whole.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::Deserialize;
use toml::{Table, Value};

use super::trust::{self, Ignored, Trust};
use super::{CliOverrides, Config, DEFAULT_TOML, Dirs, ProviderKind};

#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("cannot read config file {file}")]
    Read {
        file: PathBuf,
        source: std::io::Error,
    },
    #[error("config error in {origin}, line {line}, key `{key}`: {message}")]
    Parse {
        origin: String,
        line: usize,
        key: String,
        message: String,
    },
    #[error("config error in {origin}, key `{key}`: {message}")]
    Invalid {
        origin: String,
        key: String,
        message: String,
    },
    #[error("cannot use the workspace's config: {0}")]
    Workspace(crate::sandbox::workspace_read::SkipReason),
    #[error("unknown model `{name}`; configured models: {known} (or use --provider with --model)")]
    UnknownModel { name: String, known: String },
}

/// Which layers were read, which layer last defined each model entry, and what the workspace
/// file asked for that its trust did not allow.
#[derive(Debug, Clone, Default)]
pub struct ConfigSources {
    pub files: Vec<PathBuf>,
    pub model_origins: BTreeMap<String, String>,
    /// The workspace's config file, when it has one.
    pub workspace_file: Option<PathBuf>,
    pub workspace_trust: Option<Trust>,
    /// Settings of the workspace file dropped because the workspace is not trusted.
    pub ignored: Vec<Ignored>,
    /// Whether `MNEMO_FALLBACKS` named the fallbacks (the person chose them for this run).
    pub fallbacks_from_env: bool,
}

impl ConfigSources {
    /// The warning for what the workspace file asked for and did not get; `None` when nothing
    /// was dropped.
    pub fn ignored_warning(&self) -> Option<String> {
        if self.ignored.is_empty() {
            return None;
        }
        let file = self.workspace_file.as_ref().map_or_else(
            || ".mnemo/config.toml".to_string(),
            |f| f.display().to_string(),
        );
        let why = match self.workspace_trust {
            Some(Trust::Changed) => "it changed since you trusted this workspace",
            _ => "this workspace is not trusted",
        };
        let settings: Vec<String> = self.ignored.iter().map(ToString::to_string).collect();
        Some(format!(
            "ignored settings of {file} ({why}): {}. Review the file, then run `mnemo trust` \
             to apply them",
            settings.join(", ")
        ))
    }
}

const DEFAULTS_ORIGIN: &str = "built-in defaults";

/// Loads every layer. `env` looks up environment variables (a parameter so tests stay
/// hermetic).
pub fn load(
    dirs: &Dirs,
    workspace: &Path,
    env: &dyn Fn(&str) -> Option<String>,
    cli: &CliOverrides,
) -> Result<(Config, ConfigSources), ConfigError> {
    let mut sources = ConfigSources::default();
    let mut merged = parse_layer(DEFAULT_TOML, DEFAULTS_ORIGIN)?;
    note_models(&merged, DEFAULTS_ORIGIN, &mut sources);

    let workspace_file = workspace.join(".mnemo").join("config.toml");
    let user_file = match dirs.user_config_file() {
        Some(file) => match std::fs::read_to_string(&file) {
            Ok(text) => Some((file, text)),
            Err(err) if err.kind() == std::io::ErrorKind::NotFound => None,
            Err(source) => return Err(ConfigError::Read { file, source }),
        },
        None => None,
    };
    let project_file = trust::read_workspace_config(workspace).map_err(ConfigError::Workspace)?;
    for (file, text) in user_file.into_iter().chain(project_file) {
        let origin = file.display().to_string();
        let mut layer = parse_layer(&text, &origin)?;
        if file == workspace_file {
            let fingerprint = trust::fingerprint(text.as_bytes());
            let state = trust::status(dirs, workspace, Some(&fingerprint));
            if state != Trust::Trusted || cli.distrust_workspace {
                let (kept, ignored) = trust::restrict(&merged, layer);
                layer = kept;
                sources.ignored = ignored;
            }
            sources.workspace_trust = Some(state);
            sources.workspace_file = Some(file.clone());
        }
        note_models(&layer, &origin, &mut sources);
        merge(&mut merged, layer);
        sources.files.push(file);
    }
    sources.fallbacks_from_env = env("MNEMO_FALLBACKS").is_some();

    merge(&mut merged, env_layer(env)?);
    let mut config =
        Config::deserialize(Value::Table(merged)).map_err(|e| ConfigError::Invalid {
            origin: "merged configuration".into(),
            key: "-".into(),
            message: e.message().to_string(),
        })?;
    apply_cli(&mut config, cli);
    // Each file passed on its own, so a number out of range now came from MNEMO_* or a flag.
    super::ranges::check(
        &config,
        "MNEMO_* environment variables or command-line flags",
    )?;
    validate(&config, &sources)?;
    config.sandbox.key_vars = key_vars(&config, cli);
    config.sandbox.own_dirs = dirs.config.iter().chain(&dirs.data).cloned().collect();
    if let Some(db) = cli.db.as_ref().or(config.memory.db_path.as_ref()) {
        config.sandbox.own_dirs.push(db.clone());
        config.sandbox.stores.push(db.clone());
    }
    Ok((config, sources))
}

/// The variables that hold keys: every configured model's, the providers' usual ones, the
/// embedding endpoint's and the one named on the command line. They never reach a command.
fn key_vars(config: &Config, cli: &CliOverrides) -> Vec<String> {
    let mut vars: Vec<String> = config
        .models
        .values()
        .filter_map(|m| m.api_key_env.clone())
        .chain(
            [ProviderKind::Anthropic, ProviderKind::OpenAi]
                .map(|p| p.default_key_env().to_string()),
        )
        .chain(
            config
                .memory
                .embedding
                .as_ref()
                .and_then(|e| e.api_key_env.clone()),
        )
        .chain(cli.api_key_env.clone())
        .filter(|v| !v.is_empty())
        .collect();
    vars.sort();
    vars.dedup();
    vars
}

fn parse_layer(text: &str, origin: &str) -> Result<Table, ConfigError> {
    let located = |err: toml::de::Error| {
        let offset = err.span().map(|s| s.start).unwrap_or(0);
        ConfigError::Parse {
            origin: origin.to_string(),
            line: text[..offset.min(text.len())].matches('\n').count() + 1,
            key: key_at(text, offset),
            message: err.message().trim().to_string(),
        }
    };
    // Checking the layer against the typed shape catches wrong types and unknown keys while
    // the source text is still at hand.
    let typed = toml::from_str::<Config>(text).map_err(located)?;
    super::ranges::check(&typed, origin)?;
    toml::from_str::<Table>(text).map_err(located)
}

/// The dotted key at a byte offset: the enclosing `[table]` header plus the key on that line.
fn key_at(text: &str, offset: usize) -> String {
    let offset = offset.min(text.len());
    let line_start = text[..offset].rfind('\n').map_or(0, |i| i + 1);
    let line_end = text[offset..].find('\n').map_or(text.len(), |i| offset + i);
    let line = text[line_start..line_end].trim();
    let header = text[..line_start]
        .lines()
        .rev()
        .map(str::trim)
        .find(|l| l.starts_with('['))
        .map(|l| l.trim_matches(|c| c == '[' || c == ']').trim().to_string());
    let key = if line.starts_with('[') {
        None
    } else {
        line.split('=')
            .next()
            .map(|k| k.trim().trim_matches('"').to_string())
    };
    match (header, key) {
        (Some(h), Some(k)) if !k.is_empty() => format!("{h}.{k}"),
        (Some(h), _) => h,
        (None, Some(k)) if !k.is_empty() => k,
        _ => "-".to_string(),
    }
}

fn note_models(layer: &Table, origin: &str, sources: &mut ConfigSources) {
    if let Some(Value::Table(models)) = layer.get("models") {
        for name in models.keys() {
            sources
                .model_origins
                .insert(name.clone(), origin.to_string());
        }
    }
}

fn merge(base: &mut Table, layer: Table) {
    for (key, value) in layer {
        match (base.get_mut(&key), value) {
            (Some(Value::Table(existing)), Value::Table(incoming)) => merge(existing, incoming),
            (_, value) => {
                base.insert(key, value);
            }
        }
    }
}

fn env_layer(env: &dyn Fn(&str) -> Option<String>) -> Result<Table, ConfigError> {
    let mut layer = Table::new();
    let mut agent = Table::new();
    if let Some(model) = env("MNEMO_MODEL").filter(|v| !v.is_empty()) {
        layer.insert("default_model".into(), Value::String(model));
    }
    if let Some(list) = env("MNEMO_FALLBACKS") {
        let names = list
            .split(',')
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .map(|s| Value::String(s.to_string()));
        layer.insert("fallbacks".into(), Value::Array(names.collect()));
    }
    for (var, key) in [
        ("MNEMO_MAX_STEPS", "max_steps"),
        ("MNEMO_TOOL_TIMEOUT_SECS", "tool_timeout_secs"),
    ] {
        if let Some(raw) = env(var) {
            let number = raw
                .trim()
                .parse::<u32>()
                .map_err(|_| ConfigError::Invalid {
                    origin: format!("environment variable {var}"),
                    key: format!("agent.{key}"),
                    message: format!("expected a whole number, got `{raw}`"),
                })?;
            agent.insert(key.into(), Value::Integer(i64::from(number)));
        }
    }
    if !agent.is_empty() {
        layer.insert("agent".into(), Value::Table(agent));
    }
    Ok(layer)
}

fn apply_cli(config: &mut Config, cli: &CliOverrides) {
    if let Some(steps) = cli.max_steps {
        config.agent.max_steps = steps;
    }
    if let Some(policy) = cli.sandbox {
        config.sandbox.policy = policy;
    }
    if cli.network {
        config.sandbox.network = true;
    }
    if let Some(mode) = cli.approval {
        config.approval = mode;
    }
}

fn validate(config: &Config, sources: &ConfigSources) -> Result<(), ConfigError> {
    let origin_of = |name: &str| {
        sources
            .model_origins
            .get(name)
            .cloned()
            .unwrap_or_else(|| DEFAULTS_ORIGIN.to_string())
    };
    for (name, model) in &config.models {
        let invalid = |field: &str, message: &str| ConfigError::Invalid {
            origin: origin_of(name),
            key: format!("models.{name}.{field}"),
            message: message.to_string(),
        };
        if model.provider.is_none() {
            return Err(invalid(
                "provider",
                "missing; use \"anthropic\", \"openai\" or \"scripted\"",
            ));
        }
        if model.provider == Some(super::ProviderKind::Scripted) {
            if model.script.is_none() {
                return Err(invalid(
                    "script",
                    "a scripted model needs the path of its script",
                ));
            }
        } else if model.model.trim().is_empty() {
            return Err(invalid(
                "model",
                "missing: the model id to send, such as \"gpt-5.1\"",
            ));
        }
    }
    if config.agent.max_steps == 0 {
        return Err(ConfigError::Invalid {
            origin: "configuration".into(),
            key: "agent.max_steps".into(),
            message: "must be at least 1".into(),
        });
    }
    for name in &config.fallbacks {
        if !config.models.contains_key(name) {
            return Err(ConfigError::Invalid {
                origin: "configuration".into(),
                key: "fallbacks".into(),
                message: format!("`{name}` is not a configured model"),
            });
        }
    }
    Ok(())
}

#[cfg(test)]
#[path = "layers_tests.rs"]
mod tests;
