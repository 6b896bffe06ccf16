//! The turn loop's and the op dispatcher's decisions, without IO: given the loop's state and
//! what just happened, what to do next. The drivers (`turn_loop.rs`, `mod.rs`) perform the
//! IO and follow these answers, so every rule here is testable without a model or a runtime.

use std::collections::VecDeque;

use super::InboxState;
use super::compaction::CompactReason;
use super::guards::RepeatGuard;
use crate::llm::StopReason;
use crate::protocol::{
    ApprovalDecision, Attachment, FrontEndReply, FrontEndServices, Op, QuestionAnswer, RewindWhat,
    TurnStatus, UserMessageKind,
};
use crate::sandbox::ApprovalMode;

/// The limits a turn runs under.
#[derive(Debug, Clone, Copy)]
pub(super) struct Limits {
    pub max_steps: u32,
    pub max_continuations: u32,
}

/// What one turn has done so far.
#[derive(Debug)]
pub(super) struct TurnState {
    pub steps: u32,
    pub continuations: u32,
    pub tool_calls: u32,
    pub guard: RepeatGuard,
    compacted_for_provider: bool,
    distil_asked: bool,
}

/// What to do just before a model call.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum BeforeCall {
    /// Make model call number `step`: compaction and the tool list are settled for it.
    Call { step: u32 },
    /// The step limit is reached: one last call without tools, then end with `StepLimit`.
    LastWord { steps: u32 },
}

/// Why a model call gave no answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum CallFailure {
    ContextTooLong,
    Cancelled,
    Other,
}

/// The model's answer, as far as the loop cares.
#[derive(Debug)]
pub(super) struct Reply<'a> {
    pub stop: &'a StopReason,
    pub tool_calls: u32,
    pub inbox_empty: bool,
    pub worth_a_skill: bool,
}

/// How running the answer's tool calls went.
#[derive(Debug, Clone, Copy)]
pub(super) struct ToolsRan {
    pub looped: bool,
    pub cancelled: bool,
    /// The answer's only calls were its turn report: it is the turn's final answer.
    pub only_reported: bool,
    pub inbox_empty: bool,
    pub worth_a_skill: bool,
}

/// What the turn loop does next.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum Next {
    /// Go round: drain injections into user messages, then call the model again.
    Step,
    /// Compact the conversation, then go round (the provider refused its length).
    CompactAndRetry,
    /// Run the tool calls of the answer just committed.
    RunTools,
    /// Ask the model to go on where the output limit cut its reply.
    AskToContinue,
    /// Ask the model to distil the turn into a skill before it ends.
    AskForSkill,
    End(TurnStatus),
}

impl TurnState {
    pub fn new(repeat_limit: u32) -> Self {
        Self {
            steps: 0,
            continuations: 0,
            tool_calls: 0,
            guard: RepeatGuard::new(repeat_limit),
            compacted_for_provider: false,
            distil_asked: false,
        }
    }

    pub fn before_call(&mut self, limits: Limits) -> BeforeCall {
        if self.steps >= limits.max_steps {
            return BeforeCall::LastWord { steps: self.steps };
        }
        self.steps += 1;
        BeforeCall::Call { step: self.steps }
    }

    pub fn on_failure(&mut self, failure: CallFailure) -> Next {
        match failure {
            // Compacting once can make room; a second refusal is final.
            CallFailure::ContextTooLong if !self.compacted_for_provider => {
                self.compacted_for_provider = true;
                Next::CompactAndRetry
            }
            CallFailure::Cancelled => Next::End(TurnStatus::Interrupted),
            CallFailure::ContextTooLong | CallFailure::Other => Next::End(TurnStatus::Failed),
        }
    }

    pub fn on_reply(&mut self, reply: &Reply<'_>, limits: Limits) -> Next {
        if reply.tool_calls > 0 {
            self.tool_calls += reply.tool_calls;
            return Next::RunTools;
        }
        match reply.stop {
            StopReason::Refusal => return Next::End(TurnStatus::Refused),
            StopReason::MaxTokens if self.continuations < limits.max_continuations => {
                self.continuations += 1;
                return Next::AskToContinue;
            }
            StopReason::MaxTokens => return Next::End(TurnStatus::CutOff),
            // The provider's own tools ran long: the reply goes back as it is to resume them
            // (each resumption is a step, so the step limit bounds them).
            StopReason::Paused => return Next::Step,
            _ => {}
        }
        if !reply.inbox_empty {
            return Next::Step;
        }
        self.finish(reply.worth_a_skill)
    }

    pub fn after_tools(&mut self, ran: ToolsRan) -> Next {
        if ran.looped {
            return Next::End(TurnStatus::LoopDetected);
        }
        if ran.cancelled {
            return Next::End(TurnStatus::Interrupted);
        }
        if ran.only_reported && ran.inbox_empty {
            return self.finish(ran.worth_a_skill);
        }
        Next::Step
    }

    /// A final answer ends the turn, once asking for a skill first when the turn earned one.
    fn finish(&mut self, worth_a_skill: bool) -> Next {
        if !self.distil_asked && worth_a_skill {
            self.distil_asked = true;
            return Next::AskForSkill;
        }
        Next::End(TurnStatus::Completed)
    }
}

/// The texts injected since the last step, in arrival order, each to become an injected user
/// message, and whether a compaction was asked for.
pub(super) fn drain_inbox(pending: &mut InboxState) -> (Vec<String>, bool) {
    let compact = std::mem::take(&mut pending.compact);
    (pending.texts.drain(..).collect(), compact)
}

/// How full the context is before a step.
#[derive(Debug, Clone, Copy)]
pub(super) struct Fill {
    pub used: f64,
    pub budget: f64,
    pub threshold: f64,
}

