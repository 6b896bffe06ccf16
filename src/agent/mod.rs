//! The agent task. It owns the session (history, model chain, tools) and talks to front ends only
//! through the protocol: `Op`s in on one channel, `Event`s out on another.

mod checkpoint;
mod compaction;
pub mod compaction_plan;
mod decide;
mod guards;
mod hooks;
mod mcp;
mod model_call;
mod model_switch;
mod nested_context;
mod oversized;
mod plan_mode;
pub mod prompt;
mod rewind;
mod services;
mod session;
mod skills;
pub mod subagents;
mod todo;
mod tool_exec;
mod tool_set;
mod turn_loop;
mod turn_report;
mod user_commands;
mod user_message;
mod window;
mod working_set;

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};

use tokio::sync::mpsc;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use crate::protocol::{ApprovalDecision, Event, Op, QuestionAnswer, UserMessageKind};
use crate::sandbox::ApprovalMode;
use crate::tools::Approvals;
use decide::OpAction;

pub use session::{Session, SessionSettings};
pub use skills::{SkillSettings, prepare_skills};

/// Bounded so a stalled front end slows the agent down instead of growing memory.
const EVENT_CAPACITY: usize = 1024;
const OP_CAPACITY: usize = 64;

/// The front end's end of the protocol.
pub struct AgentHandle {
    pub ops: mpsc::Sender<Op>,
    pub events: mpsc::Receiver<Event>,
    pub task: JoinHandle<Session>,
}

/// What arrives for a running turn; the turn drains it before each model call.
#[derive(Default)]
pub(crate) struct InboxState {
    pub texts: VecDeque<String>,
    pub compact: bool,
    /// A model `Op::SetModel` named during the turn, taken before the next model call.
    pub model: Option<String>,
}

pub(crate) type Inbox = Arc<Mutex<InboxState>>;

/// Starts the agent task for `session`. The task ends on `Op::Shutdown` or when every
/// sender is dropped, and hands the session back.
pub fn spawn(session: Session) -> AgentHandle {
    let (op_tx, op_rx) = mpsc::channel(OP_CAPACITY);
    let (event_tx, event_rx) = mpsc::channel(EVENT_CAPACITY);
    let task = tokio::spawn(async move {
        let id = Some(session.id.clone());
        let mut session = crate::crash::scoped("agent", id, drive(session, op_rx, event_tx)).await;
        // Dropping the sender tells the front end that no more events will come.
        session.detach();
        session
    });
    AgentHandle {
        ops: op_tx,
        events: event_rx,
        task,
    }
}

