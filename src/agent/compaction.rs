//! Compaction: the older middle of the working set moves to the archive, whole turns at a
//! time, and a structured summary takes its place, while the first user message and the recent
//! turns stay. The summary comes from the compressor model; if that fails, a mechanical one is
//! used, so a compaction never loses anything. One estimate decides both when to compact and
//! how much to keep (the system prompt, the summary and the tool schemas counted, corrected by
//! what the provider reported), and a compaction leaves the context at half the budget, so the
//! next one is many steps away. A message too big for the context by itself is cut, its whole
//! text kept in the archive.

use std::fmt::Write;
use std::sync::Arc;

use futures_util::StreamExt;
use serde::{Deserialize, Serialize};

use super::Session;
use super::compaction_plan::{Keep, plan};
use super::decide;
use crate::llm::fallback::ChainModel;
use crate::llm::{Message, ModelRequest, StreamEvent};
use crate::memory::types::{NewArchiveEntry, Scope};
use crate::memory::{StoreError, importance, summary};
use crate::protocol::{CompactionKind, Event};
use crate::text::{clip, first_line};

const COMPRESSOR_PROMPT: &str = include_str!("../../assets/compressor.md");
/// The recent messages a compaction always keeps.
const MIN_TAIL: usize = 10;
/// The compressor reads at most this much of the dropped stretch.
const MAX_TRANSCRIPT_CHARS: usize = 200_000;
/// The longest summary kept when mechanical summaries are merged.
const MAX_SUMMARY_CHARS: usize = 6_000;
/// Tokens kept free for the summary a compaction writes (a new one replaces the previous one,
/// which is already counted, so this covers its growth).
const SUMMARY_ALLOWANCE: u64 = 400;

/// Why a compaction runs; the kind of summary follows from it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CompactReason {
    /// The working set passed its message limit: a cheap mechanical summary.
    MessageLimit,
    /// The context neared the budget: a model-written summary, keeping what fits half of it.
    Threshold,
    /// The user or the model asked, or the provider refused the context: a model-written
    /// summary, keeping only the recent messages.
    Requested,
}

/// The fields the compressor writes.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct StructuredSummary {
    pub goal: String,
    pub instruction: String,
    pub discoveries: Vec<String>,
    pub completed: Vec<String>,
    pub current_status: String,
    pub likely_next_work: Vec<String>,
    pub relevant_files: Vec<String>,
    pub remember: Vec<String>,
}

impl StructuredSummary {
    pub(super) fn render(&self) -> String {
        let mut out = String::new();
        let mut line = |label: &str, text: &str| {
            if !text.trim().is_empty() {
                let _ = writeln!(out, "{label}: {}", text.trim());
            }
        };
        line("Goal", &self.goal);
        line("Instructions", &self.instruction);
        line("Current status", &self.current_status);
        for (label, items) in [
            ("Discoveries", &self.discoveries),
            ("Completed", &self.completed),
            ("Likely next work", &self.likely_next_work),
            ("Relevant files", &self.relevant_files),
        ] {
            if !items.is_empty() {
                let _ = writeln!(out, "{label}:");
                for item in items {
                    let _ = writeln!(out, "- {item}");
                }
            }
        }
        out
    }
}

impl Session {
    /// The summary of compacted conversation, placed after the first message in requests.
    pub(super) fn summary_message(&self) -> Option<Arc<Message>> {
        let summary = self.summary.as_ref()?;
        Some(Arc::new(Message::user_text(format!(
            "[Summary of earlier conversation, now in the archive; memory_search finds the \
             details]\n{summary}"
        ))))
    }

    /// Compacts when the working set passed its message limit, when the estimated context
    /// (corrected by what the provider counted) passed the threshold, or when asked.
    pub(super) async fn maybe_compact(&mut self, asked: bool) -> Result<(), StoreError> {
        if decide::over_message_limit(self.history.len(), self.settings.max_active_messages) {
            self.compact(CompactReason::MessageLimit).await?;
        }
        let fill = decide::Fill {
            used: self.context_tokens() as f64,
            budget: self.budget() as f64,
            threshold: self.settings.compact_threshold,
        };
        if decide::tokenizer_needed(fill) {
            crate::llm::tokens::warm_up();
        }
        if let Some(reason) = decide::compaction_due(asked, fill) {
            self.compact(reason).await?;
        }
        Ok(())
    }

    /// `Op::Compact` between turns: compact now and say what happened.
    pub(crate) async fn compact_now(&mut self) {
        let outcome = self.compact(CompactReason::Requested).await;
        let message = match outcome {
            Ok(true) => return,
            Ok(false) => "nothing to compact yet: the conversation is still short".to_string(),
            Err(err) => format!("compaction failed: {err}"),
        };
        self.emit(Event::Notice { message }).await;
    }

