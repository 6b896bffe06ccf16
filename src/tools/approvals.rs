//! The approval gate between the model's tool calls and their effects. Before a call that writes
//! or runs something, the agent asks the gate; the gate answers from the session's approval mode
//! and what the user already allowed for the session, or puts the question to the front end
//! (`Event::ApprovalRequested`) and waits for `Op::Approval`. A question nobody answers (the
//! front end went away, the user interrupted) is a denial; a session without a front end that
//! can answer (`mnemo run`) denies at once and says so.

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Instant;

use serde_json::Value;
use tokio::sync::{mpsc, oneshot};

use super::ask_user::Questions;
use super::front_end::FrontEnd;
use super::{Tool, ToolContext, ToolError};
use crate::hooks::Permission;
use crate::protocol::{ApprovalAction, ApprovalDecision, Event};
use crate::sandbox::approval::{self, Action, CommandGrant, Verdict, command_grant};
use crate::sandbox::{ApprovalMode, Confinement, Escalation, SandboxConfig, SandboxPolicy};

/// How a denial by the user begins, so front ends can say it in their own words.
pub const DENIED_BY_USER: &str = "the user denied this action";

/// What "allow for this session" remembers.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
enum Allowance {
    Command {
        grant: CommandGrant,
        escalation: Option<Escalation>,
    },
    Write {
        path: String,
    },
    Memory,
    Schedules,
    McpTool {
        server: String,
        tool: String,
    },
    Domain {
        host: String,
    },
}

impl Allowance {
    fn describe(&self) -> String {
        match self {
            Allowance::Command { grant, .. } => grant.describe(),
            Allowance::Write { path } => format!("writes to {path}"),
            Allowance::Memory => "changes to remembered experiences".to_string(),
            Allowance::Schedules => "changes to schedules".to_string(),
            Allowance::McpTool { server, tool } => {
                format!("calls to {tool} of MCP server {server}")
            }
            Allowance::Domain { host } => format!("connections to {host}"),
        }
    }
}

#[derive(Debug, Default)]
struct State {
    mode: ApprovalMode,
    /// In plan mode: the mode it returns to.
    planning: Option<ApprovalMode>,
    /// Whether the front end answers questions (the TUI does, `mnemo run` does not).
    can_ask: bool,
    /// Where questions go; `None` when nobody can answer them.
    asker: Option<mpsc::Sender<Event>>,
    pending: HashMap<String, oneshot::Sender<ApprovalDecision>>,
    allowed: HashSet<Allowance>,
    /// Why nobody can answer, when the session runs with nobody there (a heartbeat).
    unattended: Option<String>,
    /// Domains the person allowed for this session, beyond `[sandbox] allow_domains`.
    domains: crate::sandbox::domains::DomainList,
}

#[derive(Debug, Default)]
struct Shared {
    /// Makes question ids unique across sessions, so a stale answer never fits a new question.
    tag: String,
    base: SandboxConfig,
    /// Hidden paths, environment and limits of the session's commands and file tools.
    confinement: Arc<Confinement>,
    state: Mutex<State>,
    next_id: AtomicU64,
    /// The front end's services, reached like its answers to questions.
    front_end: FrontEnd,
    /// The model's questions to the person (`ask_user`), answered by the same front end.
    questions: Questions,
    /// The person's hooks, set once when the session starts.
    hooks: std::sync::OnceLock<crate::hooks::SharedHooks>,
}

/// One session's approvals. Sub-agents share the mode, the answers and the user to ask, so
/// they ask the same person under the same rules and never get more than their parent.
#[derive(Debug, Default)]
pub struct Approvals {
    shared: Arc<Shared>,
    /// A sub-agent started without network access: its commands never get the network.
    offline: bool,
}

impl Approvals {
    /// Approvals in `mode` for commands whose configured sandbox is `base`. Questions are
    /// denied until a front end attaches.
    pub fn new(base: SandboxConfig, mode: ApprovalMode) -> Self {
        Self::confined(base, mode, Arc::new(Confinement::default()))
    }

