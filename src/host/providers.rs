//! Builds providers and fallback chains for the models the config resolves; every chain of
//! a launch shares its cooldowns.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};

use super::{LaunchError, Loaded};
use crate::agent::subagents::{ModelFactory, ModelResolver};
use crate::config::{self, CliOverrides, Config, KeyStatus, ProviderKind, ResolvedModel};
use crate::llm::anthropic::AnthropicProvider;
use crate::llm::fallback::{ChainModel, Cooldowns, FallbackChain};
use crate::llm::openai::OpenAiProvider;
use crate::llm::scripted::{ScriptLoadError, ScriptedProvider};
use crate::llm::{Provider, ProviderSettings, Timeouts};

/// `api_key` is read from the environment by the caller; it is never logged or stored.
pub fn build_provider(
    model: &ResolvedModel,
    api_key: Option<String>,
    timeouts: Timeouts,
) -> Result<Arc<dyn Provider>, ScriptLoadError> {
    let settings = ProviderSettings {
        base_url: model.base_url.clone(),
        model: model.model.clone(),
        api_key,
        api_key_env: model.api_key_env.clone(),
        timeouts,
    };
    let images = model
        .images
        .unwrap_or_else(|| crate::llm::image::model_reads_images(&model.model));
    Ok(match model.provider {
        ProviderKind::Anthropic => {
            Arc::new(AnthropicProvider::new(settings).reading_images(images))
        }
        ProviderKind::OpenAi => Arc::new(OpenAiProvider::new(settings).reading_images(images)),
        ProviderKind::Scripted => {
            let path = model.script.clone().unwrap_or_default();
            Arc::new(ScriptedProvider::load(&path)?)
        }
    })
}

/// The chosen model followed by `fallbacks` that have a key (or need none).
fn build_chain(
    config: &Config,
    cooldowns: &Cooldowns,
    cli: &CliOverrides,
    fallbacks: &[String],
) -> Result<Arc<FallbackChain>, LaunchError> {
    let primary = config::resolve_model(config, cli)?;
    let key = api_key(&primary)?;
    let timeouts = config.retry.timeouts();
    let mut models = vec![chain_model(&primary, key, timeouts)?];
    for name in fallbacks {
        if *name == primary.name {
            continue;
        }
        let model = config::select::named(config, name)?;
        // A fallback without its key could only fail; it is left out of the chain.
        if let Ok(key) = api_key(&model) {
            models.push(chain_model(&model, key, timeouts)?);
        }
    }
    Ok(Arc::new(FallbackChain::sharing(
        models,
        config.retry.policy(),
        cooldowns.clone(),
    )))
}

impl Loaded {
    /// The chosen model followed by the configured fallbacks that have a key (or need none).
    /// Every chain of the launch shares its cooldowns.
    pub fn chain(&self, cli: &CliOverrides) -> Result<Arc<FallbackChain>, LaunchError> {
        build_chain(&self.config, &self.cooldowns, cli, self.fallbacks(cli))
    }

    /// Chains for `Op::SetModel`: the named model with the fallbacks a model chosen for this
    /// run gets. The overrides that described the model mnemo started with (provider, base
    /// URL, key variable) do not carry over to another model.
    pub fn model_factory(&self, cli: &CliOverrides) -> ModelFactory {
        let base = CliOverrides {
            model: None,
            provider: None,
            base_url: None,
            api_key_env: None,
            ..cli.clone()
        };
        let chosen = CliOverrides {
            model: Some(String::new()),
            ..base.clone()
        };
        let fallbacks = self.fallbacks(&chosen).to_vec();
        let config = self.config.clone();
        let cooldowns = self.cooldowns.clone();
        Arc::new(move |name: &str| {
            let cli = CliOverrides {
                model: Some(name.to_string()),
                ..base.clone()
            };
            build_chain(&config, &cooldowns, &cli, &fallbacks).map_err(|e| e.to_string())
        })
    }

