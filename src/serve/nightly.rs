//! The daemon's night: at `DREAM_HOUR` local time it embeds what the day left without
//! vectors, then dreams when at least `dream.min_entries` archive entries are new since the
//! last dream. Until then it sleeps.

use std::time::Duration;

use chrono::{DateTime, Local, NaiveTime, TimeZone};

use super::Daemon;
use crate::config::CliOverrides;

/// The hour the daemon dreams, local time.
pub const DREAM_HOUR: u32 = 3;

/// The next `DREAM_HOUR`:00 after `now`.
pub fn next_dream(now: DateTime<Local>) -> DateTime<Local> {
    let at = NaiveTime::from_hms_opt(DREAM_HOUR, 0, 0).unwrap_or_default();
    let mut day = now.date_naive();
    loop {
        // A local time that does not exist (a clock change) moves on to the next day.
        if let Some(candidate) = Local.from_local_datetime(&day.and_time(at)).earliest()
            && candidate > now
        {
            return candidate;
        }
        day = day.succ_opt().unwrap_or(day);
    }
}

/// Dreams every night until the daemon stops.
pub async fn run(daemon: Daemon, cli: CliOverrides) {
    loop {
        let now = Local::now();
        let wait = (next_dream(now) - now).to_std().unwrap_or(Duration::ZERO);
        tokio::select! {
            () = tokio::time::sleep(wait) => {}
            () = daemon.cancel.cancelled() => return,
        }
        super::backfill(daemon.clone()).await;
        tokio::select! {
            () = dream(&daemon, &cli) => {}
            () = daemon.cancel.cancelled() => return,
        }
        super::idle::work_done();
    }
}

async fn dream(daemon: &Daemon, cli: &CliOverrides) {
    let dreamer = match crate::serve::dreamer::from_loaded(&daemon.loaded, cli) {
        Ok(dreamer) => dreamer,
        Err(err) => return daemon.log.line(&format!("dream: cannot start: {err}")),
    };
    let wanted = daemon.loaded.config.dream.min_entries;
    match dreamer.pending().await {
        Ok(pending) if pending < wanted => {
            let text = format!("dream: {pending} new archive entries, waiting for {wanted}");
            return daemon.log.line(&text);
        }
        Ok(_) => {}
        Err(err) => return daemon.log.line(&format!("dream: {err}")),
    }
    match dreamer.run().await {
        Ok(report) => {
            let text = format!(
                "dream: {} archive entries in {} batches into notes version {:?}",
                report.entries, report.batches, report.version
            );
            daemon.log.line(&text);
            for notice in report.notices {
                daemon.log.line(&format!("dream: {notice}"));
            }
        }
        Err(err) => daemon.log.line(&format!("dream failed: {err}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_next_dream_is_the_coming_night() {
        let evening = Local.with_ymd_and_hms(2026, 3, 10, 22, 30, 0).single();
        let night = Local.with_ymd_and_hms(2026, 3, 11, 3, 0, 0).single();
        assert_eq!(evening.map(next_dream), night);
        let early = Local.with_ymd_and_hms(2026, 3, 11, 1, 0, 0).single();
        assert_eq!(early.map(next_dream), night);
        assert_eq!(
            night.map(next_dream),
            Local.with_ymd_and_hms(2026, 3, 12, 3, 0, 0).single()
        );
    }
}
