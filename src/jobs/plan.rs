//! The decision core of `mnemo serve`, without IO: given every job's rule, when it last ran
//! and whether it is running, and the time now, say which jobs are due and when the next one
//! will be, so that the scheduler sleeps until exactly then. After downtime a job whose slots
//! were missed is due once (its next slot counts from its last run, not from each missed
//! slot); a job still running is skipped; a one-shot job that ran is done.

use std::time::Duration;

use chrono::{DateTime, Utc};

use super::cron::CronLine;
use super::timing::{ActiveHours, Zone};

/// When a job runs.
#[derive(Debug, Clone, PartialEq)]
pub enum Rule {
    /// Every so long; first at `first`, or one period after the job came to be when it has
    /// never run and `first` is unset.
    Every {
        every: Duration,
        first: Option<DateTime<Utc>>,
    },
    Cron(CronLine),
    /// Once, at this time.
    Once(DateTime<Utc>),
}

/// A rule with the hours it may run in and the clock both are read on.
#[derive(Debug, Clone, PartialEq)]
pub struct Timing {
    pub rule: Rule,
    pub hours: Option<ActiveHours>,
    pub zone: Zone,
}

/// What the planner knows of one job besides its timing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct JobState {
    /// When the job came to be (a schedule's creation, a heartbeat's loading): cron lines of
    /// jobs that never ran count from here.
    pub since: DateTime<Utc>,
    pub last_run: Option<DateTime<Utc>>,
    pub running: bool,
}

/// The planner's answer.
#[derive(Debug, Clone, PartialEq)]
pub struct Plan<K> {
    /// Jobs to start now.
    pub due: Vec<K>,
    /// When the next job that is not due now will be; `None` when none ever will.
    pub next: Option<DateTime<Utc>>,
}

/// Decides what is due at `now` among `jobs`.
pub fn plan<'a, K>(
    jobs: impl IntoIterator<Item = (K, &'a Timing, JobState)>,
    now: DateTime<Utc>,
) -> Plan<K> {
    let mut due = Vec::new();
    let mut next: Option<DateTime<Utc>> = None;
    let mut later = |at: DateTime<Utc>| next = Some(next.map_or(at, |n| n.min(at)));
    for (key, timing, state) in jobs {
        // A running job is looked at again when its run ends.
        if state.running {
            continue;
        }
        let Some(at) = next_run(timing, &state) else {
            continue;
        };
        if at > now {
            later(at);
        } else if is_open(timing, now) {
            due.push(key);
        } else {
            // Missed while the hours were over: once, when they open again.
            later(first_open(timing, now));
        }
    }
    Plan { due, next }
}

/// The earliest slot the job has not run for yet.
fn next_slot(timing: &Timing, state: &JobState) -> Option<DateTime<Utc>> {
    match (&timing.rule, state.last_run) {
        (
            Rule::Every {
                first: Some(first), ..
            },
            None,
        ) => Some(*first),
        (Rule::Every { every, first: None }, None) => {
            Some(state.since + chrono::Duration::from_std(*every).ok()?)
        }
        (Rule::Every { every, .. }, Some(last)) => {
            Some(last + chrono::Duration::from_std(*every).ok()?)
        }
        (Rule::Cron(line), last) => timing.zone.next_cron(line, last.unwrap_or(state.since)),
        (Rule::Once(at), None) => Some(*at),
        (Rule::Once(_), Some(_)) => None,
    }
}

/// When the job will next run if nothing holds it up: its next slot, moved to when its hours
/// open. `None` when it is done.
pub fn next_run(timing: &Timing, state: &JobState) -> Option<DateTime<Utc>> {
    next_slot(timing, state).map(|slot| first_open(timing, slot))
}

fn is_open(timing: &Timing, at: DateTime<Utc>) -> bool {
    timing
        .hours
        .is_none_or(|hours| hours.contains(timing.zone.wall(at).time()))
}