    /// Compacts the working set. Returns whether anything was compacted.
    pub(super) async fn compact(&mut self, reason: CompactReason) -> Result<bool, StoreError> {
        let tokens: Vec<u32> = self.meta.iter().map(|m| m.tokens).collect();
        let starts: Vec<bool> = self.meta.iter().map(|m| m.starts_turn).collect();
        let budget = self.message_budget(self.budget());
        // Over the message limit, keep three quarters of it so this does not run every step;
        // over the budget, keep what fits under half of it.
        let keep = match reason {
            CompactReason::MessageLimit => Keep {
                target: 0,
                hard: budget,
                min_tail: self.settings.max_active_messages * 3 / 4,
            },
            CompactReason::Threshold => Keep {
                // A little under half the budget, so the next compaction is many steps away,
                // with room for the summary that the compaction adds.
                target: self
                    .message_budget(self.budget() * 9 / 20)
                    .saturating_sub(SUMMARY_ALLOWANCE),
                hard: budget,
                min_tail: MIN_TAIL,
            },
            CompactReason::Requested => Keep {
                target: 0,
                hard: budget,
                min_tail: MIN_TAIL,
            },
        };
        let Some(plan) = plan(&self.history, &tokens, &starts, keep) else {
            return self.cut_oversized().await;
        };
        let before = self.context_tokens();
        let dropped: Vec<Message> = self.history[1..plan.tail_start]
            .iter()
            .map(|m| (**m).clone())
            .collect();
        let (mechanical_topic, mechanical_summary) = summary::mechanical_summary(&dropped);
        let mechanical_topic = match mechanical_topic {
            Some(topic) => topic,
            // The stretch continues the first turn: it is about what that turn asked.
            None => summary::topic_of(&self.history[0]),
        };
        let written = match reason {
            CompactReason::Threshold | CompactReason::Requested => self.summarize(&dropped).await,
            CompactReason::MessageLimit => None,
        };
        let kind = if written.is_some() {
            CompactionKind::Model
        } else {
            CompactionKind::Mechanical
        };
        let (topic, text) = match &written {
            Some(s) if !s.goal.trim().is_empty() => (clip(first_line(&s.goal), 80), s.render()),
            Some(s) => (mechanical_topic.clone(), s.render()),
            None => (mechanical_topic, mechanical_summary),
        };
        let entry = NewArchiveEntry {
            session_id: self.id.clone(),
            topic,
            summary: text.clone(),
            token_count: tokens[1..plan.tail_start]
                .iter()
                .map(|&t| u64::from(t))
                .sum(),
            importance: importance::importance(&dropped),
            first_seq: self.meta[1].seq,
            last_seq: self.meta[plan.tail_start - 1].seq,
            started_at: self.meta[1].created_at,
            ended_at: self.meta[plan.tail_start - 1].created_at,
            messages: dropped,
        };
        let summary = match &self.summary {
            Some(previous) if kind == CompactionKind::Mechanical => {
                merge_summaries(previous, &text)
            }
            _ => text,
        };
        let (key, stored_summary) = (
            crate::memory::sessions::summary_key(&self.id),
            summary.clone(),
        );
        let remember: Vec<String> = written.map(|s| s.remember).unwrap_or_default();
        let project = Scope::Project(self.settings.workspace.display().to_string());
        let archive_id = self
            .services
            .store
            .call(move |db| {
                let archive_id = db.archive_messages(entry)?;
                db.kv_set(&key, &stored_summary)?;
                for note in remember.iter().filter(|n| !n.trim().is_empty()) {
                    db.remember(note.trim(), &project, "compaction")?;
                }
                Ok(archive_id)
            })
            .await?;
        self.history.drain(1..plan.tail_start);
        let dropped = self.meta.drain(1..plan.tail_start);
        // Capabilities found by what was archived leave the tool list with it.
        self.caps.remove(dropped.map(|m| m.seq));
        // Embedding what was archived must not make a short run load the model: without it in
        // memory, `mnemo serve` or the next process that has it loaded embeds these entries.
        self.embed_turn_in_background();
        self.summary = Some(summary);
        self.archived_any = true;
        self.reload_skills().await?;
        self.refresh_system_prompt().await?;
        self.cut_oversized().await?;
        let after = self.context_tokens();
        self.emit(Event::Compacted {
            tokens_before: before,
            tokens_after: after,
            archive_id,
            kind,
        })
        .await;
        // The context gauge shows what is left now, not what the last call used.
        let percent = (after as f64 / self.budget() as f64 * 100.0).min(100.0) as f32;
        self.emit(Event::Usage {
            last: crate::llm::Usage::default(),
            total: self.total_usage,
            cost_usd: self.cost_usd,
            context_percent: percent,
        })
        .await;
        Ok(true)
    }

    /// What the messages may take when the whole request is to fit `context` (corrected
    /// tokens): the fixed part (system prompt, summary, tools) comes off, and the rest is
    /// turned back into the units of the per-message estimates.
    pub(super) fn message_budget(&self, context: u64) -> u64 {
        let ratio = self.calibration.ratio().max(0.01);
        let raw = (context as f64 / ratio) as u64;
        raw.saturating_sub(self.prompt_tokens + self.step_tools.tool_tokens)
    }