    /// Like [`Approvals::new`], with the launch's confinement.
    pub fn confined(
        base: SandboxConfig,
        mode: ApprovalMode,
        confinement: Arc<Confinement>,
    ) -> Self {
        Self {
            shared: Arc::new(Shared {
                tag: uuid::Uuid::new_v4().simple().to_string()[..8].to_string(),
                base,
                confinement,
                state: Mutex::new(State {
                    mode,
                    ..State::default()
                }),
                next_id: AtomicU64::new(1),
                front_end: FrontEnd::default(),
                questions: Questions::default(),
                hooks: std::sync::OnceLock::new(),
            }),
            offline: false,
        }
    }

    /// The approvals of a sub-agent: the same mode, answers and user; without `network`, its
    /// commands are kept off the network whatever the mode.
    pub fn for_subagent(&self, network: bool) -> Arc<Approvals> {
        Arc::new(Approvals {
            shared: self.shared.clone(),
            offline: self.offline || !network,
        })
    }

    fn state(&self) -> MutexGuard<'_, State> {
        self.shared
            .state
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }

    fn base(&self) -> &SandboxConfig {
        &self.shared.base
    }

    /// What confines the session's commands and file tools.
    pub fn confinement(&self) -> &Arc<Confinement> {
        &self.shared.confinement
    }

    /// The configured sandbox, before the mode and escalations change it.
    pub fn configured(&self) -> SandboxConfig {
        *self.base()
    }

    pub fn mode(&self) -> ApprovalMode {
        self.state().mode
    }

    /// Sets the mode; a mode chosen while planning ends plan mode.
    pub fn set_mode(&self, mode: ApprovalMode) {
        let mut state = self.state();
        state.mode = mode;
        state.planning = None;
    }

    /// Marks the front end as one that answers `Event::ApprovalRequested`; without it every
    /// question is denied at once.
    pub fn enable_questions(&self) {
        self.state().can_ask = true;
    }

    /// The session runs with nobody there to answer (`why`, for the model): every question
    /// is denied at once, and the denial says so.
    pub fn run_unattended(&self, why: impl Into<String>) {
        let mut state = self.state();
        state.can_ask = false;
        state.unattended = Some(why.into());
    }

    /// From now on questions go to `events`, whose reader answers with `Op::Approval` (if it
    /// answers at all: see [`Approvals::enable_questions`]).
    pub fn attach(&self, events: mpsc::Sender<Event>) {
        self.shared.front_end.attach(events.clone());
        self.state().asker = Some(events);
    }

    /// Nobody answers any more: waiting questions are denied, new ones refused.
    pub fn detach(&self) {
        self.shared.front_end.detach();
        self.shared.questions.clear();
        let mut state = self.state();
        state.asker = None;
        state.pending.clear();
    }

    /// Gives the session (and its sub-agents) `hooks`; only the first call counts.
    pub fn set_hooks(&self, hooks: crate::hooks::SharedHooks) {
        let _ = self.shared.hooks.set(hooks);
    }

    /// The person's hooks, when any are configured.
    pub fn hooks(&self) -> Option<&crate::hooks::SharedHooks> {
        self.shared.hooks.get()
    }

    /// The services the front end that answers the questions offers the tools.
    pub fn front_end(&self) -> &FrontEnd {
        &self.shared.front_end
    }

    /// The model's questions to the person.
    pub fn questions(&self) -> &Questions {
        &self.shared.questions
    }

    /// Where a question for the person goes, or, when nobody can answer, why the session
    /// runs unattended (`None` for a front end that does not answer, such as `mnemo run`).
    pub fn question_asker(&self) -> Result<mpsc::Sender<Event>, Option<String>> {
        let state = self.state();
        match state.asker.clone().filter(|_| state.can_ask) {
            Some(asker) => Ok(asker),
            None => Err(state.unattended.clone()),
        }
    }

    /// Passes the user's decision to the waiting call. `false` when no call waits for `id`.
    pub fn resolve(&self, id: &str, decision: ApprovalDecision) -> bool {
        match self.state().pending.remove(id) {
            Some(waiting) => waiting.send(decision).is_ok(),
            None => false,
        }
    }

    /// The sandbox a command runs in, with `escalation` (already approved) granted.
    pub fn sandbox_for(&self, escalation: Option<Escalation>) -> SandboxConfig {
        self.adjust(self.base(), escalation)
    }

    /// `configured` as the current mode and an approved `escalation` change it.
    pub fn adjust(
        &self,
        configured: &SandboxConfig,
        escalation: Option<Escalation>,
    ) -> SandboxConfig {
        let mut config = approval::effective(self.mode(), configured, escalation);
        if self.offline {
            // No sandbox would mean the network; keep such commands sandboxed instead.
            if config.policy == SandboxPolicy::FullAccess {
                config.policy = SandboxPolicy::WorkspaceWrite;
            }
            config.network = false;
        }
        config
    }

    /// The policy the file tools write under (`.git/` needs full access).
    pub fn write_policy(&self) -> SandboxPolicy {
        approval::write_policy(self.mode(), self.base())
    }

    /// Lets the call of `tool` with `input` go ahead, asking the user when the mode says so.
    /// The error is what the model is told.
    pub async fn check(
        &self,
        tool: &dyn Tool,
        input: &Value,
        ctx: &ToolContext,
    ) -> Result<(), ToolError> {
        self.check_hooked(tool, input, ctx, None).await
    }

    /// [`Approvals::check`] after a pre-tool hook answered `hook` (with its reason): `Allow`
    /// spares the question, `Ask` puts it whatever the mode; neither lifts a refusal (a
    /// read-only session, a sub-agent without network).
    pub async fn check_hooked(
        &self,
        tool: &dyn Tool,
        input: &Value,
        ctx: &ToolContext,
        hook: Option<(Permission, Option<String>)>,
    ) -> Result<(), ToolError> {
        let Some(action) = tool.approval_action(input) else {
            return Ok(());
        };
        let mode = self.mode();
        if self.offline && matches!(action, Action::Command(Some(_))) {
            return Err(ToolError::Denied(
                "this sub-agent was started without network access, so its commands cannot \
                 leave the sandbox; report what you need instead"
                    .into(),
            ));
        }
        let hooked = hook.as_ref().map(|(permission, _)| *permission);
        match approval::verdict(mode, self.base(), action) {
            Verdict::Refuse(reason) => return Err(ToolError::Denied(reason)),
            Verdict::Allow if hooked != Some(Permission::Ask) => return Ok(()),
            Verdict::Ask if hooked == Some(Permission::Allow) => return Ok(()),
            Verdict::Allow | Verdict::Ask => {}
        }
        let request = tool.approval_preview(input, ctx).await?;
        let allowance = allowance(&request);
        if hooked != Some(Permission::Ask)
            && allowance
                .as_ref()
                .is_ok_and(|a| self.state().allowed.contains(a))
        {
            return Ok(());
        }
        let reason = match (hook, action) {
            (Some((Permission::Ask, why)), _) => match why {
                Some(why) => format!("a PreToolUse hook asks: {why}"),
                None => "a PreToolUse hook asks".to_string(),
            },
            (_, Action::Command(Some(escalation))) => {
                format!("the command asks for {}", escalation.label())
            }
            _ => format!("approval mode is {mode}"),
        };
        let grant = allowance
            .as_ref()
            .map(Allowance::describe)
            .map_err(Clone::clone);
        match self.ask(ctx, tool.name(), request, reason, grant).await? {
            ApprovalDecision::AllowOnce => Ok(()),
            ApprovalDecision::AllowSession => {
                if let Ok(allowance) = allowance {
                    self.state().allowed.insert(allowance);
                }
                Ok(())
            }
            ApprovalDecision::Deny => Err(ToolError::Denied(format!(
                "{DENIED_BY_USER}. Do not try it again another way; ask the user how to proceed \
                 if it is needed"
            ))),
        }
    }

    async fn ask(
        &self,
        ctx: &ToolContext,
        tool: &str,
        action: ApprovalAction,
        reason: String,
        grant: Result<String, String>,
    ) -> Result<ApprovalDecision, ToolError> {
        let id = format!(
            "approval-{}-{}",
            self.shared.tag,
            self.shared.next_id.fetch_add(1, Ordering::Relaxed)
        );
        let (answer_tx, answer_rx) = oneshot::channel();
        let (asker, unattended) = {
            let mut state = self.state();
            let asker = state.asker.clone().filter(|_| state.can_ask);
            if asker.is_some() {
                state.pending.insert(id.clone(), answer_tx);
            }
            (asker, state.unattended.clone())
        };
        let Some(asker) = asker else {
            return Err(ToolError::Denied(match unattended {
                Some(why) => format!(
                    "this needs the user's approval ({reason}), and nobody is there to answer \
                     ({why}), so it was denied. Do not try it another way; say in your reply \
                     what you could not do and what approval it needs"
                ),
                None => format!(
                    "this needs the user's approval ({reason}), and nobody can answer here \
                     (`mnemo run` cannot ask), so it was denied. The user can allow it up front \
                     with --approval auto or --approval full"
                ),
            }));
        };
        let pending = Pending {
            approvals: self,
            id: id.clone(),
            asker: asker.clone(),
            answered: false,
        };
        let request = Event::ApprovalRequested {
            id: id.clone(),
            call_id: ctx.call_id.clone(),
            tool: tool.to_string(),
            action,
            reason,
            session_grant: grant.as_ref().ok().cloned(),
            only_once: grant.err(),
        };
        if asker.send(request).await.is_err() {
            return Ok(ApprovalDecision::Deny);
        }
        super::hooked::question_put(ctx, tool, asker.clone());
        let asked = Instant::now();
        let decision = tokio::select! {
            answer = answer_rx => answer.unwrap_or(ApprovalDecision::Deny),
            () = ctx.cancel.cancelled() => return Err(ToolError::Cancelled),
        };
        let waited = u64::try_from(asked.elapsed().as_millis()).unwrap_or(u64::MAX);
        ctx.waited_ms.fetch_add(waited, Ordering::Relaxed);
        pending.answered(decision).await;
        Ok(decision)
    }
}

