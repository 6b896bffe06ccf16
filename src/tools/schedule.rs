//! Schedules the agent makes for later (reminders, recurring checks): create, list and delete.
//! `mnemo serve` runs them as unwatched sessions, so making or removing one is a write that
//! goes through approval like any other.

use std::sync::Arc;

use chrono::{DateTime, Utc};
use schemars::JsonSchema;
use serde::Deserialize;

use super::services::ToolServices;
use super::{ToolContext, ToolError, TypedTool};
use crate::config::schedules::ScheduleLimits;
use crate::jobs::delivery::Channel;
use crate::jobs::plan::{JobState, next_run};
use crate::jobs::schedule::{describe, show_time, stored_when};
use crate::jobs::timing::{When, Zone};
use crate::memory::schedules::{MakerRights, NewSchedule, ScheduleRow};
use crate::memory::{Store, StoreError};
use crate::protocol::{ApprovalAction, ApprovalMode};
use crate::sandbox::approval::Action;

/// Registers the three schedule tools. `services` reach the scheduler that runs them;
/// `trusted` says whether the session's workspace config is trusted, which a schedule
/// keeps with the session's approval mode and sandbox.
pub fn register(
    registry: &mut super::ToolRegistry,
    store: &Store,
    services: Arc<dyn ToolServices>,
    limits: ScheduleLimits,
    trusted: bool,
) {
    registry.register(ScheduleCreate {
        store: store.clone(),
        services: services.clone(),
        limits,
        trusted,
    });
    registry.register(ScheduleList {
        store: store.clone(),
    });
    registry.register(ScheduleDelete {
        services,
        store: store.clone(),
    });
}

fn failed(err: StoreError) -> ToolError {
    ToolError::Failed(err.to_string())
}

pub struct ScheduleCreate {
    store: Store,
    services: Arc<dyn ToolServices>,
    limits: ScheduleLimits,
    trusted: bool,
}

#[derive(Deserialize, JsonSchema)]
pub struct ScheduleCreateArgs {
    /// When to run: a cron line (`0 9 * * 1-5`, the machine's clock), an ISO time
    /// (`2026-11-24T15:00`) or a delay (`in 2h`, `in 30m`).
    pub when: String,
    /// What the agent is asked then, on its own in this workspace; say what to report.
    pub prompt: String,
    /// Repeat: a cron line repeats unless this is false; `in 2h` with true runs every two
    /// hours. Default: only cron lines repeat.
    pub repeat: Option<bool>,
    /// Where the reply goes besides mnemo serve's log: `telegram` (every paired Telegram
    /// chat) or `telegram:CHAT_ID` (one of them).
    #[serde(default)]
    pub deliver: Vec<String>,
}

impl ScheduleCreateArgs {
    fn parsed(&self) -> Result<(When, bool), ToolError> {
        for name in &self.deliver {
            Channel::parse(name).map_err(ToolError::Failed)?;
        }
        let when = When::parse(&self.when, Zone::Local).map_err(ToolError::Failed)?;
        let repeat = self.repeat.unwrap_or(matches!(when, When::Cron(_)));
        Ok((when, repeat))
    }
}

impl TypedTool for ScheduleCreate {
    type Args = ScheduleCreateArgs;
    const NAME: &'static str = "schedule_create";
    const DESCRIPTION: &'static str = "Schedule a prompt to run later, once or repeatedly (a \
        reminder, a recurring check). mnemo serve runs it as a new session in this workspace \
        with nobody watching (anything needing approval is denied) and delivers the reply.";
    const MUTATES: bool = true;
    const DEFERRED: bool = true;

    fn action(&self, _args: &ScheduleCreateArgs) -> Option<Action> {
        Some(Action::Schedule)
    }

    async fn preview(
        &self,
        args: ScheduleCreateArgs,
        _ctx: &ToolContext,
    ) -> Result<ApprovalAction, ToolError> {
        let (when, repeat) = args.parsed()?;
        let stored = stored_when(when, repeat, Utc::now()).map_err(ToolError::Failed)?;
        Ok(ApprovalAction::Schedule {
            change: match args.deliver.is_empty() {
                true => format!("{}: {}", describe(&stored), args.prompt.trim()),
                false => format!(
                    "{}: {} (reply to {})",
                    describe(&stored),
                    args.prompt.trim(),
                    args.deliver.join(", ")
                ),
            },
        })
    }

