//! `mnemo dream`: runs the dream cycle now over the archive entries since the last dream.

use std::io::Write;

use super::CommandError;
use crate::config::CliOverrides;
use crate::host::Loaded;

pub async fn dream(
    loaded: &Loaded,
    cli: &CliOverrides,
    out: &mut impl Write,
) -> Result<(), CommandError> {
    // Asked before the model is set up: with nothing new, no key is needed.
    let pending = loaded.store()?.call(|db| db.dream_pending()).await?;
    if pending == 0 {
        writeln!(
            out,
            "nothing new to dream about: no archive entries since the last dream"
        )?;
        return Ok(());
    }
    let dreamer = crate::serve::dreamer::from_loaded(loaded, cli)?;
    let report = dreamer.run().await?;
    for notice in &report.notices {
        writeln!(out, "note: {notice}")?;
    }
    let dir = dreamer.notes_dir();
    match report.version {
        Some(version) => writeln!(
            out,
            "wrote version #{version} of MEMORY.md and USER.md in {} from {} archive entr{} \
             ({} batch{}, {} call{} through the batch API)",
            dir.display(),
            report.entries,
            if report.entries == 1 { "y" } else { "ies" },
            report.batches,
            if report.batches == 1 { "" } else { "es" },
            report.batched_calls,
            if report.batched_calls == 1 { "" } else { "s" },
        )?,
        None if report.skipped > 0 => writeln!(
            out,
            "wrote no notes: {} archive entr{} skipped (see the note above)",
            report.skipped,
            if report.skipped == 1 {
                "y was"
            } else {
                "ies were"
            },
        )?,
        None => writeln!(out, "nothing new to dream about")?,
    }
    Ok(())
}
