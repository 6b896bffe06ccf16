//! Session leases: which process writes a session. Two writers would collide on the history's
//! sequence numbers, so opening a session takes its lease first. The holder renews the row
//! while it lives; a row whose holder is gone is taken over: on this host that is known at
//! once (the process no longer exists, or its pid now belongs to a process started later),
//! for a holder on another host sharing the database only when it stopped renewing.

use rusqlite::{OptionalExtension, TransactionBehavior, params};

use super::db::{Db, now_ms};
use super::error::StoreError;
use super::types::Millis;

/// A holder on another host that has not renewed for this long is taken to be gone.
pub const LEASE_TTL_MS: Millis = 30_000;
/// How often a holder renews, well inside the time to live.
pub const LEASE_RENEW_MS: u64 = 10_000;

/// A process that can hold leases.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Holder {
    pub pid: u32,
    pub host: String,
    /// When the process started (clock ticks since boot on Linux, 0 where unknown): tells a
    /// live holder from a later process that got the same pid.
    pub started: i64,
}

impl Holder {
    /// This process.
    pub fn current() -> Holder {
        let pid = std::process::id();
        Holder {
            pid,
            host: host_name(),
            started: process_start(pid).unwrap_or(0),
        }
    }

    /// Whether this holder still runs, as far as this host can tell.
    fn alive_here(&self) -> bool {
        let Ok(pid) = libc::pid_t::try_from(self.pid) else {
            return false;
        };
        // SAFETY: signal 0 only checks that the process exists.
        let exists = unsafe { libc::kill(pid, 0) } == 0
            || std::io::Error::last_os_error().raw_os_error() == Some(libc::EPERM);
        exists && (self.started == 0 || process_start(self.pid) == Some(self.started))
    }
}

/// This machine's name, or `localhost` when it has none.
pub fn host_name() -> String {
    let mut buf = [0u8; 256];
    // SAFETY: the buffer is writable for its whole length.
    let done = unsafe { libc::gethostname(buf.as_mut_ptr().cast(), buf.len()) };
    let end = buf.iter().position(|&b| b == 0).unwrap_or(buf.len());
    match done {
        0 => String::from_utf8_lossy(&buf[..end]).into_owned(),
        _ => "localhost".to_string(),
    }
}

/// The start time of process `pid` (field 22 of `/proc/PID/stat`), where there is a /proc.
fn process_start(pid: u32) -> Option<i64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name (field 2) may hold spaces and parentheses: count after its last ')'.
    let rest = &stat[stat.rfind(')')? + 1..];
    rest.split_whitespace().nth(19)?.parse().ok()
}

/// Who holds a lease another process asked for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Busy {
    pub pid: u32,
    pub host: String,
}

impl Db {
    /// Takes the lease of `session_id` for `me`, or says who holds it. Taking it again is
    /// allowed to its holder (the caller keeps one lease per session within a process).
    pub fn acquire_lease(
        &mut self,
        session_id: &str,
        me: &Holder,
    ) -> Result<Option<Busy>, StoreError> {
        let now = now_ms();
        let tx = self
            .conn
            .transaction_with_behavior(TransactionBehavior::Immediate)?;
        let held: Option<(Holder, Millis)> = tx
            .query_row(
                "SELECT pid, host, started, renewed_at FROM session_leases WHERE session_id = ?1",
                [session_id],
                |row| {
                    Ok((
                        Holder {
                            pid: row.get(0)?,
                            host: row.get(1)?,
                            started: row.get(2)?,
                        },
                        row.get(3)?,
                    ))
                },
            )
            .optional()?;
        if let Some((holder, renewed_at)) = held {
            let gone = match holder.host == me.host {
                true => holder != *me && !holder.alive_here(),
                false => now.saturating_sub(renewed_at) > LEASE_TTL_MS,
            };
            if holder != *me && !gone {
                return Ok(Some(Busy {
                    pid: holder.pid,
                    host: holder.host,
                }));
            }
        }
        tx.execute(
            "INSERT INTO session_leases(session_id, pid, host, started, renewed_at)
             VALUES (?1, ?2, ?3, ?4, ?5)
             ON CONFLICT(session_id) DO UPDATE SET pid = ?2, host = ?3, started = ?4,
                 renewed_at = ?5",
            params![session_id, me.pid, me.host, me.started, now],
        )?;
        tx.commit()?;
        Ok(None)
    }

