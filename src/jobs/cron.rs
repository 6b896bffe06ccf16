//! Cron lines of heartbeats and schedules. The only module that names `croner`'s types, so a
//! change of cron library touches one file.

use std::str::FromStr;

use chrono::{DateTime, TimeZone, Utc};

/// A parsed cron line (five fields, or six with seconds first), kept with its text. The
/// parsed form is large (over 300 bytes), so it is boxed to keep rules small.
#[derive(Debug, Clone)]
pub struct CronLine {
    text: String,
    cron: Box<croner::Cron>,
}

impl PartialEq for CronLine {
    fn eq(&self, other: &Self) -> bool {
        self.text == other.text
    }
}

impl CronLine {
    /// Parses `text`; the error says what is wrong with it in croner's words.
    pub fn parse(text: &str) -> Result<CronLine, String> {
        let text = text.split_whitespace().collect::<Vec<_>>().join(" ");
        let cron = croner::Cron::from_str(&text).map_err(|e| e.to_string())?;
        Ok(CronLine {
            text,
            cron: Box::new(cron),
        })
    }

    pub fn as_str(&self) -> &str {
        &self.text
    }

    /// The first time strictly after `after` that the line names, read on the clock of
    /// `after`'s zone. `None` when the line never matches again.
    pub fn next_after<Tz: TimeZone>(&self, after: &DateTime<Tz>) -> Option<DateTime<Utc>> {
        self.cron
            .find_next_occurrence(after, false)
            .ok()
            .map(|t| t.with_timezone(&Utc))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn weekday_mornings_skip_the_weekend_and_bad_lines_say_why() -> Result<(), String> {
        let line = CronLine::parse("0 9  * * 1-5")?;
        assert_eq!(line.as_str(), "0 9 * * 1-5");
        // Friday 2026-11-27 10:00 UTC: the next weekday morning is Monday.
        let friday = Utc.with_ymd_and_hms(2026, 11, 27, 10, 0, 0).single();
        let next = friday.and_then(|f| line.next_after(&f));
        assert_eq!(next, Utc.with_ymd_and_hms(2026, 11, 30, 9, 0, 0).single());
        let berlin = chrono_tz::Europe::Berlin;
        let friday = berlin.with_ymd_and_hms(2026, 11, 27, 10, 0, 0).single();
        let next = friday.and_then(|f| line.next_after(&f));
        assert_eq!(next, Utc.with_ymd_and_hms(2026, 11, 30, 8, 0, 0).single());
        assert!(CronLine::parse("0 25 * * *").is_err());
        assert!(CronLine::parse("every day").is_err());
        Ok(())
    }
}
