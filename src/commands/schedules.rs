//! `mnemo schedule`: the schedules the agent made and the heartbeats `mnemo serve` runs, and
//! removing a schedule.

use std::io::Write;

use super::CommandError;
use crate::host::Loaded;
use crate::host::daemon as serve_lock;
use crate::jobs::{heartbeat, listing};

/// Schedules, heartbeats (with the files that cannot be read) and whether `mnemo serve` runs.
pub fn list(loaded: &Loaded, out: &mut impl Write) -> Result<(), CommandError> {
    let (rows, runs) = loaded
        .store()?
        .call_blocking(|db| Ok((db.list_schedules()?, db.job_runs()?)))?;
    let found = heartbeat::load(&loaded.dirs, std::slice::from_ref(&loaded.workspace));
    let serving = loaded
        .dirs
        .data
        .as_deref()
        .is_some_and(serve_lock::serve_running);
    let now = chrono::Utc::now();
    writeln!(
        out,
        "{}",
        listing::overview(&rows, &runs, &found, serving, now)
    )?;
    Ok(())
}

/// Deletes schedule `id`.
pub fn remove(loaded: &Loaded, id: i64, out: &mut impl Write) -> Result<(), CommandError> {
    match loaded
        .store()?
        .call_blocking(move |db| db.delete_schedule(id))?
    {
        true => {
            if let Some(data) = loaded.dirs.data.as_deref()
                && let Ok(runtime) = tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
            {
                runtime.block_on(crate::gateway::client::tell_jobs_changed(data));
            }
            Ok(writeln!(out, "Deleted schedule #{id}.")?)
        }
        false => Err(CommandError::Usage(format!(
            "there is no schedule #{id} (`mnemo schedule list` shows them)"
        ))),
    }
}
