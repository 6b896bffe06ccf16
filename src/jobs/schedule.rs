//! Schedules the agent made, between the words of the schedule tools and the stored row: a
//! `when` plus `repeat` becomes what is stored, and a stored row becomes a job.

use std::time::Duration;

use chrono::{DateTime, Utc};

use super::cron::CronLine;
use super::delivery::Channel;
use super::job::{Job, Source};
use super::plan::{Rule, Timing};
use super::timing::{When, Zone};
use crate::config::Config;
use crate::memory::schedules::{MakerRights, ScheduleRow, StoredWhen, schedule_job_key};
use crate::protocol::ApprovalMode;
use crate::sandbox::SandboxPolicy;

/// What to store for `when` given at `now`. A cron line repeats by nature; `repeat: false`
/// keeps only its next occurrence. `in 2h` with `repeat` runs every two hours from then on.
pub fn stored_when(when: When, repeat: bool, now: DateTime<Utc>) -> Result<StoredWhen, String> {
    let millis = |at: DateTime<Utc>| at.timestamp_millis();
    match (when, repeat) {
        (When::Cron(line), true) => Ok(StoredWhen::Cron(line.as_str().to_string())),
        (When::Cron(line), false) => Zone::Local
            .next_cron(&line, now)
            .map(|at| StoredWhen::Once(millis(at)))
            .ok_or_else(|| format!("the cron line `{}` never matches again", line.as_str())),
        (When::At(at), false) if at <= now => Err(format!(
            "{} is in the past (now is {})",
            at.to_rfc3339(),
            now.to_rfc3339()
        )),
        (When::At(at), false) => Ok(StoredWhen::Once(millis(at))),
        (When::At(_), true) => Err(
            "an ISO time happens once; to repeat, give a cron line (`0 9 * * *`) or a delay \
             (`in 2h`)"
                .into(),
        ),
        (When::In(delay), repeat) => {
            let first = now + chrono::Duration::from_std(delay).map_err(|e| e.to_string())?;
            Ok(match repeat {
                true => StoredWhen::Every {
                    secs: delay.as_secs(),
                    first: millis(first),
                },
                false => StoredWhen::Once(millis(first)),
            })
        }
    }
}

/// How a schedule's timing reads to people.
pub fn describe(when: &StoredWhen) -> String {
    match when {
        StoredWhen::Cron(line) => format!("cron `{line}`"),
        StoredWhen::Every { secs, .. } => format!("every {}", human_duration(*secs)),
        StoredWhen::Once(at) => format!("once at {}", show_time(*at)),
    }
}

fn human_duration(secs: u64) -> String {
    let (d, h, m, s) = (secs / 86_400, secs / 3600 % 24, secs / 60 % 60, secs % 60);
    let parts: Vec<String> = [(d, "d"), (h, "h"), (m, "m"), (s, "s")]
        .into_iter()
        .filter(|(n, _)| *n > 0)
        .map(|(n, unit)| format!("{n}{unit}"))
        .collect();
    parts.concat()
}

/// A stored time on the machine's clock, to the minute.
pub fn show_time(millis: i64) -> String {
    DateTime::from_timestamp_millis(millis)
        .map(|t| {
            t.with_timezone(&chrono::Local)
                .format("%Y-%m-%d %H:%M %Z")
                .to_string()
        })
        .unwrap_or_else(|| "(unknown time)".into())
}

/// The job that runs a stored schedule.
pub fn job(row: &ScheduleRow) -> Result<Job, String> {
    let time = |millis: i64| {
        DateTime::from_timestamp_millis(millis).ok_or_else(|| format!("bad time {millis}"))
    };
    let (rule, one_shot) = match &row.when {
        StoredWhen::Cron(line) => (Rule::Cron(CronLine::parse(line)?), false),
        StoredWhen::Every { secs, first } => (
            Rule::Every {
                every: Duration::from_secs((*secs).max(1)),
                first: Some(time(*first)?),
            },
            false,
        ),
        StoredWhen::Once(at) => (Rule::Once(time(*at)?), true),
    };
    let prompt = format!(
        "This is schedule #{id} ({when}), which an earlier session set up; mnemo serve runs it \
         while nobody watches, so nobody can answer approval questions and anything that needs \
         approval is denied. Do what it asks and reply with what the person should read:\n\n{p}",
        id = row.id,
        when = describe(&row.when),
        p = row.prompt
    );
    Ok(Job {
        key: schedule_job_key(row.id),
        label: format!("schedule #{}", row.id),
        source: Source::Schedule {
            id: row.id,
            one_shot,
        },
        timing: Timing {
            rule,
            hours: None,
            zone: Zone::Local,
        },
        since: time(row.created_at)?,
        workspace: row.workspace.clone().into(),
        model: None,
        prompt,
        deliver: std::iter::once(Ok(Channel::Log))
            .chain(row.deliver.iter().map(|name| Channel::parse(name)))
            .collect::<Result<_, _>>()?,
        rights: Some(row.rights),
    })
}

