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
            let session = match &run.last_session {
                Some(id) => format!(" in session {}", id.chars().take(8).collect::<String>()),
                None => String::new(),
            };
            // A failure's reason comes last, after where to read the whole run.
            let outcome = match status.split_once(": ") {
                Some((word, reason)) => format!("{word}{session}: {reason}"),
                None => format!("{status}{session}"),
            };
            text.push_str(&format!(" · last {} ({outcome})", show_time(last)));
        }
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::memory::schedules::StoredWhen;

    #[test]
    fn a_schedule_shows_its_last_run_with_status_and_session_or_that_it_runs() {
        let row = |id, when| ScheduleRow {
            id,
            created_at: 0,
            session_id: None,
            workspace: "/w".into(),
            when,
            prompt: "check the deploy\nand more".into(),
            deliver: Vec::new(),
            rights: Default::default(),
        };
        let rows = [
            row(1, StoredWhen::Cron("0 9 * * *".into())),
            row(2, StoredWhen::Once(1_000)),
            row(3, StoredWhen::Cron("0 9 * * *".into())),
            row(4, StoredWhen::Cron("0 9 * * *".into())),
        ];
        let runs = [
            JobRun {
                job: "schedule:1".into(),
                last_run: Some(1_000),
                last_status: Some("reported".into()),
                last_session: Some("0f3c9a7e-5b1d".into()),
                running: None,
            },
            JobRun {
                job: "schedule:2".into(),
                last_run: Some(1_000),
                ..JobRun::default()
            },
            JobRun {
                job: "schedule:3".into(),
                last_run: Some(1_000),
                running: Some((1_000, 42)),
                ..JobRun::default()
            },
            JobRun {
                job: "schedule:4".into(),
                last_run: Some(1_000),
                last_status: Some("failed: the server at 127.0.0.1:8080 does not answer".into()),
                last_session: Some("9a8b7c6d-0000".into()),
                running: None,
            },
        ];
        let text = schedules(&rows, &runs);
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines[0], "Schedules (4):");
        assert!(
            lines[1].ends_with("(reported in session 0f3c9a7e)"),
            "{text}"
        );
        assert_eq!(lines[2], "      in /w: check the deploy");
        assert!(lines[3].contains("#2  once at ") && lines[3].contains(" · done · last "));
        assert!(lines[3].ends_with("(unfinished)"), "{text}");
        assert!(lines[5].contains(" · running since "), "{text}");
        assert!(
            lines[7].contains(" · last ")
                && lines[7].ends_with(
                    "(failed in session 9a8b7c6d: the server at 127.0.0.1:8080 does not answer)"
                ),
            "{text}"
        );
    }
}
