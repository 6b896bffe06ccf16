//! `mnemo status`: whether the daemon runs on this data directory, where it logs, and what
//! it has due next.

use std::io::Write;

use super::CommandError;
use crate::launch::{LaunchError, Loaded};
use crate::serve::lock;

pub fn status(loaded: &Loaded, out: &mut impl Write) -> Result<(), CommandError> {
    let data = loaded.dirs.data.as_deref().ok_or(LaunchError::NoDataDir)?;
    match lock::running(data) {
        Some(pid) => writeln!(out, "mnemo serve: running (pid {pid})")?,
        None => writeln!(
            out,
            "mnemo serve: not running; heartbeats and schedules wait until it does \
             (start it with `mnemo serve`)"
        )?,
    }
    writeln!(out, "log: {}", data.join("serve.log").display())?;
    Ok(())
}
