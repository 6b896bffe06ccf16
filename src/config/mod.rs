//! Layered configuration: the embedded defaults, the user file, the workspace file, `MNEMO_*`
//! environment variables and command-line flags, merged in that order into one typed value.

pub mod dream;
pub mod heartbeat_files;
mod layers;
mod ranges;
pub mod schedules;
pub mod select;
pub mod show;
pub mod telegram;
pub mod trust;
pub mod user_file;
pub mod web;

use std::collections::BTreeMap;
use std::path::PathBuf;

use serde::{Deserialize, Serialize};

pub use layers::{ConfigError, ConfigSources, load};
pub use select::{KeyStatus, ModelChoice, ResolvedModel, resolve_model};

pub const DEFAULT_TOML: &str = include_str!("../../config/default.toml");

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Config {
    pub default_model: String,
    pub fallbacks: Vec<String>,
    pub agent: AgentConfig,
    pub memory: MemoryConfig,
    pub capabilities: CapabilitiesConfig,
    pub skills: SkillsConfig,
    pub retry: RetryConfig,
    pub sandbox: crate::sandbox::SandboxSection,
    /// When the agent asks before acting: read_only, ask, auto or full.
    pub approval: crate::sandbox::ApprovalMode,
    /// Where crash records are posted too, besides `<data dir>/crashes/`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub crash_webhook: Option<String>,
    pub models: BTreeMap<String, ModelConfig>,
    /// `[mcp_servers.NAME]`: MCP servers whose tools the agent may use.
    pub mcp_servers: BTreeMap<String, crate::mcp::McpServerEntry>,
    pub mcp: crate::mcp::McpConfig,
    /// `[dream]`: the cycle that rewrites the notes files from the archive.
    pub dream: dream::DreamConfig,
    /// `[telegram]`: talking to mnemo from a phone, through `mnemo serve`.
    pub telegram: telegram::TelegramConfig,
    /// `[schedules]`: how many schedules, how often, how many running at once.
    pub schedules: schedules::ScheduleLimits,
    /// `[hooks]`: the person's commands on the session's events, in Claude Code's shape.
    #[serde(skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub hooks: crate::hooks::HooksConfig,
    /// `[web]`: where `web_search` sends its queries.
    pub web: web::WebConfig,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct RetryConfig {
    pub attempts: u32,
    pub base_delay_secs: f64,
    pub max_delay_secs: f64,
    pub cooldown_secs: u64,
    pub auth_cooldown_secs: u64,
    /// Opening a connection to a provider.
    pub connect_timeout_secs: f64,
    /// From sending a request to the start of the answer.
    pub first_byte_timeout_secs: f64,
    /// Between two pieces of a streamed answer.
    pub idle_timeout_secs: f64,
}

impl Default for RetryConfig {
    fn default() -> Self {
        let policy = crate::llm::fallback::RetryPolicy::default();
        let timeouts = crate::llm::Timeouts::default();
        Self {
            attempts: policy.attempts,
            base_delay_secs: policy.base_delay.as_secs_f64(),
            max_delay_secs: policy.max_delay.as_secs_f64(),
            cooldown_secs: policy.cooldown.as_secs(),
            auth_cooldown_secs: policy.auth_cooldown.as_secs(),
            connect_timeout_secs: timeouts.connect.as_secs_f64(),
            first_byte_timeout_secs: timeouts.first_byte.as_secs_f64(),
            idle_timeout_secs: timeouts.idle.as_secs_f64(),
        }
    }
}

impl RetryConfig {
    /// The waits of one request; each at least a tenth of a second.
    pub fn timeouts(&self) -> crate::llm::Timeouts {
        let secs = |value: f64| std::time::Duration::from_secs_f64(value.max(0.1));
        crate::llm::Timeouts {
            connect: secs(self.connect_timeout_secs),
            first_byte: secs(self.first_byte_timeout_secs),
            idle: secs(self.idle_timeout_secs),
        }
    }

    pub fn policy(&self) -> crate::llm::fallback::RetryPolicy {
        let secs = |value: f64| std::time::Duration::from_secs_f64(value.max(0.0));
        crate::llm::fallback::RetryPolicy {
            attempts: self.attempts.max(1),
            base_delay: secs(self.base_delay_secs),
            max_delay: secs(self.max_delay_secs),
            cooldown: std::time::Duration::from_secs(self.cooldown_secs),
            auth_cooldown: std::time::Duration::from_secs(self.auth_cooldown_secs),
        }
    }
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct CapabilitiesConfig {
    /// Most tokens the tool specs of capabilities may take in one request; past it the least
    /// recently referenced leave the tool list first.
    pub max_tool_tokens: u32,
}

impl Default for CapabilitiesConfig {
    fn default() -> Self {
        Self {
            max_tool_tokens: 4000,
        }
    }
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct SkillsConfig {
    /// Most tokens the skill catalogue may take in the system prompt; 2 % of the model's
    /// context window when unset.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub catalog_tokens: Option<u32>,
    /// Model calls a successful turn must have taken before the agent is asked to write down
    /// what it did as a skill.
    pub learn_after_steps: u32,
}

impl Default for SkillsConfig {
    fn default() -> Self {
        Self {
            catalog_tokens: None,
            learn_after_steps: 6,
        }
    }
}

impl SkillsConfig {
    /// The catalogue's budget for a model with `context_window` tokens.
    pub fn catalog_budget(&self, context_window: u64) -> u32 {
        self.catalog_tokens
            .unwrap_or_else(|| u32::try_from(context_window / 50).unwrap_or(u32::MAX))
    }
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct MemoryConfig {
    /// The database file; `<data dir>/mnemo.db` when unset.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub db_path: Option<PathBuf>,
    pub max_active_messages: usize,
    /// An embedding endpoint enables semantic archive search.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub embedding: Option<crate::memory::embed::EmbeddingConfig>,
}

impl Default for MemoryConfig {
    fn default() -> Self {
        Self {
            db_path: None,
            max_active_messages: 200,
            embedding: None,
        }
    }
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct AgentConfig {
    pub max_steps: u32,
    pub tool_timeout_secs: u64,
    pub repeat_limit: u32,
    pub compact_threshold: f64,
    /// The model that writes compaction summaries; the session's own model when unset.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub compressor_model: Option<String>,
    /// How deep sub-agents may nest.
    pub max_agent_depth: u32,
    /// How often a reply cut off by the output limit is continued before the turn ends.
    pub max_continuations: u32,
    /// Models sub-agents may be started on by name, besides the session's own model and its
    /// fallbacks: the model must not send the conversation to a provider the person did not
    /// choose.
    pub subagent_models: Vec<String>,
    /// Every this many model calls of a turn the model is reminded to update its working
    /// checkpoint and reconsider its approach (0: never).
    pub checkpoint_every: u32,
}

impl Default for AgentConfig {
    fn default() -> Self {
        Self {
            max_steps: 50,
            tool_timeout_secs: 120,
            repeat_limit: 3,
            compact_threshold: 0.8,
            compressor_model: None,
            max_agent_depth: 3,
            max_continuations: 2,
            subagent_models: Vec::new(),
            checkpoint_every: 12,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ProviderKind {
    Anthropic,
    #[serde(rename = "openai")]
    OpenAi,
    Scripted,
}

impl ProviderKind {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Anthropic => "anthropic",
            Self::OpenAi => "openai",
            Self::Scripted => "scripted",
        }
    }

    pub fn default_base_url(self) -> &'static str {
        match self {
            Self::Anthropic => "https://api.anthropic.com",
            Self::OpenAi => "https://api.openai.com/v1",
            Self::Scripted => "",
        }
    }

    pub fn default_key_env(self) -> &'static str {
        match self {
            Self::Anthropic => "ANTHROPIC_API_KEY",
            Self::OpenAi => "OPENAI_API_KEY",
            Self::Scripted => "",
        }
    }
}

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ModelConfig {
    pub provider: Option<ProviderKind>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub base_url: Option<String>,
    pub model: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub api_key_env: Option<String>,
    pub context_window: Option<u64>,
    pub max_output_tokens: Option<u32>,
    pub price: crate::llm::Price,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub script: Option<PathBuf>,
    /// Whether the model reads images; unset: known by its name (claude-*, gpt-4o, gpt-5...).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub images: Option<bool>,
}

/// Values given on the command line; they win over every file and variable.
#[derive(Debug, Clone, Default)]
pub struct CliOverrides {
    /// A named model, `scripted:PATH`, or with `provider` set, the wire model id.
    pub model: Option<String>,
    pub provider: Option<ProviderKind>,
    pub base_url: Option<String>,
    pub api_key_env: Option<String>,
    pub max_steps: Option<u32>,
    /// `--db PATH`: the database file, over the config and the data dir.
    pub db: Option<PathBuf>,
    /// `--sandbox POLICY`.
    pub sandbox: Option<crate::sandbox::SandboxPolicy>,
    /// `--network`: sandboxed commands may reach the network.
    pub network: bool,
    /// `--approval MODE`.
    pub approval: Option<crate::sandbox::ApprovalMode>,
    /// `--fallback NAME` (repeatable): the fallbacks of a model chosen on the command line.
    pub fallbacks: Vec<String>,
    /// `--broad-workspace`: the person confirmed a workspace as broad as `/` or home.
    pub broad_workspace: bool,
    /// The workspace's config file counts as untrusted whatever the trust list says: a
    /// schedule made before the person trusted it runs as it was made.
    pub distrust_workspace: bool,
}

impl CliOverrides {
    /// Whether the command line chose the model (by name, by provider or by URL). Such a model
    /// gets no fallbacks from the config files: only the ones named with it.
    pub fn chooses_model(&self) -> bool {
        self.model.is_some() || self.provider.is_some() || self.base_url.is_some()
    }
}

/// Where mnemo keeps its files; `MNEMO_CONFIG_DIR` and `MNEMO_DATA_DIR` override them.
#[derive(Debug, Clone)]
pub struct Dirs {
    pub config: Option<PathBuf>,
    pub data: Option<PathBuf>,
}

impl Dirs {
    pub fn from_env() -> Self {
        let project = directories::ProjectDirs::from("", "", "mnemo");
        let env_dir = |name: &str| {
            std::env::var_os(name)
                .filter(|v| !v.is_empty())
                .map(PathBuf::from)
        };
        Self {
            config: env_dir("MNEMO_CONFIG_DIR")
                .or_else(|| project.as_ref().map(|p| p.config_dir().to_path_buf())),
            data: env_dir("MNEMO_DATA_DIR")
                .or_else(|| project.as_ref().map(|p| p.data_dir().to_path_buf())),
        }
    }

    pub fn user_config_file(&self) -> Option<PathBuf> {
        self.config.as_ref().map(|dir| dir.join("config.toml"))
    }
}
