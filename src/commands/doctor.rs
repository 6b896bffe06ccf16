//! `mnemo doctor`: checks the set-up a session needs (a working sandbox and its limits, keys
//! for the configured models, a writable data directory, a sound database, the workspace's
//! trust) and lists the latest crash records. Each line says what is wrong and what to do.

use std::io::Write;

use super::CommandError;
use crate::config::trust::Trust;
use crate::config::{KeyStatus, select};
use crate::host::Loaded;

/// How many crash records are listed.
const RECENT_CRASHES: usize = 5;

/// Prints the checks; `Ok(true)` when nothing needs fixing.
pub async fn doctor(loaded: &Loaded, out: &mut impl Write) -> Result<bool, CommandError> {
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

    let env = |name: &str| std::env::var(name).ok();
    let config = &loaded.config;
    for name in config.models.keys() {
        let Ok(model) = select::named(config, name) else {
            continue;
        };
        let is_default = *name == config.default_model;
        let status = model.key_status(&env);
        match (status, is_default) {
            (KeyStatus::Missing(var), true) if !model.is_local() => check(
                out,
                false,
                format!(
                    "the default model {name} has no key: set {var} (or choose another \
                         model)"
                ),
            )?,
            (KeyStatus::Available(var), true) => check(
                out,
                true,
                format!("the default model {name} has its key in {var}"),
            )?,
            (_, true) => check(out, true, format!("the default model {name} needs no key"))?,
            (KeyStatus::Available(var), false) => writeln!(out, "  {name}: key in {var}")?,
            (KeyStatus::Missing(var), false) => writeln!(out, "  {name}: no key ({var} unset)")?,
            (KeyStatus::NotNeeded, false) => writeln!(out, "  {name}: no key needed")?,
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