/// Whether the history holds so many messages that it must be compacted before the step
/// (which adds at least one more).
pub(super) fn over_message_limit(messages: usize, max_messages: usize) -> bool {
    messages >= max_messages
}

/// Past a quarter of the budget, exact token counts start to matter.
pub(super) fn tokenizer_needed(fill: Fill) -> bool {
    fill.used >= fill.budget / 4.0
}

/// Whether, and why, to compact before the next model call.
pub(super) fn compaction_due(asked: bool, fill: Fill) -> Option<CompactReason> {
    if asked {
        Some(CompactReason::Requested)
    } else if fill.used >= fill.threshold * fill.budget {
        Some(CompactReason::Threshold)
    } else {
        None
    }
}

/// What the op dispatcher does with an op (`None`: every sender is gone).
#[derive(Debug, PartialEq, Eq)]
pub(super) enum OpAction {
    /// Start a turn with it once the queue reaches it.
    Queue(Queued),
    /// Hand it to the running turn, which adds it before its next model call.
    Deliver(String),
    /// Take back a queued message the running turn has not started.
    Withdraw(String),
    /// Stop the running turn and every background agent.
    CancelTurn,
    /// No turn runs: stop the background agents.
    CancelBackground,
    /// No turn runs: compact now.
    CompactNow,
    /// Compact before the running turn's next model call.
    CompactBeforeNextCall,
    /// No turn runs: go on with this model now.
    SwitchModelNow(String),
    /// Go on with this model from the running turn's next model call.
    SwitchModelBeforeNextCall(String),
    Answer(String, ApprovalDecision),
    Offer(FrontEndServices),
    Reply(String, FrontEndReply),
    SetApprovalMode(ApprovalMode),
    SetPlanMode(bool),
    /// No turn runs: carry out the proposed plan (or the person's edit of it).
    ApprovePlan(Option<String>),
    ListMcpServers,
    /// No turn runs: list the turns a rewind can go back to.
    ListTurns,
    /// No turn runs: take back turn `.0` and the later ones.
    Rewind(u64, RewindWhat),
    /// A turn runs: a rewind waits until it is interrupted or ends.
    RefuseRewind,
    /// The person's answer to an `ask_user` question.
    AnswerQuestion(String, QuestionAnswer),
    /// Nothing to do: a withdrawal between turns finds no queued message waiting.
    Ignore,
    Shutdown,
}

pub(super) fn on_op(op: Option<Op>, turn_running: bool) -> OpAction {
    let Some(op) = op else {
        return OpAction::Shutdown;
    };
    match op {
        Op::UserInput { text, images } if turn_running => OpAction::Queue(Queued {
            text,
            kind: UserMessageKind::Queued,
            images,
        }),
        Op::UserInput { text, images } => OpAction::Queue(Queued {
            text,
            kind: UserMessageKind::Prompt,
            images,
        }),
        Op::Inject { text } if turn_running => OpAction::Deliver(text),
        Op::Inject { text } => OpAction::Queue(Queued::text(text, UserMessageKind::Prompt)),
        Op::Withdraw { text } if turn_running => OpAction::Withdraw(text),
        // Between turns a queued message has already started.
        Op::Withdraw { .. } => OpAction::Ignore,
        Op::Interrupt if turn_running => OpAction::CancelTurn,
        Op::Interrupt => OpAction::CancelBackground,
        Op::Compact if turn_running => OpAction::CompactBeforeNextCall,
        Op::Compact => OpAction::CompactNow,
        Op::SetModel { model } if turn_running => OpAction::SwitchModelBeforeNextCall(model),
        Op::SetModel { model } => OpAction::SwitchModelNow(model),
        Op::Approval { id, decision } => OpAction::Answer(id, decision),
        Op::OfferServices { services } => OpAction::Offer(services),
        Op::FrontEndReply { id, reply } => OpAction::Reply(id, reply),
        Op::SetApprovalMode { mode } => OpAction::SetApprovalMode(mode),
        Op::ListMcpServers => OpAction::ListMcpServers,
        Op::Shutdown => OpAction::Shutdown,
        Op::ListTurns | Op::Rewind { .. } if turn_running => OpAction::RefuseRewind,
        Op::ListTurns => OpAction::ListTurns,
        Op::Rewind { turn, what } => OpAction::Rewind(turn, what),
        Op::SetPlanMode { on } => OpAction::SetPlanMode(on),
        // A plan is proposed when a turn ends; none is waiting while one runs.
        Op::ApprovePlan { .. } if turn_running => OpAction::Ignore,
        Op::ApprovePlan { plan } => OpAction::ApprovePlan(plan),
        Op::AnswerQuestion { id, answer } => OpAction::AnswerQuestion(id, answer),
    }
}

/// A user message waiting for its turn: its text, how it came, and the images attached.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Queued {
    pub text: String,
    pub kind: UserMessageKind,
    pub images: Vec<Attachment>,
}

impl Queued {
    pub fn text(text: String, kind: UserMessageKind) -> Self {
        Self {
            text,
            kind,
            images: Vec::new(),
        }
    }
}

/// Removes the latest queued message with this text; true when one was waiting.
pub(super) fn withdraw(queued: &mut VecDeque<Queued>, text: &str) -> bool {
    let waiting = queued
        .iter()
        .rposition(|q| q.text == text && q.kind == UserMessageKind::Queued);
    waiting.and_then(|index| queued.remove(index)).is_some()
}

/// Injections that arrived between turns open the next turns, ahead of queued messages.
pub(super) fn queue_arrived(queued: &mut VecDeque<Queued>, arrived: Vec<String>) {
    for text in arrived.into_iter().rev() {
        queued.push_front(Queued::text(text, UserMessageKind::Injected));
    }
}

#[cfg(test)]
#[path = "decide_tests.rs"]
mod tests;