/// A question in flight. Dropped unanswered (interrupt, timeout, shutdown), it withdraws the
/// question and tells the front end it was denied.
struct Pending<'a> {
    approvals: &'a Approvals,
    id: String,
    asker: mpsc::Sender<Event>,
    answered: bool,
}

impl Pending<'_> {
    async fn answered(mut self, decision: ApprovalDecision) {
        self.answered = true;
        let event = Event::ApprovalResolved {
            id: self.id.clone(),
            decision,
        };
        let _ = self.asker.send(event).await;
    }
}

impl Drop for Pending<'_> {
    fn drop(&mut self) {
        if self.answered {
            return;
        }
        self.approvals.state().pending.remove(&self.id);
        let _ = self.asker.try_send(Event::ApprovalResolved {
            id: std::mem::take(&mut self.id),
            decision: ApprovalDecision::Deny,
        });
    }
}

/// What "allow for this session" would remember, or why it is not offered.
fn allowance(request: &ApprovalAction) -> Result<Allowance, String> {
    match request {
        ApprovalAction::Command {
            command,
            escalation,
            ..
        } => command_grant(command)
            .map(|grant| Allowance::Command {
                grant,
                escalation: *escalation,
            })
            .map_err(|why| why.describe()),
        ApprovalAction::Write { path, .. } => Ok(Allowance::Write { path: path.clone() }),
        ApprovalAction::Memory { .. } => Ok(Allowance::Memory),
        ApprovalAction::Schedule { .. } => Ok(Allowance::Schedules),
        ApprovalAction::McpCall { server, tool, .. } => Ok(Allowance::McpTool {
            server: server.clone(),
            tool: tool.clone(),
        }),
        ApprovalAction::Network { host, .. } => Ok(Allowance::Domain { host: host.clone() }),
    }
}

/// The approvals of a context built without any (tests, tools run on their own): auto mode
/// under the default sandbox, nobody to ask.
pub fn detached() -> Arc<Approvals> {
    Arc::new(Approvals::new(
        SandboxConfig::default(),
        ApprovalMode::default(),
    ))
}

#[path = "approvals_plan.rs"]
mod plan;

#[path = "approvals_domains.rs"]
mod domains;

#[path = "approvals_confirm.rs"]
mod confirm;

#[cfg(test)]
#[path = "approvals_tests.rs"]
mod tests;