async fn drive(
    mut session: Session,
    mut ops: mpsc::Receiver<Op>,
    events: mpsc::Sender<Event>,
) -> Session {
    let control = Control {
        approvals: session.settings.approvals.clone(),
        events: events.clone(),
    };
    control.approvals.attach(events.clone());
    let runs = session.runs.clone();
    runs.attach(events.clone());
    session.attach(events);
    session.announce().await;
    session.announce_user_commands().await;
    session.session_start_hooks().await;
    session.start_pending_mcp();
    // A resumed history may reference capabilities: the front end hears of them at once.
    if let Err(err) = session.refresh_tools().await {
        let message = format!("could not read the pinned capabilities: {err}");
        let _ = control.events.send(Event::Error { message }).await;
    }
    let mailbox = session.mailbox.clone();
    let (mcp, mcp_budget) = (session.mcp.clone(), session.settings.mcp_max_tool_tokens);
    // Between turns a server's new tool list reaches the front end at once.
    let mut mcp_changes = mcp.as_ref().map(crate::mcp::McpManager::tools_changed);
    let mut mcp_states = mcp.as_ref().map(crate::mcp::McpManager::states_changed);
    let mut failed_told = std::collections::BTreeSet::new();
    session.report_failed_mcp(&mut failed_told).await;
    let mut queued: VecDeque<decide::Queued> = VecDeque::new();
    loop {
        // Injections and background results that arrived between turns open the next one.
        let arrived: Vec<String> = mailbox
            .inbox
            .lock()
            .map(|mut p| p.texts.drain(..).collect())
            .unwrap_or_default();
        decide::queue_arrived(&mut queued, arrived);
        let Some(next) = queued.pop_front() else {
            let op = tokio::select! {
                op = ops.recv() => op,
                () = mailbox.wake.notified() => continue,
                changed = bumped(&mut mcp_changes) => {
                    match changed {
                        true => refresh_between_turns(&mut session, &control).await,
                        false => mcp_changes = None,
                    }
                    continue;
                }
                changed = bumped(&mut mcp_states) => {
                    match changed {
                        true => session.report_failed_mcp(&mut failed_told).await,
                        false => mcp_states = None,
                    }
                    continue;
                }
            };
            match decide::on_op(op, false) {
                OpAction::Queue(input) => queued.push_back(input),
                OpAction::CancelBackground | OpAction::CancelTurn => runs.cancel_all(),
                // Boxed like a turn below: compaction calls the model.
                OpAction::CompactNow | OpAction::CompactBeforeNextCall => {
                    Box::pin(session.compact_now()).await;
                }
                OpAction::SwitchModelNow(model) | OpAction::SwitchModelBeforeNextCall(model) => {
                    session.change_model(&model).await;
                }
                OpAction::ListMcpServers => {
                    let servers = session.mcp_status();
                    let _ = control.events.send(Event::McpServers { servers }).await;
                }
                OpAction::Answer(id, decision) => control.answer(&id, decision),
                OpAction::Offer(services) => control.approvals.front_end().offer(services),
                OpAction::Reply(id, reply) => {
                    control.approvals.front_end().resolve(&id, reply);
                }
                OpAction::SetApprovalMode(mode) => control.set_mode(mode).await,
                OpAction::SetPlanMode(on) => control.set_plan(on).await,
                OpAction::ApprovePlan(edited) => {
                    if let Some(prompt) = session.approve_plan(edited).await {
                        queued.push_back(decide::Queued::text(prompt, UserMessageKind::Prompt));
                    }
                }
                OpAction::ListTurns => {
                    let event = session.list_turns().await;
                    let _ = control.events.send(event).await;
                }
                OpAction::Rewind(turn, what) => {
                    let event = session.rewind(turn, what).await;
                    let _ = control.events.send(event).await;
                }
                OpAction::AnswerQuestion(id, answer) => control.answer_question(&id, answer),
                OpAction::Shutdown => break,
                // Only a running turn takes these; between turns nothing waits for them.
                OpAction::Deliver(_)
                | OpAction::Withdraw(_)
                | OpAction::RefuseRewind
                | OpAction::Ignore => {}
            }
            continue;
        };
        let cancel = CancellationToken::new();
        // Boxed: a turn's state (model stream, tool calls) is large, and an idle session's
        // task should not hold room for it (a daemon holds many idle sessions).
        let mut turn = Box::pin(session.run_turn(next, cancel.clone(), mailbox.inbox.clone()));
        let mut shutting_down = false;
        loop {
            tokio::select! {
                _ = &mut turn => break,
                op = ops.recv(), if !shutting_down => match decide::on_op(op, true) {
                    OpAction::Deliver(text) => mailbox.deliver(text),
                    OpAction::Queue(input) => queued.push_back(input),
                    OpAction::Withdraw(text) => {
                        if decide::withdraw(&mut queued, &text) {
                            let _ = control.events.send(Event::QueuedWithdrawn { text }).await;
                        }
                    }
                    OpAction::CancelTurn | OpAction::CancelBackground => {
                        cancel.cancel();
                        runs.cancel_all();
                    }
                    OpAction::ListMcpServers => {
                        let servers = mcp::status(mcp.as_ref(), mcp_budget);
                        let _ = control.events.send(Event::McpServers { servers }).await;
                    }
                    OpAction::CompactBeforeNextCall | OpAction::CompactNow => {
                        if let Ok(mut pending) = mailbox.inbox.lock() {
                            pending.compact = true;
                        }
                    }
                    OpAction::SwitchModelBeforeNextCall(model) | OpAction::SwitchModelNow(model) => {
                        if let Ok(mut pending) = mailbox.inbox.lock() {
                            pending.model = Some(model);
                        }
                    }
                    OpAction::Shutdown => {
                        cancel.cancel();
                        shutting_down = true;
                    }
                    OpAction::Answer(id, decision) => control.answer(&id, decision),
                    OpAction::Offer(services) => control.approvals.front_end().offer(services),
                    OpAction::Reply(id, reply) => {
                        control.approvals.front_end().resolve(&id, reply);
                    }
                    OpAction::SetApprovalMode(mode) => control.set_mode(mode).await,
                    OpAction::SetPlanMode(on) => control.set_plan(on).await,
                    OpAction::RefuseRewind => {
                        let message = rewind::REFUSED_WHILE_RUNNING.to_string();
                        let _ = control.events.send(Event::Error { message }).await;
                    }
                    OpAction::ListTurns
                    | OpAction::Rewind(..)
                    | OpAction::ApprovePlan(_)
                    | OpAction::Ignore => {}
                    OpAction::AnswerQuestion(id, answer) => control.answer_question(&id, answer),
                },
            }
        }
        drop(turn);
        if shutting_down {
            break;
        }
        // Asked for after the turn's last model call: the next turn uses it.
        if let Some(model) = model_switch::take_model(&mailbox.inbox) {
            session.change_model(&model).await;
        }
    }
    runs.cancel_all();
    session
}

/// Waits for the next change of a counter (tools or server states); false once it is gone.
async fn bumped(changes: &mut Option<tokio::sync::watch::Receiver<u64>>) -> bool {
    match changes {
        Some(changes) => changes.changed().await.is_ok(),
        None => std::future::pending().await,
    }
}

async fn refresh_between_turns(session: &mut Session, control: &Control) {
    if let Err(err) = session.refresh_tools().await {
        let message = format!("could not update the tool list: {err}");
        let _ = control.events.send(Event::Error { message }).await;
    }
}

/// The ops that act the same whether a turn runs or not.
struct Control {
    approvals: Arc<Approvals>,
    events: mpsc::Sender<Event>,
}

impl Control {
    fn answer(&self, id: &str, decision: ApprovalDecision) {
        self.approvals.resolve(id, decision);
    }

    fn answer_question(&self, id: &str, answer: QuestionAnswer) {
        self.approvals.questions().resolve(id, answer);
    }

    async fn set_mode(&self, mode: ApprovalMode) {
        let planned = self.approvals.planning().is_some();
        self.approvals.set_mode(mode);
        let _ = self.events.send(Event::ApprovalModeChanged { mode }).await;
        if planned {
            let _ = self.events.send(Event::PlanModeChanged { on: false }).await;
        }
    }

    async fn set_plan(&self, on: bool) {
        plan_mode::switch(&self.approvals, &self.events, on).await;
    }
}
