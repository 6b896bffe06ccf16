//! Turns a workspace and command-line overrides into a ready session: config, model, key,
//! provider, tools and system prompt. Every front end starts here.

use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::agent::{Session, SessionSettings, prompt};
use crate::config::{
    self, CliOverrides, Config, ConfigError, ConfigSources, Dirs, KeyStatus, ResolvedModel,
};
use crate::llm::factory::build_provider;
use crate::llm::scripted::ScriptLoadError;
use crate::tools::builtin::builtin_tools;

#[derive(Debug, thiserror::Error)]
pub enum LaunchError {
    #[error(transparent)]
    Config(#[from] ConfigError),
    #[error(
        "no API key for model `{model}`: set {var} in the environment, or choose another \
         model with --model (`mnemo config` shows which models have a key)"
    )]
    MissingKey { model: String, var: String },
    #[error(transparent)]
    Script(#[from] ScriptLoadError),
    #[error("cannot use workspace {path}")]
    Workspace {
        path: PathBuf,
        source: std::io::Error,
    },
}

/// The loaded configuration, before a model is chosen.
pub struct Loaded {
    pub config: Config,
    pub sources: ConfigSources,
    pub workspace: PathBuf,
}

pub fn load_config(workspace: &Path, cli: &CliOverrides) -> Result<Loaded, LaunchError> {
    let workspace = workspace
        .canonicalize()
        .map_err(|source| LaunchError::Workspace {
            path: workspace.to_path_buf(),
            source,
        })?;
    let env = |name: &str| std::env::var(name).ok();
    let (config, sources) = config::load(&Dirs::from_env(), &workspace, &env, cli)?;
    Ok(Loaded {
        config,
        sources,
        workspace,
    })
}

/// Resolves the model, checks its key and builds the session.
pub async fn prepare_session(loaded: &Loaded, cli: &CliOverrides) -> Result<Session, LaunchError> {
    let model = config::resolve_model(&loaded.config, cli)?;
    let api_key = api_key(&model)?;
    let provider = build_provider(&model, api_key)?;
    let agent = &loaded.config.agent;
    let settings = SessionSettings {
        workspace: loaded.workspace.clone(),
        model_name: model.name.clone(),
        system_prompt: prompt::system_prompt(&loaded.workspace).await,
        max_steps: agent.max_steps,
        repeat_limit: agent.repeat_limit,
        tool_timeout: Duration::from_secs(agent.tool_timeout_secs),
        max_output_tokens: model.max_output_tokens,
        context_window: model.context_window,
        price: model.price,
    };
    Ok(Session::new(settings, provider, builtin_tools()))
}

/// Reads the model's key from the environment. A local server may run without one.
fn api_key(model: &ResolvedModel) -> Result<Option<String>, LaunchError> {
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
