//! The words of time that heartbeat files and the schedule tools accept: intervals (`30m`),
//! active hours (`09:00-18:00`), time zones, and a schedule's `when` (a cron line, an ISO time
//! or `in 2h`). Parsing only; deciding what is due is `plan`'s job.

use std::time::Duration;

use chrono::{DateTime, NaiveDateTime, NaiveTime, TimeZone, Utc};

use super::cron::CronLine;

/// The clock a job's cron line and active hours are read on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Zone {
    /// The machine's own zone.
    Local,
    Named(chrono_tz::Tz),
}

impl Zone {
    /// An IANA name such as `Europe/Berlin` (or `UTC`).
    pub fn parse(name: &str) -> Result<Zone, String> {
        name.trim()
            .parse::<chrono_tz::Tz>()
            .map(Zone::Named)
            .map_err(|_| {
                format!("unknown time zone `{name}` (use an IANA name such as Europe/Berlin)")
            })
    }

    pub fn utc() -> Zone {
        Zone::Named(chrono_tz::UTC)
    }

    /// The wall-clock time in this zone at `at`.
    pub fn wall(self, at: DateTime<Utc>) -> NaiveDateTime {
        match self {
            Zone::Local => at.with_timezone(&chrono::Local).naive_local(),
            Zone::Named(tz) => at.with_timezone(&tz).naive_local(),
        }
    }

    /// The first instant whose wall-clock time in this zone is `wall` (or, in a gap that a
    /// clock change skips, the end of the gap).
    pub fn instant(self, wall: NaiveDateTime) -> DateTime<Utc> {
        fn first<Tz: TimeZone>(tz: &Tz, wall: NaiveDateTime) -> DateTime<Utc> {
            // Gaps are at most a few hours; walking forward by minutes finds their end.
            (0..24 * 60)
                .find_map(|m| {
                    let shifted = wall + chrono::Duration::minutes(m);
                    tz.from_local_datetime(&shifted).earliest()
                })
                .map_or_else(|| wall.and_utc(), |t| t.with_timezone(&Utc))
        }
        match self {
            Zone::Local => first(&chrono::Local, wall),
            Zone::Named(tz) => first(&tz, wall),
        }
    }

    /// The next time after `after` that `line` names, on this zone's clock.
    pub fn next_cron(self, line: &CronLine, after: DateTime<Utc>) -> Option<DateTime<Utc>> {
        match self {
            Zone::Local => line.next_after(&after.with_timezone(&chrono::Local)),
            Zone::Named(tz) => line.next_after(&after.with_timezone(&tz)),
        }
    }
}

/// The part of each day in which a job may run, such as `09:00-18:00`; a range whose end is
/// before its start (`22:00-06:00`) spans midnight.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ActiveHours {
    pub start: NaiveTime,
    pub end: NaiveTime,
}

impl ActiveHours {
    pub fn parse(text: &str) -> Result<ActiveHours, String> {
        let bad = || format!("active_hours `{text}` is not a range such as 09:00-18:00");
        let (start, end) = text.split_once('-').ok_or_else(bad)?;
        let time = |t: &str| NaiveTime::parse_from_str(t.trim(), "%H:%M").map_err(|_| bad());
        let (start, end) = (time(start)?, time(end)?);
        if start == end {
            return Err(format!(
                "active_hours `{text}` is empty: start and end are equal"
            ));
        }
        Ok(ActiveHours { start, end })
    }

    pub fn contains(self, time: NaiveTime) -> bool {
        match self.start < self.end {
            true => self.start <= time && time < self.end,
            false => time >= self.start || time < self.end,
        }
    }
}

