//! `mnemo config`: the resolved configuration, the user config file to create when there is
//! none, and the model a session would use (the command line's included) with one request
//! to its server.

use std::io::Write;

use super::CommandError;
use crate::config::{CliOverrides, KeyStatus, select, show};
use crate::host::Loaded;
use crate::llm::reach;

pub async fn config(
    loaded: &Loaded,
    cli: &CliOverrides,
    out: &mut impl Write,
) -> Result<(), CommandError> {
    let env = |name: &str| std::env::var(name).ok();
    write!(
        out,
        "{}",
        show::render(&loaded.config, &loaded.sources, &env)
    )?;
    if let Some(file) = loaded.dirs.user_config_file()
        && !file.exists()
    {
        writeln!(
            out,
            "# no user config file yet: create {} (a [models.NAME] entry and \
             default_model = \"NAME\"; mnemo's set-up panel writes one)",
            file.display()
        )?;
    }
    let model = match select::resolve_model(&loaded.config, cli) {
        Ok(model) => model,
        Err(error) => {
            writeln!(out, "\n# the chosen model cannot be used: {error}")?;
            return Ok(());
        }
    };
    let how = match cli.chooses_model() {
        true => "from the command line",
        false => "default_model",
    };
    let wire = match model.base_url.is_empty() {
        true => model.model.clone(),
        false => format!("{} at {}", model.model, model.base_url),
    };
    writeln!(
        out,
        "\n# the chosen model ({how}): {} ({}, {wire})",
        model.name,
        model.provider.as_str()
    )?;
    let usable = match model.key_status(&env) {
        KeyStatus::Missing(var) if !model.is_local() => {
            writeln!(out, "#   no key: set {var}")?;
            false
        }
        KeyStatus::Missing(_) | KeyStatus::NotNeeded | KeyStatus::Available(_) => true,
    };
    if usable && let Some(url) = model.probe_url() {
        let found = reach::probe(&url, reach::PROBE_TIMEOUT).await;
        writeln!(out, "#   {found}")?;
    }
    Ok(())
}