/// `at`, or when the job's hours next open if they are closed at `at`.
fn first_open(timing: &Timing, at: DateTime<Utc>) -> DateTime<Utc> {
    let Some(hours) = timing.hours.filter(|_| !is_open(timing, at)) else {
        return at;
    };
    let wall = timing.zone.wall(at);
    let mut opening = wall.date().and_time(hours.start);
    if opening <= wall {
        opening += chrono::Duration::days(1);
    }
    timing.zone.instant(opening)
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::TimeZone;

    type TestResult = Result<(), String>;

    fn at(day: u32, hour: u32, minute: u32) -> DateTime<Utc> {
        Utc.with_ymd_and_hms(2026, 11, day, hour, minute, 0)
            .single()
            .unwrap_or_default()
    }

    fn every(minutes: u64) -> Timing {
        Timing {
            rule: Rule::Every {
                every: Duration::from_secs(minutes * 60),
                first: None,
            },
            hours: None,
            zone: Zone::utc(),
        }
    }

    fn state(since: DateTime<Utc>, last_run: Option<DateTime<Utc>>) -> JobState {
        JobState {
            since,
            last_run,
            running: false,
        }
    }

    #[test]
    fn an_interval_is_first_due_one_period_after_its_start_then_every_period() {
        let timing = every(30);
        let start = at(24, 8, 0);
        let first = plan([("a", &timing, state(start, None))], start);
        assert_eq!((first.due.len(), first.next), (0, Some(at(24, 8, 30))));
        let first = plan([("a", &timing, state(start, None))], at(24, 8, 30));
        assert_eq!(first.due, ["a"]);
        let plan = plan_one(&timing, state(start, Some(start)), at(24, 8, 10));
        assert_eq!((plan.due.len(), plan.next), (0, Some(at(24, 8, 30))));
    }

    fn plan_one(timing: &Timing, state: JobState, now: DateTime<Utc>) -> Plan<()> {
        plan([((), timing, state)], now)
    }

    #[test]
    fn after_downtime_missed_slots_run_once_and_the_next_counts_from_that_run() {
        let timing = every(30);
        let last = at(24, 8, 0);
        let back = at(24, 13, 7);
        let plan = plan_one(&timing, state(last, Some(last)), back);
        assert_eq!(plan.due.len(), 1);
        let plan = plan_one(&timing, state(last, Some(back)), back);
        assert_eq!((plan.due.len(), plan.next), (0, Some(at(24, 13, 37))));
    }

    #[test]
    fn a_running_job_is_skipped_and_sets_no_deadline() {
        let timing = every(1);
        let mut running = state(at(24, 8, 0), Some(at(24, 8, 0)));
        running.running = true;
        let plan = plan_one(&timing, running, at(24, 9, 0));
        assert_eq!((plan.due.len(), plan.next), (0, None));
    }

    #[test]
    fn cron_lines_count_from_the_last_run_or_the_jobs_start() -> TestResult {
        let timing = Timing {
            rule: Rule::Cron(CronLine::parse("0 9 * * 1-5")?),
            hours: None,
            zone: Zone::utc(),
        };
        // Tuesday 24th, 08:00: the first slot is 09:00.
        let plan = plan_one(&timing, state(at(24, 8, 0), None), at(24, 8, 0));
        assert_eq!(plan.next, Some(at(24, 9, 0)));
        // Down from Tuesday 09:00 until Thursday noon: one run, then Friday 09:00.
        let last = Some(at(24, 9, 0));
        assert_eq!(
            plan_one(&timing, state(at(1, 0, 0), last), at(26, 12, 0))
                .due
                .len(),
            1
        );
        let ran = Some(at(26, 12, 0));
        let plan = plan_one(&timing, state(at(1, 0, 0), ran), at(26, 12, 0));
        assert_eq!(plan.next, Some(at(27, 9, 0)));
        Ok(())
    }

    #[test]
    fn active_hours_hold_a_slot_until_they_open_in_the_jobs_zone() -> TestResult {
        let timing = Timing {
            hours: Some(ActiveHours::parse("09:00-18:00")?),
            zone: Zone::parse("Europe/Berlin")?,
            ..every(60)
        };
        // 20:00 UTC is 21:00 in Berlin: closed until 09:00 Berlin, 08:00 UTC.
        let last = Some(at(24, 16, 30));
        let plan = plan_one(&timing, state(at(24, 0, 0), last), at(24, 20, 0));
        assert_eq!((plan.due.len(), plan.next), (0, Some(at(25, 8, 0))));
        let plan = plan_one(&timing, state(at(24, 0, 0), last), at(25, 8, 0));
        assert_eq!(plan.due.len(), 1);
        Ok(())
    }

    #[test]
    fn a_one_shot_runs_once_and_is_then_done() {
        let timing = Timing {
            rule: Rule::Once(at(24, 12, 0)),
            ..every(1)
        };
        let plan = plan_one(&timing, state(at(24, 8, 0), None), at(24, 8, 0));
        assert_eq!(plan.next, Some(at(24, 12, 0)));
        assert_eq!(
            plan_one(&timing, state(at(24, 8, 0), None), at(24, 12, 0))
                .due
                .len(),
            1
        );
        let done = plan_one(
            &timing,
            state(at(24, 8, 0), Some(at(24, 12, 0))),
            at(25, 0, 0),
        );
        assert_eq!((done.due.len(), done.next), (0, None));
    }

    #[test]
    fn the_next_deadline_is_the_earliest_of_all_jobs() {
        let (a, b) = (every(30), every(10));
        let start = at(24, 8, 0);
        let plan = plan(
            [
                ("a", &a, state(start, Some(start))),
                ("b", &b, state(start, Some(start))),
            ],
            at(24, 8, 1),
        );
        assert_eq!(plan.next, Some(at(24, 8, 10)));
    }
}