    /// Renews `me`'s leases; returns the sessions whose lease was taken over meanwhile.
    pub fn renew_leases(
        &mut self,
        sessions: &[String],
        me: &Holder,
    ) -> Result<Vec<String>, StoreError> {
        let now = now_ms();
        let mut lost = Vec::new();
        let mut stmt = self.conn.prepare_cached(
            "UPDATE session_leases SET renewed_at = ?4
             WHERE session_id = ?1 AND pid = ?2 AND host = ?3",
        )?;
        for id in sessions {
            if stmt.execute(params![id, me.pid, me.host, now])? == 0 {
                lost.push(id.clone());
            }
        }
        Ok(lost)
    }

    /// Gives the lease of `session_id` back, if `me` holds it.
    pub fn release_lease(&mut self, session_id: &str, me: &Holder) -> Result<(), StoreError> {
        self.conn
            .prepare_cached(
                "DELETE FROM session_leases WHERE session_id = ?1 AND pid = ?2 AND host = ?3",
            )?
            .execute(params![session_id, me.pid, me.host])?;
        Ok(())
    }

    /// Who holds `session_id`'s lease, when a live process does.
    pub fn lease_holder(&self, session_id: &str) -> Result<Option<Busy>, StoreError> {
        let held = self
            .conn
            .prepare_cached(
                "SELECT pid, host, started, renewed_at FROM session_leases WHERE session_id = ?1",
            )?
            .query_row([session_id], |row| {
                Ok((
                    Holder {
                        pid: row.get(0)?,
                        host: row.get(1)?,
                        started: row.get(2)?,
                    },
                    row.get::<_, Millis>(3)?,
                ))
            })
            .optional()?;
        let here = host_name();
        Ok(held
            .filter(|(holder, renewed_at)| match holder.host == here {
                true => holder.alive_here(),
                false => now_ms().saturating_sub(*renewed_at) <= LEASE_TTL_MS,
            })
            .map(|(holder, _)| Busy {
                pid: holder.pid,
                host: holder.host,
            }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    type TestResult = Result<(), Box<dyn std::error::Error>>;

    fn other_live_process() -> Result<std::process::Child, std::io::Error> {
        std::process::Command::new("sleep").arg("30").spawn()
    }

    #[test]
    fn a_live_holder_keeps_its_lease_and_a_dead_ones_is_taken_over() -> TestResult {
        let mut db = Db::open_in_memory()?;
        let me = Holder::current();
        assert!(me.started > 0, "no start time from /proc");
        assert_eq!(db.acquire_lease("s1", &me)?, None);
        assert_eq!(
            db.acquire_lease("s1", &me)?,
            None,
            "its holder may take it again"
        );

        let mut child = other_live_process()?;
        let other = Holder {
            pid: child.id(),
            host: me.host.clone(),
            started: process_start(child.id()).unwrap_or(0),
        };
        assert_eq!(db.acquire_lease("s2", &other)?, None);
        let busy = db.acquire_lease("s2", &me)?;
        assert_eq!(busy.map(|b| b.pid), Some(child.id()));
        assert_eq!(db.lease_holder("s2")?.map(|b| b.pid), Some(child.id()));

        child.kill()?;
        child.wait()?;
        assert_eq!(db.lease_holder("s2")?, None);
        assert_eq!(
            db.acquire_lease("s2", &me)?,
            None,
            "a dead holder's lease is taken"
        );
        assert_eq!(
            db.renew_leases(&["s1".into(), "s2".into()], &other)?.len(),
            2
        );
        assert!(
            db.renew_leases(&["s1".into(), "s2".into()], &me)?
                .is_empty()
        );
        Ok(())
    }

    #[test]
    fn a_reused_pid_is_not_the_old_holder() -> TestResult {
        let mut db = Db::open_in_memory()?;
        let me = Holder::current();
        // This process's pid, but a process that started at another time.
        let earlier = Holder {
            started: me.started - 1,
            ..me.clone()
        };
        assert_eq!(db.acquire_lease("s", &earlier)?, None);
        assert_eq!(db.acquire_lease("s", &me)?, None);
        db.release_lease("s", &me)?;
        assert_eq!(db.lease_holder("s")?, None);
        Ok(())
    }

    #[test]
    fn a_holder_on_another_host_counts_until_it_stops_renewing() -> TestResult {
        let mut db = Db::open_in_memory()?;
        let remote = Holder {
            pid: 1,
            host: "elsewhere.example".into(),
            started: 5,
        };
        assert_eq!(db.acquire_lease("s", &remote)?, None);
        let me = Holder::current();
        assert!(db.acquire_lease("s", &me)?.is_some());
        db.conn.execute(
            "UPDATE session_leases SET renewed_at = renewed_at - ?1",
            [LEASE_TTL_MS + 1],
        )?;
        assert_eq!(db.acquire_lease("s", &me)?, None);
        Ok(())
    }
}
