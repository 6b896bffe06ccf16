//! Applying the model's turn report: memory notes become experiences, the topic becomes the
//! session's subtitle, and a request to compress compacts after the turn. A turn without a
//! report gets a default one.

use serde_json::Value;

use super::Session;
use super::compaction::CompactReason;
use crate::llm::{ContentBlock, Role};
use crate::memory::StoreError;
use crate::memory::types::Scope;
use crate::protocol::TurnStatus;
use crate::tools::TypedTool;
use crate::tools::turn_report::{TurnReport, TurnReportArgs};

impl Session {
    /// Whether the last assistant message's calls were all turn reports that succeeded.
    pub(super) fn only_reported(&self) -> bool {
        let Some(answer) = self
            .history
            .iter()
            .rev()
            .find(|m| m.role == Role::Assistant)
        else {
            return false;
        };
        let mut calls = answer.tool_calls().peekable();
        calls.peek().is_some()
            && calls.all(|c| c.name == TurnReport::NAME)
            && self.report_of_turn().is_some()
    }

    /// Whether the turn's report says the request was fully done.
    pub(super) fn report_succeeded(&self) -> bool {
        self.report_of_turn()
            .is_some_and(|report| report.did_success)
    }

    /// The report the model gave in this turn's latest answer, if it gave a valid one.
    pub(super) fn report_of_turn(&self) -> Option<TurnReportArgs> {
        let answer = self
            .history
            .iter()
            .rev()
            .find(|m| m.role == Role::Assistant)?;
        let call = answer.tool_calls().find(|c| c.name == TurnReport::NAME)?;
        let answered_ok = self.history.iter().rev().take(2).any(|m| {
            m.content.iter().any(|b| matches!(b,
                ContentBlock::ToolResult { tool_use_id, is_error: false, .. } if tool_use_id == call.id))
        });
        answered_ok
            .then(|| serde_json::from_value(call.input.clone()).ok())
            .flatten()
    }

    /// Applies the turn's report (or a default one) and returns it for the turn record.
    pub(super) async fn close_report(&mut self, status: TurnStatus) -> Result<Value, StoreError> {
        let report = self.report_of_turn().unwrap_or_else(|| TurnReportArgs {
            did_success: status == TurnStatus::Completed,
            ..TurnReportArgs::default()
        });
        let (id, project) = (
            self.id.clone(),
            Scope::Project(self.settings.workspace.display().to_string()),
        );
        let applied = report.clone();
        self.services
            .store
            .call(move |db| {
                for note in applied
                    .memory_notes
                    .iter()
                    .map(|n| n.trim())
                    .filter(|n| !n.is_empty())
                {
                    db.remember(note, &project, "turn_report")?;
                }
                let topic = applied.current_topic.trim();
                if !topic.is_empty() {
                    db.set_subtitle(&id, Some(topic))?;
                }
                Ok(())
            })
            .await?;
        if report.should_compress {
            self.compact(CompactReason::Requested).await?;
        }
        Ok(serde_json::to_value(&report).unwrap_or(Value::Null))
    }
}
