//! `mnemo capabilities`: see, pin and remove the tools the agent wrote for itself.

use std::io::Write;

use serde_json::Value;

use super::{CommandError, local_time};
use crate::host::Loaded;
use crate::memory::{Capability, CapabilityVersion};

/// The marker of a pinned capability in the list.
const PINNED: &str = "*";

fn unknown(name: &str) -> CommandError {
    CommandError::Usage(format!(
        "there is no capability named `{name}` (`mnemo capabilities list` shows them)"
    ))
}

/// The latest version of every capability, one line each.
pub fn list(loaded: &Loaded, out: &mut impl Write) -> Result<(), CommandError> {
    let capabilities = loaded.store()?.call_blocking(|db| db.list_capabilities())?;
    if capabilities.is_empty() {
        writeln!(out, "No capabilities yet.")?;
        return Ok(());
    }
    let width = capabilities
        .iter()
        .map(|c| c.name.chars().count())
        .max()
        .unwrap_or(0)
        .max("NAME".len());
    writeln!(
        out,
        "  {:<width$}  {:>4}  {:<8}  {:>5}  {:<16}  DESCRIPTION",
        "NAME", "VER", "LANGUAGE", "USES", "LAST USED"
    )?;
    for capability in &capabilities {
        writeln!(
            out,
            "{} {:<width$}  {:>4}  {:<8}  {:>5}  {:<16}  {}",
            if capability.pinned { PINNED } else { " " },
            capability.name,
            capability.version,
            capability.language,
            capability.access_count,
            capability.last_access.map_or("never".into(), local_time),
            capability.description.lines().next().unwrap_or(""),
        )?;
    }
    if capabilities.iter().any(|c| c.pinned) {
        writeln!(out, "({PINNED} pinned)")?;
    }
    Ok(())
}

/// Every field of one capability (its latest version, or `version`), code included, and its
/// history.
pub fn show(
    loaded: &Loaded,
    name: &str,
    version: Option<u32>,
    out: &mut impl Write,
) -> Result<(), CommandError> {
    let wanted = name.to_owned();
    let (capability, versions) = loaded.store()?.call_blocking(move |db| {
        let capability = match version {
            Some(version) => db.capability_version(&wanted, version)?,
            None => db.capability(&wanted)?,
        };
        Ok((capability, db.capability_versions(&wanted)?))
    })?;
    let Some(capability) = capability else {
        return Err(match (version, versions.last()) {
            (Some(version), Some(last)) => CommandError::Usage(format!(
                "capability `{name}` has no version {version} (the latest is {})",
                last.version
            )),
            _ => unknown(name),
        });
    };
    write_capability(&capability, &versions, out)
}

fn write_capability(
    capability: &Capability,
    versions: &[CapabilityVersion],
    out: &mut impl Write,
) -> Result<(), CommandError> {
    let latest = versions.last().map_or(capability.version, |v| v.version);
    let pinned = if capability.pinned { ", pinned" } else { "" };
    writeln!(
        out,
        "{} — version {} of {latest}{pinned}\n",
        capability.name, capability.version
    )?;
    writeln!(out, "{}\n", capability.description.trim_end())?;
    writeln!(out, "language:  {}", capability.language)?;
    writeln!(
        out,
        "sha256:    {} (what a question to allow a call names)",
        crate::capabilities::code_hash(&capability.code)
    )?;
    if !capability.tags.is_empty() {
        writeln!(out, "tags:      {}", capability.tags.join(", "))?;
    }
    let last = capability
        .last_access
        .map_or("never used".into(), |at| format!("last {}", local_time(at)));
    writeln!(out, "uses:      {} ({last})", capability.access_count)?;
    writeln!(
        out,
        "created:   {}{}",
        local_time(capability.created_at),
        provenance(capability.session_id.as_deref(), capability.turn)
    )?;
    writeln!(
        out,
        "\ninput schema:\n{}",
        pretty(&capability.input_schema)?
    )?;
    if !capability.examples.is_empty() {
        writeln!(out, "\nexamples:")?;
        for example in &capability.examples {
            writeln!(out, "{}", pretty(example)?)?;
        }
    }
    writeln!(out, "\ncode:\n{}", capability.code.trim_end())?;
    writeln!(out, "\nversions:")?;
    for version in versions {
        let shown = if version.version == capability.version {
            "  (shown)"
        } else {
            ""
        };
        writeln!(
            out,
            "  v{:<3} {}  {:>6} bytes{}{shown}",
            version.version,
            local_time(version.created_at),
            version.code_bytes,
            provenance(version.session_id.as_deref(), version.turn)
        )?;
    }
    Ok(())
}

/// ` in session ID, turn N` for what a session wrote; empty otherwise.
fn provenance(session_id: Option<&str>, turn: Option<u64>) -> String {
    match (session_id, turn) {
        (Some(id), Some(turn)) => format!(" in session {id}, turn {turn}"),
        (Some(id), None) => format!(" in session {id}"),
        (None, _) => String::new(),
    }
}

fn pretty(value: &Value) -> Result<String, CommandError> {
    serde_json::to_string_pretty(value).map_err(|err| CommandError::Output(err.into()))
}

/// Removes every version of a capability.
pub fn remove(loaded: &Loaded, name: &str, out: &mut impl Write) -> Result<(), CommandError> {
    let wanted = name.to_owned();
    let versions = loaded.store()?.call_blocking(move |db| {
        let versions = db.capability_versions(&wanted)?.len();
        db.remove_capability(&wanted)?;
        Ok(versions)
    })?;
    if versions == 0 {
        return Err(unknown(name));
    }
    let plural = if versions == 1 { "" } else { "s" };
    writeln!(
        out,
        "removed capability {name} ({versions} version{plural})"
    )?;
    Ok(())
}

/// Pins (`pinned`) or unpins a capability.
pub fn pin(
    loaded: &Loaded,
    name: &str,
    pinned: bool,
    out: &mut impl Write,
) -> Result<(), CommandError> {
    let wanted = name.to_owned();
    let found = loaded
        .store()?
        .call_blocking(move |db| db.pin_capability(&wanted, pinned))?;
    if !found {
        return Err(unknown(name));
    }
    let done = if pinned { "pinned" } else { "unpinned" };
    writeln!(out, "{done} capability {name}")?;
    Ok(())
}