    async fn run(&self, args: ScheduleCreateArgs, ctx: &ToolContext) -> Result<String, ToolError> {
        let prompt = args.prompt.trim().to_string();
        if prompt.is_empty() {
            return Err(ToolError::Failed(
                "`prompt` is empty: say what to do then".into(),
            ));
        }
        let (when, repeat) = args.parsed()?;
        let now = Utc::now();
        self.check_period(&when, repeat, now)?;
        let when = stored_when(when, repeat, now).map_err(ToolError::Failed)?;
        // What the session's commands get now: a sub-agent started offline has less than its
        // mode says, and full approval that still sandboxes it counts as auto.
        let sandbox = ctx.approvals.sandbox_for(None);
        let approval = match ctx.approvals.mode() {
            ApprovalMode::Full if sandbox.is_sandboxed() => ApprovalMode::Auto,
            mode => mode,
        };
        let new = NewSchedule {
            session_id: Some(ctx.session_id.clone()),
            workspace: ctx.workspace.display().to_string(),
            when,
            prompt,
            deliver: args.deliver.iter().map(|d| d.trim().to_string()).collect(),
            rights: MakerRights {
                approval,
                sandbox: sandbox.policy,
                network: sandbox.network_allowed(),
                trusted: self.trusted,
            },
        };
        let max = self.limits.max_per_workspace;
        let row = self
            .store
            .call(move |db| db.create_schedule_within(&new, max))
            .await
            .map_err(failed)?
            .ok_or_else(|| {
                ToolError::Failed(format!(
                    "this workspace has {max} schedules already, the most it may have \
                     ([schedules] max_per_workspace). Delete one it no longer needs \
                     (schedule_list, schedule_delete) or tell the user"
                ))
            })?;
        let mut text = format!(
            "created schedule #{}: {}{}",
            row.id,
            describe(&row.when),
            next_run_note(&row)
        );
        let told = self.services.jobs_changed().await;
        if !told && !self.services.scheduler_running() {
            text.push_str(&format!(
                "\n{SERVE_NOT_RUNNING}, so this schedule runs only once it is started \
                 (`mnemo serve`); tell the user."
            ));
        }
        Ok(text)
    }
}

impl ScheduleCreate {
    /// Refuses a repeating schedule that fires more often than `[schedules] min_interval_secs`.
    fn check_period(&self, when: &When, repeat: bool, now: DateTime<Utc>) -> Result<(), ToolError> {
        let min = self.limits.min_interval_secs;
        let period = match (when, repeat) {
            (When::In(delay), true) => Some(delay.as_secs()),
            (When::Cron(line), true) => Zone::Local.next_cron(line, now).and_then(|first| {
                let second = Zone::Local.next_cron(line, first)?;
                u64::try_from((second - first).num_seconds()).ok()
            }),
            _ => None,
        };
        match period {
            Some(secs) if secs < min => Err(ToolError::Failed(format!(
                "a repeating schedule may run at most every {min} s ([schedules] \
                 min_interval_secs); this one would run every {secs} s. Choose a longer period"
            ))),
            _ => Ok(()),
        }
    }
}

/// What `schedule_create` said, in one line for people: "reminder #1 at 00:29 · runs while
/// mnemo serve runs".
pub(super) fn for_people(output: &str) -> Option<String> {
    let first = output.lines().next()?;
    let (id, rest) = first.strip_prefix("created schedule #")?.split_once(": ")?;
    let (when, next) = match rest.split_once(", next run ") {
        Some((when, next)) => (when, Some(next)),
        None => (rest, None),
    };
    let mut line = match (when.strip_prefix("once at "), next) {
        (Some(at), _) => format!("reminder #{id} at {}", short_time(at)),
        (None, Some(next)) => format!("schedule #{id} {when} · next at {}", short_time(next)),
        (None, None) => format!("schedule #{id} {when}"),
    };
    line.push_str(match output.contains(SERVE_NOT_RUNNING) {
        true => " · runs once mnemo serve is started",
        false => " · runs while mnemo serve runs",
    });
    Some(line)
}

/// A time as [`show_time`] writes it ("2026-11-29 00:29 UTC"), without its zone and
/// without today's date.
fn short_time(shown: &str) -> String {
    if !shown.starts_with(|c: char| c.is_ascii_digit()) {
        return shown.to_string();
    }
    let today = chrono::Local::now().format("%Y-%m-%d ").to_string();
    let time = shown.strip_prefix(&today).unwrap_or(shown);
    time.rsplit_once(' ')
        .map_or(time, |(time, _zone)| time)
        .to_string()
}

const SERVE_NOT_RUNNING: &str = "mnemo serve is not running";

/// `, next run …` for a schedule that has not run yet.
fn next_run_note(row: &ScheduleRow) -> String {
    let Ok(job) = crate::jobs::schedule::job(row) else {
        return String::new();
    };
    let state = JobState {
        since: job.since,
        last_run: None,
        running: false,
    };
    next_run(&job.timing, &state)
        .map(|next| format!(", next run {}", show_time(next.timestamp_millis())))
        .unwrap_or_default()
}

pub struct ScheduleList {
    store: Store,
}

#[derive(Deserialize, JsonSchema)]
pub struct ScheduleListArgs {}

impl TypedTool for ScheduleList {
    type Args = ScheduleListArgs;
    const NAME: &'static str = "schedule_list";
    const DESCRIPTION: &'static str = "List this workspace's schedules (id, when, next and \
        last run, and prompt).";
    const MUTATES: bool = false;
    const DEFERRED: bool = true;

