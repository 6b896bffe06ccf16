//! Picks the model a session uses: a named entry, `scripted:PATH`, or an ad-hoc model from
//! `--provider/--base-url/--model` that needs no config edit.

use std::path::PathBuf;

use serde::Serialize;

use super::{CliOverrides, Config, ConfigError, ProviderKind};
use crate::llm::Price;

/// Context window assumed for ad-hoc models, whose size the config does not know.
const AD_HOC_CONTEXT_WINDOW: u64 = 128_000;
const DEFAULT_MAX_OUTPUT_TOKENS: u32 = 8192;

/// A model entry with every default filled in.
#[derive(Debug, Clone, Serialize)]
pub struct ResolvedModel {
    /// The config entry name (or a label for ad-hoc and scripted models).
    pub name: String,
    pub provider: ProviderKind,
    pub base_url: String,
    pub model: String,
    /// `None` when the server needs no key.
    pub api_key_env: Option<String>,
    pub context_window: u64,
    pub max_output_tokens: u32,
    pub price: Price,
    pub script: Option<PathBuf>,
    /// `images = true|false` on the entry; unset: known by the model's name.
    pub images: Option<bool>,
}

/// How the session's model was chosen.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ModelChoice {
    Named(String),
    Scripted(PathBuf),
    AdHoc {
        provider: ProviderKind,
        model: String,
    },
}

impl ModelChoice {
    pub fn from_cli(config: &Config, cli: &CliOverrides) -> Result<Self, ConfigError> {
        if let Some(provider) = cli.provider {
            let model = cli.model.clone().ok_or_else(|| ConfigError::Invalid {
                origin: "command line".into(),
                key: "--model".into(),
                message: format!("--provider {} needs --model MODEL_ID", provider.as_str()),
            })?;
            return Ok(Self::AdHoc { provider, model });
        }
        let name = cli
            .model
            .clone()
            .unwrap_or_else(|| config.default_model.clone());
        Ok(match name.strip_prefix("scripted:") {
            Some(path) => Self::Scripted(PathBuf::from(path)),
            None => Self::Named(name),
        })
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum KeyStatus {
    NotNeeded,
    Available(String),
    Missing(String),
}

/// Resolves the session's model from the config and the command line.
pub fn resolve_model(config: &Config, cli: &CliOverrides) -> Result<ResolvedModel, ConfigError> {
    let mut resolved = match ModelChoice::from_cli(config, cli)? {
        ModelChoice::Named(name) => named(config, &name)?,
        ModelChoice::Scripted(path) => ResolvedModel {
            name: format!("scripted:{}", path.display()),
            provider: ProviderKind::Scripted,
            base_url: String::new(),
            model: "scripted".into(),
            api_key_env: None,
            context_window: AD_HOC_CONTEXT_WINDOW,
            max_output_tokens: DEFAULT_MAX_OUTPUT_TOKENS,
            price: Price::default(),
            script: Some(path),
            images: None,
        },
        ModelChoice::AdHoc { provider, model } => ResolvedModel {
            name: format!("{}:{model}", provider.as_str()),
            provider,
            base_url: provider.default_base_url().to_string(),
            model,
            api_key_env: Some(provider.default_key_env().to_string()),
            context_window: AD_HOC_CONTEXT_WINDOW,
            max_output_tokens: DEFAULT_MAX_OUTPUT_TOKENS,
            price: Price::default(),
            script: None,
            images: None,
        },
    };
    if let Some(url) = &cli.base_url {
        resolved.base_url = url.clone();
    }
    if let Some(var) = &cli.api_key_env {
        resolved.api_key_env = Some(var.clone()).filter(|v| !v.is_empty());
    }
    Ok(resolved)
}

/// Resolves a configured entry by name.
pub fn named(config: &Config, name: &str) -> Result<ResolvedModel, ConfigError> {
    let entry = config
        .models
        .get(name)
        .ok_or_else(|| ConfigError::UnknownModel {
            name: name.to_string(),
            known: config.models.keys().cloned().collect::<Vec<_>>().join(", "),
        })?;
    let provider = entry.provider.unwrap_or(ProviderKind::OpenAi);
    let key_env = entry
        .api_key_env
        .clone()
        .unwrap_or_else(|| provider.default_key_env().to_string());
    Ok(ResolvedModel {
        name: name.to_string(),
        provider,
        base_url: entry
            .base_url
            .clone()
            .unwrap_or_else(|| provider.default_base_url().to_string()),
        model: entry.model.clone(),
        api_key_env: Some(key_env).filter(|v| !v.is_empty()),
        context_window: entry.context_window.unwrap_or(AD_HOC_CONTEXT_WINDOW),
        max_output_tokens: entry.max_output_tokens.unwrap_or(DEFAULT_MAX_OUTPUT_TOKENS),
        price: entry.price,
        script: entry.script.clone(),
        images: entry.images,
    })
}

impl ResolvedModel {
    pub fn key_status(&self, env: &dyn Fn(&str) -> Option<String>) -> KeyStatus {
        match &self.api_key_env {
            None => KeyStatus::NotNeeded,
            Some(var) if env(var).is_some_and(|v| !v.trim().is_empty()) => {
                KeyStatus::Available(var.clone())
            }
            Some(var) => KeyStatus::Missing(var.clone()),
        }
    }

    /// The model list of the model's server, which a probe asks for: it answers without a
    /// key on local servers and costs nothing anywhere. `None` for scripted models.
    pub fn probe_url(&self) -> Option<String> {
        let base = self.base_url.trim_end_matches('/');
        match self.provider {
            ProviderKind::OpenAi => Some(format!("{base}/models")),
            ProviderKind::Anthropic => Some(format!("{base}/v1/models")),
            ProviderKind::Scripted => None,
        }
    }

    /// Whether a missing key is fatal: local servers (localhost) usually need none.
    pub fn is_local(&self) -> bool {
        crate::llm::reach::is_loopback(&self.base_url)
    }
}