    /// The estimate of the next request, corrected by what the provider counted: the one
    /// figure both the trigger and the target of compaction use.
    pub(super) fn context_tokens(&self) -> u64 {
        self.calibration.apply(self.working_tokens())
    }

    /// Tokens the next request would carry: system prompt, summary, tool schemas and working
    /// set, from the estimates stored with each message.
    pub(super) fn working_tokens(&self) -> u64 {
        let messages: u64 = self.meta.iter().map(|m| u64::from(m.tokens)).sum();
        messages + self.prompt_tokens + self.step_tools.tool_tokens
    }

    /// The context the session's model can fill: its window less its output and a reserve.
    pub(super) fn budget(&self) -> u64 {
        let Some(model) = self.chain.primary() else {
            return 0;
        };
        let reserve = (model.context_window / 50).max(2000);
        model
            .context_window
            .saturating_sub(u64::from(model.max_output_tokens))
            .saturating_sub(reserve)
            .max(1)
    }

    /// Asks the compressor model for a structured summary; `None` when it fails.
    pub(super) async fn summarize(&self, dropped: &[Message]) -> Option<StructuredSummary> {
        let model: &ChainModel = self
            .services
            .compressor
            .as_ref()
            .or_else(|| self.chain.primary())?;
        let mut transcript = crate::llm::transcript::to_markdown(dropped);
        if let Some((cut, _)) = transcript.char_indices().nth(MAX_TRANSCRIPT_CHARS) {
            transcript.truncate(cut);
        }
        let previous = self.summary.as_deref().unwrap_or("(none)");
        let request = ModelRequest {
            system: COMPRESSOR_PROMPT.to_string(),
            messages: vec![Arc::new(Message::user_text(format!(
                "Previous summary:\n{previous}\n\nConversation being removed:\n\n{transcript}"
            )))],
            tools: Vec::new().into(),
            static_tools: usize::MAX,
            volatile_tail: 0,
            tool_calls: crate::llm::ToolCalls::Allowed,
            server_search: false,
            max_output_tokens: model.max_output_tokens.min(4096),
        };
        // An interrupt ends the wait: the mechanical summary takes its place.
        let cancel = self.turn_cancel.clone();
        let ask = async {
            let mut stream = model.provider.stream(request).await.ok()?;
            while let Some(item) = stream.next().await {
                if let StreamEvent::Completed(response) = item.ok()? {
                    return parse_summary(&response.message.text());
                }
            }
            None
        };
        tokio::select! {
            summary = ask => summary,
            () = cancel.cancelled() => None,
        }
    }
}

/// A mechanical summary added to the one before: the new one whole, and as much of the
/// previous one as fits the bound, its latest lines first.
fn merge_summaries(previous: &str, new: &str) -> String {
    let room = MAX_SUMMARY_CHARS.saturating_sub(new.len() + 1);
    let mut kept: Vec<&str> = Vec::new();
    let mut used = 0;
    for line in previous.lines().rev() {
        if used + line.len() + 1 > room {
            break;
        }
        used += line.len() + 1;
        kept.push(line);
    }
    kept.reverse();
    let mut merged = kept.join("\n");
    if !merged.is_empty() {
        merged.push('\n');
    }
    merged.push_str(new);
    merged
}

/// The JSON object in the compressor's answer, tolerating prose or fences around it.
fn parse_summary(text: &str) -> Option<StructuredSummary> {
    let start = text.find('{')?;
    let end = text.rfind('}')?;
    serde_json::from_str(text.get(start..=end)?).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn merged_mechanical_summaries_stay_bounded_and_keep_the_newest() {
        let mut summary = String::new();
        for i in 0..500 {
            let next = format!("Requests:\n- request number {i}\nOutcome: done {i}");
            summary = match summary.is_empty() {
                true => next,
                false => merge_summaries(&summary, &next),
            };
        }
        assert!(summary.len() <= MAX_SUMMARY_CHARS, "{}", summary.len());
        assert!(summary.ends_with("Outcome: done 499"));
        assert!(!summary.contains("request number 0\n"));
    }

    #[test]
    fn the_summary_is_read_from_json_even_inside_a_code_fence() {
        let text = "Here it is:\n```json\n{\"goal\": \"ship v1\", \"completed\": [\"wrote a.rs\"], \"remember\": [\"use pnpm\"]}\n```";
        let summary = parse_summary(text).unwrap_or_default();
        assert_eq!(summary.goal, "ship v1");
        assert_eq!(summary.remember, ["use pnpm"]);
        let rendered = summary.render();
        assert!(rendered.contains("Goal: ship v1"));
        assert!(rendered.contains("Completed:\n- wrote a.rs"));
        assert!(parse_summary("no json here").is_none());
    }
}
