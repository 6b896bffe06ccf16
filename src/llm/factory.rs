//! Builds the provider for a resolved model entry.

use std::sync::Arc;

use super::anthropic::AnthropicProvider;
use super::openai::OpenAiProvider;
use super::scripted::{ScriptLoadError, ScriptedProvider};
use super::{Provider, ProviderSettings, Timeouts};
use crate::config::{ProviderKind, ResolvedModel};

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
    Ok(match model.provider {
        ProviderKind::Anthropic => Arc::new(AnthropicProvider::new(settings)),
        ProviderKind::OpenAi => Arc::new(OpenAiProvider::new(settings)),
        ProviderKind::Scripted => {
            let path = model.script.clone().unwrap_or_default();
            Arc::new(ScriptedProvider::load(&path)?)
        }
    })
}