    async fn run(&self, _args: ScheduleListArgs, ctx: &ToolContext) -> Result<String, ToolError> {
        let workspace = ctx.workspace.display().to_string();
        let (rows, runs) = self
            .store
            .call(move |db| Ok((db.schedules_in(&workspace)?, db.job_runs()?)))
            .await
            .map_err(failed)?;
        Ok(crate::jobs::listing::schedules(&rows, &runs))
    }
}

pub struct ScheduleDelete {
    store: Store,
    services: Arc<dyn ToolServices>,
}

#[derive(Deserialize, JsonSchema)]
pub struct ScheduleDeleteArgs {
    /// The schedule's id, as schedule_list shows it (the number after `#`).
    pub id: i64,
}

impl TypedTool for ScheduleDelete {
    type Args = ScheduleDeleteArgs;
    const NAME: &'static str = "schedule_delete";
    const DESCRIPTION: &'static str = "Delete one of this workspace's schedules by its id.";
    const MUTATES: bool = true;
    const DEFERRED: bool = true;

    fn action(&self, _args: &ScheduleDeleteArgs) -> Option<Action> {
        Some(Action::Schedule)
    }

    async fn preview(
        &self,
        args: ScheduleDeleteArgs,
        ctx: &ToolContext,
    ) -> Result<ApprovalAction, ToolError> {
        let id = args.id;
        let about = match self.own(id, ctx).await {
            Ok(row) => format!("{}: {}", describe(&row.when), row.prompt),
            Err(_) => "(no such schedule in this workspace)".into(),
        };
        Ok(ApprovalAction::Schedule {
            change: format!("delete #{id}: {about}"),
        })
    }

    async fn run(&self, args: ScheduleDeleteArgs, ctx: &ToolContext) -> Result<String, ToolError> {
        let id = args.id;
        self.own(id, ctx).await?;
        match self.store.call(move |db| db.delete_schedule(id)).await {
            Ok(true) => {
                self.services.jobs_changed().await;
                Ok(format!("deleted schedule #{id}"))
            }
            Ok(false) => Err(ToolError::Failed(format!(
                "there is no schedule #{id} in this workspace"
            ))),
            Err(e) => Err(failed(e)),
        }
    }
}

impl ScheduleDelete {
    /// Schedule `id` when it belongs to the calling session's workspace; another
    /// workspace's schedules are not this session's to see or remove.
    async fn own(&self, id: i64, ctx: &ToolContext) -> Result<ScheduleRow, ToolError> {
        let workspace = ctx.workspace.display().to_string();
        match self.store.call(move |db| db.schedule(id)).await {
            Ok(row) if row.workspace == workspace => Ok(row),
            Ok(_) | Err(StoreError::NotFound { .. }) => Err(ToolError::Failed(format!(
                "there is no schedule #{id} in this workspace"
            ))),
            Err(e) => Err(failed(e)),
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;
    use crate::sandbox::{SandboxConfig, SandboxPolicy};
    use crate::tools::Approvals;
    use crate::tools::builtin::test_support::{TestResult, context, workspace};

    #[tokio::test]
    async fn a_schedule_keeps_what_the_session_s_commands_get() -> TestResult {
        let store = Store::open_in_memory()?;
        let tool = ScheduleCreate {
            store: store.clone(),
            services: Arc::new(crate::tools::services::NoServices),
            limits: ScheduleLimits::default(),
            trusted: false,
        };
        let (_dir, ws) = workspace()?;
        let cwd = ws.display().to_string();
        store
            .call(move |db| {
                db.create_session(crate::memory::NewSession {
                    id: "session".into(),
                    parent_id: None,
                    cwd,
                    model: "m".into(),
                    title: String::new(),
                })
            })
            .await?;
        let offline = SandboxConfig {
            policy: SandboxPolicy::WorkspaceWrite,
            network: false,
        };
        let online = SandboxConfig {
            network: true,
            ..offline
        };
        let full = Approvals::new(offline, ApprovalMode::Full);
        let cases = [
            (
                Arc::new(Approvals::new(online, ApprovalMode::Ask)),
                (ApprovalMode::Ask, offline.policy, true),
            ),
            (
                Arc::new(Approvals::new(offline, ApprovalMode::Full)),
                (ApprovalMode::Full, SandboxPolicy::FullAccess, true),
            ),
            // A sub-agent started offline under full approval is still sandboxed and offline.
            (
                full.for_subagent(false),
                (ApprovalMode::Auto, SandboxPolicy::WorkspaceWrite, false),
            ),
        ];
        for (approvals, (approval, sandbox, network)) in cases {
            let mut ctx = context(&ws);
            ctx.approvals = approvals;
            let args = ScheduleCreateArgs {
                when: "in 2h".into(),
                prompt: "check".into(),
                repeat: None,
                deliver: Vec::new(),
            };
            tool.run(args, &ctx).await?;
            let row = store
                .call(|db| db.list_schedules())
                .await?
                .pop()
                .ok_or("no schedule")?;
            let kept = MakerRights {
                approval,
                sandbox,
                network,
                trusted: false,
            };
            assert_eq!(row.rights, kept);
        }
        Ok(())
    }
}