/// A duration such as `45s`, `30m`, `2h`, `1h30m` or `1d`.
pub fn parse_duration(text: &str) -> Result<Duration, String> {
    let bad = || format!("`{text}` is not a duration such as 30m, 2h or 1h30m");
    let mut total = 0u64;
    let mut number = String::new();
    for c in text.trim().chars() {
        if c.is_ascii_digit() {
            number.push(c);
            continue;
        }
        let unit = match c {
            's' => 1,
            'm' => 60,
            'h' => 3600,
            'd' => 86_400,
            _ => return Err(bad()),
        };
        let value: u64 = number.parse().map_err(|_| bad())?;
        total = total.saturating_add(value.saturating_mul(unit));
        number.clear();
    }
    if !number.is_empty() || total == 0 {
        return Err(bad());
    }
    Ok(Duration::from_secs(total))
}

/// What a schedule's `when` names.
#[derive(Debug, Clone, PartialEq)]
pub enum When {
    Cron(CronLine),
    /// One moment: an ISO time.
    At(DateTime<Utc>),
    /// `in 2h`: that long from now.
    In(Duration),
}

impl When {
    /// A cron line, an ISO time (`2026-11-24T09:00`, with an offset or read in `zone`) or
    /// `in 2h`.
    pub fn parse(text: &str, zone: Zone) -> Result<When, String> {
        let text = text.trim();
        if let Some(after) = text.strip_prefix("in ") {
            return parse_duration(after).map(When::In);
        }
        if let Ok(at) = DateTime::parse_from_rfc3339(text) {
            return Ok(When::At(at.with_timezone(&Utc)));
        }
        for format in ["%Y-%m-%dT%H:%M:%S", "%Y-%m-%dT%H:%M", "%Y-%m-%d %H:%M"] {
            if let Ok(wall) = NaiveDateTime::parse_from_str(text, format) {
                return Ok(When::At(zone.instant(wall)));
            }
        }
        CronLine::parse(text).map(When::Cron).map_err(|cron| {
            format!(
                "`{text}` is neither a cron line ({cron}), an ISO time such as \
                 2026-11-24T09:00 nor a delay such as `in 2h`"
            )
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_hours_and_zones_parse_and_say_what_is_wrong() -> Result<(), String> {
        assert_eq!(parse_duration("30m")?, Duration::from_secs(1800));
        assert_eq!(parse_duration("1h30m")?, Duration::from_secs(5400));
        assert_eq!(parse_duration("1d")?, Duration::from_secs(86_400));
        for bad in ["", "30", "m", "3x", "0m"] {
            assert!(parse_duration(bad).is_err(), "{bad}");
        }
        let day = ActiveHours::parse("09:00-18:00")?;
        let at = |h, m| NaiveTime::from_hms_opt(h, m, 0).ok_or("time");
        assert!(day.contains(at(9, 0)?) && !day.contains(at(18, 0)?));
        let night = ActiveHours::parse("22:00-06:00")?;
        assert!(night.contains(at(23, 0)?) && night.contains(at(5, 59)?));
        assert!(!night.contains(at(12, 0)?));
        assert!(ActiveHours::parse("9-18").is_err());
        assert!(Zone::parse("Mars/Olympus").is_err());
        Ok(())
    }

    #[test]
    fn when_is_a_cron_line_an_iso_time_or_a_delay() -> Result<(), String> {
        let utc = Zone::utc();
        assert_eq!(
            When::parse("in 2h", utc)?,
            When::In(Duration::from_secs(7200))
        );
        let nine = Utc
            .with_ymd_and_hms(2026, 11, 24, 9, 0, 0)
            .single()
            .ok_or("t")?;
        assert_eq!(When::parse("2026-11-24T09:00", utc)?, When::At(nine));
        assert_eq!(
            When::parse("2026-11-24T10:00:00+01:00", utc)?,
            When::At(nine)
        );
        let berlin = Zone::parse("Europe/Berlin")?;
        let eight = nine - chrono::Duration::hours(1);
        assert_eq!(When::parse("2026-11-24 09:00", berlin)?, When::At(eight));
        assert!(matches!(When::parse("*/5 * * * *", utc)?, When::Cron(_)));
        let err = When::parse("tomorrow-ish", utc).err().unwrap_or_default();
        assert!(err.contains("neither a cron line"), "{err}");
        Ok(())
    }
}
