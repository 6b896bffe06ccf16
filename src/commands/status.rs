//! `mnemo status`: whether the daemon runs on this data directory, its live sessions, where
//! it logs, and what it has due next.

use std::io::Write;

use super::CommandError;
use crate::gateway::client::GatewayClient;
use crate::host::daemon as lock;
use crate::host::{LaunchError, Loaded};
use crate::jobs::{heartbeat, listing};
use crate::serve::nightly;

pub async fn status(loaded: &Loaded, out: &mut impl Write) -> Result<(), CommandError> {
    let data = loaded.dirs.data.as_deref().ok_or(LaunchError::NoDataDir)?;
    match lock::running(data) {
        Some(pid) => {
            writeln!(out, "mnemo serve: running (pid {pid})")?;
            let listed = match GatewayClient::connect(data, Default::default()).await {
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
    telegram(loaded, out).await?;
    due_next(loaded, out).await
}

/// The Telegram channel's line: off, or what it last said about itself and its chats.
async fn telegram(loaded: &Loaded, out: &mut impl Write) -> Result<(), CommandError> {
    if !loaded.config.telegram.enabled {
        return Ok(writeln!(out, "telegram: disabled")?);
    }
    let store = loaded.store()?;
    let (state, chats) = store
        .call(|db| Ok((db.telegram_state()?, db.paired_chats()?.len())))
        .await?;
    let state = state.unwrap_or_else(|| "has not run yet".into());
    writeln!(out, "telegram: {state} ({chats} paired chats)")?;
    Ok(())
}

/// The schedules and heartbeats with their next runs, and the next dream.
async fn due_next(loaded: &Loaded, out: &mut impl Write) -> Result<(), CommandError> {
    let store = loaded.store()?;
    let (rows, runs, pending) = store
        .call(|db| Ok((db.list_schedules()?, db.job_runs()?, db.dream_pending()?)))
        .await?;
    let (dirs, workspace) = (loaded.dirs.clone(), loaded.workspace.clone());
    let found = tokio::task::spawn_blocking(move || {
        heartbeat::load(&dirs, std::slice::from_ref(&workspace))
    })
    .await
    .unwrap_or_default();
    let serving = loaded.dirs.data.as_deref().is_some_and(lock::serve_running);
    let now = chrono::Utc::now();
    writeln!(
        out,
        "\n{}",
        listing::overview(&rows, &runs, &found, serving, now)
    )?;
    let wanted = loaded.config.dream.min_entries;
    let night = nightly::next_dream(chrono::Local::now()).format("%Y-%m-%d %H:%M");
    let dream = match pending >= wanted {
        true => format!("next dream: {night} ({pending} new archive entries)"),
        false => format!(
            "next dream: once {wanted} archive entries are new ({pending} now), at night ({night})"
        ),
    };
    writeln!(out, "{dream}")?;
    Ok(())
}
