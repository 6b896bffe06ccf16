//! Schedules and heartbeats as people read them: `mnemo schedule list`, `/schedule` in the
//! TUI and the `schedule_list` tool print the same text.

use std::collections::HashMap;

use chrono::{DateTime, Utc};

use super::heartbeat::Heartbeats;
use super::job::Job;
use super::plan::{JobState, next_run};
use super::schedule::{describe, show_time};
use crate::memory::schedules::{JobRun, ScheduleRow};

/// Every schedule with its next and last run; `runs` are the run records.
pub fn schedules(rows: &[ScheduleRow], runs: &[JobRun]) -> String {
    if rows.is_empty() {
        return "No schedules (the agent makes them with schedule_create).".into();
    }
    let runs = by_job(runs);
    let mut text = format!("Schedules ({}):", rows.len());
    for row in rows {
        let job = super::schedule::job(row);
        let run = job
            .as_ref()
            .ok()
            .and_then(|j| runs.get(j.key.as_str()).copied());
        let timing = match &job {
            Ok(job) => times(job, run),
            Err(e) => format!(" · cannot run: {e}"),
        };
        let prompt = row.prompt.lines().next().unwrap_or_default();
        text.push_str(&format!(
            "\n  #{}  {}{timing}\n      in {}: {prompt}",
            row.id,
            describe(&row.when),
            row.workspace
        ));
    }
    text
}

/// Every heartbeat found, the files that could not be read, and the workspaces whose
/// heartbeats wait for trust.
pub fn heartbeats(found: &Heartbeats, runs: &[JobRun], now: DateTime<Utc>) -> String {
    let runs = by_job(runs);
    let mut text = match found.found.is_empty() {
        true => "No heartbeats (Markdown files in <config dir>/heartbeat/ or .mnemo/heartbeat/)."
            .to_string(),
        false => format!("Heartbeats ({}):", found.found.len()),
    };
    for beat in &found.found {
        let job = beat.job(now);
        let state = match beat.enabled {
            true => times(&job, runs.get(job.key.as_str()).copied()),
            false => " · disabled".into(),
        };
        text.push_str(&format!(
            "\n  {}{state}\n      {} → {}",
            beat.name,
            beat.path.display(),
            beat.workspace.display()
        ));
    }
    for error in &found.errors {
        text.push_str(&format!("\n  ✗ {error}"));
    }
    for workspace in &found.untrusted {
        text.push_str(&format!(
            "\n  ! {}: heartbeats wait until the workspace is trusted (`mnemo trust`)",
            workspace.display()
        ));
    }
    text
}

/// Schedules, heartbeats, and a word when `mnemo serve` does not run (`serving`): what
/// `mnemo schedule list` and `/schedule` show.
pub fn overview(
    rows: &[ScheduleRow],
    runs: &[JobRun],
    found: &Heartbeats,
    serving: bool,
    now: DateTime<Utc>,
) -> String {
    let mut text = format!(
        "{}\n{}",
        schedules(rows, runs),
        heartbeats(found, runs, now)
    );
    if !serving {
        text.push_str("\nmnemo serve is not running: nothing runs until it is started.");
    }
    text
}

fn by_job(runs: &[JobRun]) -> HashMap<&str, &JobRun> {
    runs.iter().map(|r| (r.job.as_str(), r)).collect()
}

/// ` · next … · last … (status)` for a job.
fn times(job: &Job, run: Option<&JobRun>) -> String {
    let state = JobState {
        since: job.since,
        last_run: run
            .and_then(|r| r.last_run)
            .and_then(DateTime::from_timestamp_millis),
        running: false,
    };
    let mut text = match next_run(&job.timing, &state) {
        Some(next) => format!(" · next {}", show_time(next.timestamp_millis())),
        None => " · done".to_string(),
    };
    if let Some(run) = run {
        if let Some((since, _)) = run.running {
            text.push_str(&format!(" · running since {}", show_time(since)));
        } else if let Some(last) = run.last_run {
            let status = run.last_status.as_deref().unwrap_or("unfinished");
            text.push_str(&format!(" · last {} ({status})", show_time(last)));
        }
    }
    text
}
