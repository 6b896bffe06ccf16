//! The dream cycle's wiring: the [`Dreamer`] a launch configures, for `mnemo dream` and the
//! daemon's nightly run. The cycle itself is planning in `jobs::dream` and knows no launch.

use std::path::PathBuf;

use crate::config::{CliOverrides, ProviderKind, ResolvedModel};
use crate::host::{LaunchError, Loaded};
use crate::jobs::dream_batch::BatchClient;
use crate::jobs::{DreamError, Dreamer};
use crate::llm::ProviderSettings;

fn setup(err: impl Into<LaunchError>) -> DreamError {
    DreamError::Setup(Box::new(err.into()))
}

/// The dreamer a launch configures: `[dream] model` (unless the command line chose one,
/// else the default model), the batch API when `[dream] batch` is on and that model is an
/// Anthropic one, the files in `<data dir>/memory/`.
pub fn from_loaded(loaded: &Loaded, cli: &CliOverrides) -> Result<Dreamer, DreamError> {
    let dream = &loaded.config.dream;
    let (model, chain) = match (&dream.model, cli.chooses_model()) {
        (Some(name), false) => {
            let model = crate::config::select::named(&loaded.config, name).map_err(setup)?;
            let chain = loaded.chain_of(&model).map_err(setup)?;
            (model, chain)
        }
        _ => {
            let model = crate::config::resolve_model(&loaded.config, cli).map_err(setup)?;
            (model, loaded.chain(cli).map_err(setup)?)
        }
    };
    let notes_dir = notes_dir(loaded).ok_or(DreamError::NoDataDir)?;
    let dreamer = Dreamer::new(loaded.store().map_err(setup)?, notes_dir, chain);
    Ok(match (dream.batch, model.provider) {
        (true, ProviderKind::Anthropic) => {
            let settings = batch_settings(&model, loaded.config.retry.timeouts());
            dreamer.with_batch(BatchClient::new(settings, dream.batch_limit()))
        }
        _ => dreamer,
    })
}

/// Where the notes files live: `<data dir>/memory/`, or beside the database without one.
pub fn notes_dir(loaded: &Loaded) -> Option<PathBuf> {
    crate::jobs::dream_files::notes_dir(loaded.dirs.data.as_deref(), loaded.db_path.as_deref())
}

fn batch_settings(model: &ResolvedModel, timeouts: crate::llm::Timeouts) -> ProviderSettings {
    ProviderSettings {
        base_url: model.base_url.clone(),
        model: model.model.clone(),
        // Read from the variable at each request, never kept.
        api_key: None,
        api_key_env: model.api_key_env.clone(),
        timeouts,
    }
}