fn approval_rank(mode: ApprovalMode) -> u8 {
    match mode {
        ApprovalMode::ReadOnly => 0,
        ApprovalMode::Ask => 1,
        ApprovalMode::Auto => 2,
        ApprovalMode::Full => 3,
    }
}

fn policy_rank(policy: SandboxPolicy) -> u8 {
    match policy {
        SandboxPolicy::ReadOnly => 0,
        SandboxPolicy::WorkspaceWrite => 1,
        SandboxPolicy::FullAccess => 2,
    }
}

/// Lowers the daemon's `config` for a run to what the schedule's maker had: the smaller
/// approval mode and sandbox policy of the two, the network only when both had it.
pub fn limit_to(config: &mut Config, maker: &MakerRights) {
    if approval_rank(maker.approval) < approval_rank(config.approval) {
        config.approval = maker.approval;
    }
    if policy_rank(maker.sandbox) < policy_rank(config.sandbox.policy) {
        config.sandbox.policy = maker.sandbox;
    }
    config.sandbox.network &= maker.network;
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::TimeZone;

    #[test]
    fn when_and_repeat_become_what_is_stored() -> Result<(), String> {
        let now = Utc
            .with_ymd_and_hms(2026, 11, 24, 7, 0, 0)
            .single()
            .ok_or("t")?;
        let utc = Zone::utc();
        let two_hours = When::parse("in 2h", utc)?;
        let later = now.timestamp_millis() + 7_200_000;
        assert_eq!(
            stored_when(two_hours.clone(), false, now)?,
            StoredWhen::Once(later)
        );
        let every = stored_when(two_hours, true, now)?;
        assert_eq!(
            every,
            StoredWhen::Every {
                secs: 7200,
                first: later
            }
        );
        assert_eq!(describe(&every), "every 2h");
        let cron = When::parse("0 9 * * *", utc)?;
        assert_eq!(
            stored_when(cron.clone(), true, now)?,
            StoredWhen::Cron("0 9 * * *".into())
        );
        assert!(matches!(
            stored_when(cron, false, now)?,
            StoredWhen::Once(_)
        ));
        let past = When::parse("2026-11-23T09:00:00Z", utc)?;
        assert!(stored_when(past, false, now).is_err_and(|e| e.contains("in the past")));
        let iso = When::parse("2026-11-25T09:00:00Z", utc)?;
        assert!(stored_when(iso, true, now).is_err_and(|e| e.contains("happens once")));
        Ok(())
    }

    #[test]
    fn a_run_gets_the_lower_of_the_daemon_s_and_the_maker_s_rights() {
        let daemon = || {
            let mut config = Config {
                approval: ApprovalMode::Full,
                ..Config::default()
            };
            config.sandbox.policy = SandboxPolicy::FullAccess;
            config.sandbox.network = true;
            config
        };
        let maker = MakerRights {
            approval: ApprovalMode::Ask,
            sandbox: SandboxPolicy::WorkspaceWrite,
            network: false,
            trusted: true,
        };
        let mut config = daemon();
        limit_to(&mut config, &maker);
        assert_eq!(config.approval, ApprovalMode::Ask);
        assert_eq!(config.sandbox.policy, SandboxPolicy::WorkspaceWrite);
        assert!(!config.sandbox.network);
        // A daemon stricter than the maker keeps its own settings.
        let mut strict = Config {
            approval: ApprovalMode::ReadOnly,
            ..Config::default()
        };
        let full = MakerRights {
            approval: ApprovalMode::Full,
            sandbox: SandboxPolicy::FullAccess,
            network: true,
            trusted: true,
        };
        limit_to(&mut strict, &full);
        assert_eq!(strict.approval, ApprovalMode::ReadOnly);
        assert_eq!(strict.sandbox.policy, SandboxPolicy::WorkspaceWrite);
        assert!(!strict.sandbox.network);
        let mut old = daemon();
        limit_to(&mut old, &MakerRights::default());
        assert_eq!(old.approval, ApprovalMode::ReadOnly);
        assert_eq!(old.sandbox.policy, SandboxPolicy::ReadOnly);
    }

    #[test]
    fn a_schedule_reports_to_the_log_and_the_channels_it_names() -> Result<(), String> {
        let row = |deliver: &[&str]| ScheduleRow {
            id: 3,
            created_at: 0,
            session_id: None,
            workspace: "/w".into(),
            when: StoredWhen::Cron("0 9 * * *".into()),
            prompt: "check the deploy".into(),
            deliver: deliver.iter().map(|d| d.to_string()).collect(),
            rights: MakerRights::default(),
        };
        assert_eq!(job(&row(&[]))?.deliver, [Channel::Log]);
        assert_eq!(
            job(&row(&["telegram:42"]))?.deliver,
            [Channel::Log, Channel::Telegram { chat: Some(42) }]
        );
        let pigeon = job(&row(&["pigeon"])).map(|j| j.deliver);
        assert!(pigeon.is_err_and(|e| e.contains("unknown delivery channel `pigeon`")));
        Ok(())
    }
}
