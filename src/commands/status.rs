//! `mnemo status`: whether the daemon runs on this data directory, its live sessions, where
//! it logs, and what it has due next.

use std::io::Write;

use super::CommandError;
use crate::gateway::client::GatewayClient;
use crate::launch::{LaunchError, Loaded};
use crate::serve::lock;

pub async fn status(loaded: &Loaded, out: &mut impl Write) -> Result<(), CommandError> {
    let data = loaded.dirs.data.as_deref().ok_or(LaunchError::NoDataDir)?;
    match lock::running(data) {
        Some(pid) => {
            writeln!(out, "mnemo serve: running (pid {pid})")?;
            let listed = match GatewayClient::connect(data, None).await {
                Ok(client) => client
                    .request(None, serde_json::json!({"op": "list_sessions"}))
                    .await
                    .map_err(|e| e.to_string()),
                Err(err) => Err(err.to_string()),
            };
            match listed {
                Ok(listed) => {
                    let sessions = listed["sessions"].as_array().cloned().unwrap_or_default();
                    writeln!(out, "live sessions: {}", sessions.len())?;
                    for session in sessions {
                        let id = session["session"].as_str().unwrap_or_default();
                        writeln!(out, "  {id}")?;
                    }
                }
                Err(err) => writeln!(out, "live sessions: unknown ({err})")?,
            }
        }
        None => writeln!(
            out,
            "mnemo serve: not running; heartbeats and schedules wait until it does \
             (start it with `mnemo serve`)"
        )?,
    }
    writeln!(out, "log: {}", data.join("serve.log").display())?;
    Ok(())
}
