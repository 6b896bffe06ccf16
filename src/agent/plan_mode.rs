//! Plan mode: the agent reads, searches and thinks but writes nothing (the read-only mode),
//! and its turn ends with a plan the person approves, edits or answers. The mode reaches the
//! model as a note at the end of each request (after the cached prefix, like the working
//! checkpoint), never by rewriting the system prompt or the tool list. The proposed plan is
//! kept with the session: a resume comes back to it, still in plan mode.

use serde::{Deserialize, Serialize};
use tokio::sync::mpsc;

use super::Session;
use crate::protocol::{Event, TurnStatus};
use crate::tools::approvals::Approvals;

/// What rides at the end of every request while plan mode is on.
pub(super) const PLAN_NOTE: &str = "[mnemo] Plan mode: read, search and think, but change \
    nothing (file writes are refused and commands run read-only). End this turn with your plan \
    for the person to approve: the steps, the files to change, and how to check the result.";

/// Longest plan kept, in characters.
const MAX_PLAN_CHARS: usize = 20_000;

/// A plan as it is kept with the session.
#[derive(Debug, Clone, Serialize, Deserialize)]
struct Kept {
    text: String,
    approved: bool,
}

/// Turns plan mode on or off and tells the front ends.
pub(super) async fn switch(approvals: &Approvals, events: &mpsc::Sender<Event>, on: bool) {
    let changed = match on {
        true => approvals.enter_plan(),
        false => approvals.leave_plan().is_some(),
    };
    if changed {
        let mode = approvals.mode();
        let _ = events.send(Event::ApprovalModeChanged { mode }).await;
        let _ = events.send(Event::PlanModeChanged { on }).await;
    }
}

/// The plan waiting for approval in what a session stored, if any.
pub(super) fn pending(stored: Option<&str>) -> Option<String> {
    let kept: Kept = serde_json::from_str(stored?).ok()?;
    (!kept.approved).then_some(kept.text)
}

impl Session {
    /// A turn in plan mode that completed proposes its last message as the plan.
    pub(super) async fn propose_plan(&mut self, status: TurnStatus) {
        if status != TurnStatus::Completed || self.settings.approvals.planning().is_none() {
            return;
        }
        let text = self
            .history
            .last()
            .filter(|m| m.role == crate::llm::Role::Assistant)
            .map(|m| m.text())
            .unwrap_or_default();
        let text = crate::text::clip(text.trim(), MAX_PLAN_CHARS);
        if text.is_empty() {
            return;
        }
        self.keep_plan(&text, false).await;
        self.proposed_plan = Some(text.clone());
        self.emit(Event::PlanProposed { text }).await;
    }

    /// Ends plan mode and gives the prompt that carries out the proposed plan (`edited`: the
    /// person's text of it instead); `None`, with an error for the person, when there is none.
    pub(super) async fn approve_plan(&mut self, edited: Option<String>) -> Option<String> {
        let plan = edited
            .map(|text| text.trim().to_string())
            .filter(|text| !text.is_empty())
            .or_else(|| self.proposed_plan.take());
        let Some(plan) = plan else {
            let message = "there is no plan to carry out: ask for one in plan mode first".into();
            self.emit(Event::Error { message }).await;
            return None;
        };
        self.proposed_plan = None;
        self.keep_plan(&plan, true).await;
        if let Some(events) = self.event_sender() {
            switch(&self.settings.approvals, &events, false).await;
        }
        Some(format!(
            "The plan is approved. Carry it out, step by step:\n\n{plan}"
        ))
    }

    /// Back in plan mode with the plan a resumed session was waiting on.
    pub(super) async fn offer_pending_plan(&self) {
        let Some(text) = self.proposed_plan.clone() else {
            return;
        };
        if let Some(events) = self.event_sender() {
            switch(&self.settings.approvals, &events, true).await;
        }
        self.emit(Event::PlanProposed { text }).await;
    }

    async fn keep_plan(&self, text: &str, approved: bool) {
        if !self.is_stored() {
            return;
        }
        let key = crate::memory::sessions::plan_key(&self.id);
        let kept = Kept {
            text: text.to_string(),
            approved,
        };
        let value = serde_json::to_string(&kept).unwrap_or_default();
        if let Err(err) = self
            .services
            .store
            .call(move |db| db.kv_set(&key, &value))
            .await
        {
            let message = format!("the plan could not be kept with the session: {err}");
            self.emit(Event::Error { message }).await;
        }
    }
}