    /// A chain of `model` alone, sharing the launch's cooldowns: for work the person pointed
    /// at one model (`[dream] model`).
    pub fn chain_of(&self, model: &ResolvedModel) -> Result<Arc<FallbackChain>, LaunchError> {
        let timeouts = self.config.retry.timeouts();
        let models = vec![chain_model(model, api_key(model)?, timeouts)?];
        Ok(Arc::new(FallbackChain::sharing(
            models,
            self.config.retry.policy(),
            self.cooldowns.clone(),
        )))
    }

    /// The fallbacks of the chosen model. A model chosen on the command line has none but the
    /// ones named for this run (`--fallback`, `MNEMO_FALLBACKS`): a conversation never goes to
    /// a provider the person did not choose for it.
    fn fallbacks<'a>(&'a self, cli: &'a CliOverrides) -> &'a [String] {
        match (cli.chooses_model(), cli.fallbacks.is_empty()) {
            (_, false) => &cli.fallbacks,
            (true, true) if !self.sources.fallbacks_from_env => &[],
            _ => &self.config.fallbacks,
        }
    }

    /// Chains for sub-agents that ask for a configured model by name; one chain per model for
    /// the whole launch, sharing the launch's cooldowns.
    pub fn model_resolver(&self, cli: &CliOverrides) -> ModelResolver {
        let mut allowed: Vec<String> = self.config.agent.subagent_models.clone();
        allowed.extend(self.fallbacks(cli).iter().cloned());
        if !cli.chooses_model() {
            allowed.push(self.config.default_model.clone());
        }
        let config = self.config.clone();
        let cooldowns = self.cooldowns.clone();
        let chains: Mutex<HashMap<String, Arc<FallbackChain>>> = Mutex::default();
        Arc::new(move |name: &str| {
            let mut chains = chains.lock().unwrap_or_else(PoisonError::into_inner);
            if let Some(chain) = chains.get(name) {
                return Ok(chain.clone());
            }
            if !allowed.iter().any(|a| a == name) {
                let offered = match allowed.is_empty() {
                    true => "none".to_string(),
                    false => allowed.join(", "),
                };
                return Err(format!(
                    "model `{name}` was not chosen by the user for this session (models for \
                     sub-agents: {offered}; the user adds more with `agent.subagent_models`); \
                     leave model out to use your own"
                ));
            }
            let model = config::select::named(&config, name).map_err(|e| e.to_string())?;
            let key = api_key(&model).map_err(|e| e.to_string())?;
            let timeouts = config.retry.timeouts();
            let model = chain_model(&model, key, timeouts).map_err(|e| e.to_string())?;
            let policy = config.retry.policy();
            let chain = Arc::new(FallbackChain::sharing(
                vec![model],
                policy,
                cooldowns.clone(),
            ));
            chains.insert(name.to_string(), chain.clone());
            Ok(chain)
        })
    }
}

pub(super) fn chain_model(
    model: &ResolvedModel,
    key: Option<String>,
    timeouts: Timeouts,
) -> Result<ChainModel, LaunchError> {
    Ok(ChainModel {
        name: model.name.clone(),
        provider: build_provider(model, key, timeouts)?,
        context_window: model.context_window,
        max_output_tokens: model.max_output_tokens,
        price: model.price,
    })
}

/// Reads the model's key from the environment. A local server may run without one.
pub(super) fn api_key(model: &ResolvedModel) -> Result<Option<String>, LaunchError> {
    let env = |name: &str| std::env::var(name).ok();
    match model.key_status(&env) {
        KeyStatus::NotNeeded => Ok(None),
        KeyStatus::Available(var) => Ok(std::env::var(var).ok()),
        KeyStatus::Missing(_) if model.is_local() => Ok(None),
        KeyStatus::Missing(var) => Err(LaunchError::MissingKey {
            model: model.name.clone(),
            var,
        }),
    }
}
