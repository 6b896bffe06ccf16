//! A schedule's result reaches the person who asked: the session that made the schedule gets
//! it as a notice (at once when a front end shows that session in this daemon, else when one
//! next opens it), and the desktop gets a notification through `notify-send` when nobody
//! watches that session here (and for heartbeats, which no session made).

use std::path::{Path, PathBuf};
use std::time::Duration;

use futures_util::future::BoxFuture;

use crate::host::SessionHost;
use crate::jobs::job::{Job, RunOutcome, Source, is_quiet};
use crate::jobs::scheduler::RunNotices;
use crate::memory::Store;

/// The longest a result's text is in a notice.
const BODY_CHARS: usize = 600;
/// How long `notify-send` may take before it is stopped.
const NOTIFY_WAIT: Duration = Duration::from_secs(5);

pub struct Reminders {
    pub store: Store,
    pub host: SessionHost,
}

/// The notice of a run: `None` when there is nothing to tell (nothing to report, stopped).
pub fn notice(job: &Job, outcome: &RunOutcome) -> Option<(String, String)> {
    let cut = |text: &str| -> String {
        let text = text.trim();
        match text.chars().count() > BODY_CHARS {
            true => format!("{}…", text.chars().take(BODY_CHARS).collect::<String>()),
            false => text.to_string(),
        }
    };
    match outcome {
        RunOutcome::Replied { text, .. } if is_quiet(text) || text.trim().is_empty() => None,
        RunOutcome::Replied { text, .. } => Some((job.label.clone(), cut(text))),
        RunOutcome::Failed { error, .. } => Some((format!("{} failed", job.label), cut(error))),
        RunOutcome::Interrupted { .. } => None,
    }
}

impl Reminders {
    async fn tell(&self, job: &Job, outcome: &RunOutcome) {
        let Some((title, body)) = notice(job, outcome) else {
            return;
        };
        let maker = match job.source {
            Source::Schedule { id, .. } => self
                .store
                .call(move |db| db.schedule(id))
                .await
                .ok()
                .and_then(|row| row.session_id),
            Source::Heartbeat(_) => None,
        };
        let shown = match maker {
            Some(maker) => {
                let (session, t, b) = (maker.clone(), title.clone(), body.clone());
                let kept = self
                    .store
                    .call(move |db| db.add_session_notice(&session, &t, &b))
                    .await;
                kept.is_ok() && self.host.hand_notices(&maker).await
            }
            None => false,
        };
        if !shown {
            notify_send(&title, &body);
        }
    }
}

impl RunNotices for Reminders {
    fn ran<'a>(&'a self, job: &'a Job, outcome: &'a RunOutcome) -> BoxFuture<'a, ()> {
        Box::pin(self.tell(job, outcome))
    }
}

/// Raises a desktop notification with `notify-send` when it is on the PATH; never waits for
/// it (a stuck one is stopped after a few seconds).
fn notify_send(title: &str, body: &str) {
    let Some(program) = on_path("notify-send", std::env::var_os("PATH").as_deref()) else {
        return;
    };
    let child = tokio::process::Command::new(program)
        .args(["--app-name=mnemo", &format!("mnemo: {title}"), body])
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .kill_on_drop(true)
        .spawn();
    if let Ok(mut child) = child {
        tokio::spawn(async move {
            let _ = tokio::time::timeout(NOTIFY_WAIT, child.wait()).await;
        });
    }
}

/// Where `program` is among the directories of `path`.
fn on_path(program: &str, path: Option<&std::ffi::OsStr>) -> Option<PathBuf> {
    std::env::split_paths(path?)
        .map(|dir| dir.join(program))
        .find(|candidate| is_executable(candidate))
}

fn is_executable(path: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    path.metadata()
        .is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::jobs::delivery::Channel;
    use crate::jobs::plan::{Rule, Timing};
    use crate::jobs::timing::Zone;

    fn job() -> Job {
        Job {
            key: "schedule:1".into(),
            label: "schedule #1".into(),
            source: Source::Schedule {
                id: 1,
                one_shot: true,
            },
            timing: Timing {
                rule: Rule::Once(chrono::Utc::now()),
                hours: None,
                zone: Zone::utc(),
            },
            since: chrono::Utc::now(),
            workspace: "/w".into(),
            model: None,
            prompt: "stretch".into(),
            deliver: vec![Channel::Log],
            rights: None,
        }
    }

    #[test]
    fn a_reply_or_a_failure_is_told_and_nothing_to_report_is_not() {
        let replied = |text: &str| RunOutcome::Replied {
            session_id: "s".into(),
            text: text.into(),
        };
        assert_eq!(
            notice(&job(), &replied("Stretch now.")),
            Some(("schedule #1".into(), "Stretch now.".into()))
        );
        assert_eq!(notice(&job(), &replied("HEARTBEAT_OK")), None);
        let failed = RunOutcome::Failed {
            session_id: None,
            error: "the model server does not answer".into(),
        };
        assert_eq!(
            notice(&job(), &failed),
            Some((
                "schedule #1 failed".into(),
                "the model server does not answer".into()
            ))
        );
    }

    #[test]
    fn notify_send_is_used_only_when_it_is_on_the_path() -> Result<(), std::io::Error> {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir()?;
        assert_eq!(on_path("notify-send", Some(dir.path().as_os_str())), None);
        let program = dir.path().join("notify-send");
        std::fs::write(&program, "#!/bin/sh\n")?;
        std::fs::set_permissions(&program, std::fs::Permissions::from_mode(0o755))?;
        assert_eq!(
            on_path("notify-send", Some(dir.path().as_os_str())),
            Some(program)
        );
        Ok(())
    }
}
