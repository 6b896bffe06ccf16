//! `mnemo doctor`: checks the set-up a session needs (a working sandbox and its limits, the
//! chosen model's key and whether its server answers, keys for the other configured models,
//! a writable data directory, a sound database, the workspace's trust) and lists the latest
//! crash records. Each line says what is wrong and what to do.

use std::io::Write;

use super::CommandError;
use crate::config::trust::Trust;
use crate::config::{CliOverrides, KeyStatus, select};
use crate::host::Loaded;
use crate::llm::reach;

/// How many crash records are listed.
const RECENT_CRASHES: usize = 5;

/// Prints the checks; `Ok(true)` when nothing needs fixing. The model checked is the one a
/// session would use: `cli` (`--model`, `--provider`, `--base-url`) over the config.
pub async fn doctor(
    loaded: &Loaded,
    cli: &CliOverrides,
    out: &mut impl Write,
) -> Result<bool, CommandError> {
    let mut healthy = true;
    let mut check = |out: &mut dyn Write, ok: bool, text: String| -> std::io::Result<()> {
        healthy &= ok;
        let mark = if ok { "✓" } else { "✗" };
        writeln!(out, "{mark} {text}")
    };
    match crate::sandbox::availability().await {
        Ok(()) => check(out, true, "the sandbox works".into())?,
        Err(error) => check(out, false, format!("the sandbox does not work: {error}"))?,
    }
    let root = {
        // SAFETY: geteuid has no preconditions and cannot fail.
        unsafe { libc::geteuid() == 0 }
    };
    let limits = match (crate::sandbox::cgroup::available(), root) {
        (true, _) => "process and memory limits apply per command (a cgroup each)".to_string(),
        (false, false) => "process and memory limits apply inside the sandbox".to_string(),
        (false, true) => "running as root without a writable cgroup: the process limit does \
                          not bind (memory is limited per process)"
            .to_string(),
    };
    writeln!(out, "  {limits}")?;
    let section = &loaded.config.sandbox;
    let network = match (section.network, section.allow_domains.is_empty()) {
        (true, _) => "commands reach the network ([sandbox] network = true)".to_string(),
        (false, true) => "commands have no network; [sandbox] allow_domains opens it for the \
                          domains you list"
            .to_string(),
        (false, false) => format!(
            "commands reach only {} through mnemo's proxy",
            section.allow_domains
        ),
    };
    writeln!(out, "  {network}")?;
    writeln!(out, "  {}", loaded.config.web.describe())?;

    let env = |name: &str| std::env::var(name).ok();
    let config = &loaded.config;
    let chosen = match select::resolve_model(config, cli) {
        Ok(model) => Some(model),
        Err(error) => {
            check(
                out,
                false,
                format!("the chosen model cannot be used: {error}"),
            )?;
            None
        }
    };
    if let Some(model) = &chosen {
        let name = &model.name;
        let which = match cli.chooses_model() {
            true => format!("the model {name} (from the command line)"),
            false => format!("the default model {name}"),
        };
        let usable = match model.key_status(&env) {
            KeyStatus::Missing(var) if !model.is_local() => {
                let text = format!("{which} has no key: set {var} (or choose another model)");
                check(out, false, text)?;
                false
            }
            KeyStatus::Available(var) => {
                check(out, true, format!("{which} has its key in {var}"))?;
                true
            }
            KeyStatus::Missing(_) | KeyStatus::NotNeeded => {
                check(out, true, format!("{which} needs no key"))?;
                true
            }
        };
        // One request, bounded: a server that is not running is said before a session
        // finds out.
        if usable && let Some(url) = model.probe_url() {
            let found = reach::probe(&url, reach::PROBE_TIMEOUT).await;
            match found.answers() {
                true => check(out, true, found.to_string())?,
                false => check(
                    out,
                    false,
                    format!("{found}: start it, or choose another model (mnemo config)"),
                )?,
            }
        }
    }
    for name in config.models.keys() {
        if chosen.as_ref().is_some_and(|model| model.name == *name) {
            continue;
        }
        let Ok(model) = select::named(config, name) else {
            continue;
        };
        match model.key_status(&env) {
            KeyStatus::Available(var) => writeln!(out, "  {name}: key in {var}")?,
            KeyStatus::Missing(var) => writeln!(out, "  {name}: no key ({var} unset)")?,
            KeyStatus::NotNeeded => writeln!(out, "  {name}: no key needed")?,
        }
    }

    // Not a failure: recall works by keyword without a model.
    match loaded.embedder() {
        Some(embedder) => check(
            out,
            true,
            format!("recall by meaning uses {}", embedder.model_id()),
        )?,
        None => writeln!(out, "  {}", crate::memory::embed::INSTALL_HINT)?,
    }

    match &loaded.dirs.data {
        Some(dir) => {
            let probe = dir.join(format!(".doctor-{}", std::process::id()));
            let written = std::fs::create_dir_all(dir)
                .and_then(|()| std::fs::write(&probe, b"ok"))
                .and_then(|()| std::fs::remove_file(&probe));
            match written {
                Ok(()) => check(
                    out,
                    true,
                    format!("the data directory {} is writable", dir.display()),
                )?,
                Err(e) => check(
                    out,
                    false,
                    format!("cannot write the data directory {}: {e}", dir.display()),
                )?,
            }
        }
        None => check(
            out,
            false,
            "no data directory is known; set MNEMO_DATA_DIR".into(),
        )?,
    }

    match loaded.store() {
        Ok(store) => match store.call(|db| db.integrity_check()).await {
            Ok(answer) if answer == "ok" => check(out, true, "the database is sound".into())?,
            Ok(answer) => check(out, false, format!("the database is damaged: {answer}"))?,
            Err(e) => check(out, false, format!("the database cannot be checked: {e}"))?,
        },
        Err(e) => check(out, false, format!("the database cannot be opened: {e}"))?,
    }

    match &loaded.sources.workspace_trust {
        Some(Trust::Trusted) => writeln!(out, "  this workspace is trusted")?,
        Some(_) if !loaded.sources.ignored.is_empty() => {
            let warning = loaded.sources.ignored_warning().unwrap_or_default();
            writeln!(out, "  {warning}")?;
        }
        _ => {}
    }

    let crashes = loaded
        .dirs
        .data
        .as_deref()
        .map(|dir| crate::crash::recent(&crate::crash::crash_dir(dir), RECENT_CRASHES))
        .unwrap_or_default();
    match crashes.is_empty() {
        true => writeln!(out, "no crash records")?,
        false => {
            writeln!(out, "latest crash records:")?;
            for (path, record) in crashes {
                writeln!(
                    out,
                    "  {}  {}: {}\n    {}",
                    record.time,
                    record.component,
                    record.message,
                    path.display()
                )?;
            }
        }
    }
    Ok(healthy)
}
