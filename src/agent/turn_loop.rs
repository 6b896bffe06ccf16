//! One turn: drain injections, call the model, run the tools it asks for, repeat until it
//! answers without tools or a guard stops it. Every completed message is committed before
//! the next step starts.

use tokio_util::sync::CancellationToken;

use crate::text::{clip, first_line};

use super::compaction::CompactReason;
use super::decide::Queued;
use super::decide::{BeforeCall, CallFailure, Limits, Next, Reply, ToolsRan, TurnState};
use super::model_call::StepFailure;
use super::{Inbox, Session};
use crate::llm::fallback::ChainError;
use crate::llm::image::ImageBlock;
use crate::llm::{ContentBlock, Message, StopReason, Usage};
use crate::memory::StoreError;
use crate::memory::types::TurnRecord;
use crate::protocol::{Event, TurnStatus, UserMessageKind};

impl Session {
    pub(super) async fn run_turn(
        &mut self,
        input: Queued,
        cancel: CancellationToken,
        inbox: Inbox,
    ) -> (TurnStatus, Option<String>) {
        let Queued { text, kind, images } = input;
        let images = self.take_attachments(images).await;
        let (text, model_after) = match self.expand_user_command(text, kind).await {
            Ok(expanded) => expanded,
            Err(why) => return self.refuse_prompt(why).await,
        };
        let ended = self.run_prompt(text, kind, images, cancel, inbox).await;
        if let Some(model) = model_after {
            self.change_model(&model).await;
        }
        ended
    }

    async fn run_prompt(
        &mut self,
        text: String,
        kind: UserMessageKind,
        images: Vec<ImageBlock>,
        cancel: CancellationToken,
        inbox: Inbox,
    ) -> (TurnStatus, Option<String>) {
        let context = match matches!(kind, UserMessageKind::Prompt | UserMessageKind::Queued) {
            true => self.prompt_hooks(&text).await,
            false => Ok(Vec::new()),
        };
        let context = match context {
            Ok(context) => context,
            Err(why) => return self.refuse_prompt(why).await,
        };
        self.turns += 1;
        let turn = self.turns;
        self.turn_cancel = cancel.clone();
        // A new task starts with a clean working checkpoint; an injection goes on with it.
        if matches!(kind, UserMessageKind::Prompt | UserMessageKind::Queued) {
            self.checkpoint = None;
            if let Err(err) = self.drop_finished_todo().await {
                let message = store_failure(&err);
                self.emit(Event::Error { message }).await;
            }
        }
        self.emit(Event::TurnStarted { turn }).await;
        let before = (self.total_usage, self.cost_usd);
        let started_at = now_millis();
        let first_seq = self.next_seq;
        let prompt = text.clone();
        let opened = self
            .open_turn(turn, started_at, (text, images), kind, context)
            .await;
        if opened.is_ok() {
            self.keep_for_rewind(turn, prompt, first_seq, started_at)
                .await;
        }
        let (status, message) = match opened {
            Ok(()) => self.turn_steps(&cancel, &inbox).await,
            Err(err) => (TurnStatus::Failed, Some(store_failure(&err))),
        };
        self.propose_plan(status).await;
        // Without a report, a completed turn counts as a success.
        let succeeded = status == TurnStatus::Completed
            && self
                .report_of_turn()
                .is_none_or(|report| report.did_success);
        self.count_skill_outcomes(succeeded).await;
        let report = match self.close_report(status).await {
            Ok(report) => Some(report),
            Err(err) => {
                self.emit(Event::Error {
                    message: store_failure(&err),
                })
                .await;
                None
            }
        };
        let (usage, cost_usd) = (
            usage_since(&self.total_usage, &before.0),
            self.cost_usd - before.1,
        );
        let record = TurnRecord {
            session_id: self.id.clone(),
            turn,
            status,
            started_at,
            finished_at: now_millis(),
            usage,
            cost_usd,
            report,
        };
        if let Err(err) = self
            .services
            .store
            .call(move |db| db.finish_turn(&record))
            .await
        {
            self.emit(Event::Error {
                message: store_failure(&err),
            })
            .await;
        }
        self.embed_turn_in_background();
        // Forks the turn never gathered report back instead of being dropped unseen.
        self.runs.release_open_forks(&self.mailbox);
        // Results that arrived as the turn ended open the next turn too.
        let arrived = self
            .mailbox
            .inbox
            .lock()
            .map_or(0, |inbox| inbox.texts.len() as u32);
        let pending = self.runs.in_background() + arrived;
        if pending > 0 && self.runs.depth == 0 {
            self.emit(Event::AgentsPending { count: pending }).await;
        }
        self.emit(Event::TurnFinished {
            turn,
            status,
            message: message.clone(),
            usage,
            cost_usd,
        })
        .await;
        (status, message)
    }

    /// Records the turn, refreshes the experiences in the system prompt and adds the user's
    /// message.
    async fn open_turn(
        &mut self,
        turn: u64,
        started_at: i64,
        (text, images): (String, Vec<ImageBlock>),
        kind: UserMessageKind,
        hook_context: Vec<String>,
    ) -> Result<(), StoreError> {
        self.ensure_stored().await?;
        let id = self.id.clone();
        self.services
            .store
            .call(move |db| db.begin_turn(&id, turn, started_at))
            .await?;
        match self.prompt_built {
            true => self.note_growth().await?,
            false => self.refresh_system_prompt().await?,
        }
        self.add_user_message(text, kind, images).await?;
        for context in hook_context {
            let text = format!("[hook context] {context}");
            self.add_user_text(text, UserMessageKind::Injected).await?;
        }
        Ok(())
    }

    /// Ends a turn a UserPromptSubmit hook blocked before it began: nothing is stored, the
    /// front end hears why.
    async fn refuse_prompt(&mut self, why: String) -> (TurnStatus, Option<String>) {
        let turn = self.turns + 1;
        self.emit(Event::TurnStarted { turn }).await;
        self.emit(Event::TurnFinished {
            turn,
            status: TurnStatus::Refused,
            message: Some(why.clone()),
            usage: Usage::default(),
            cost_usd: 0.0,
        })
        .await;
        (TurnStatus::Refused, Some(why))
    }

    async fn turn_steps(
        &mut self,
        cancel: &CancellationToken,
        inbox: &Inbox,
    ) -> (TurnStatus, Option<String>) {
        match self.turn_loop(cancel, inbox).await {
            Ok(outcome) => outcome,
            Err(err) => {
                let message = store_failure(&err);
                self.emit(Event::Error {
                    message: message.clone(),
                })
                .await;
                (TurnStatus::Failed, Some(message))
            }
        }
    }

    async fn turn_loop(
        &mut self,
        cancel: &CancellationToken,
        inbox: &Inbox,
    ) -> Result<(TurnStatus, Option<String>), StoreError> {
        let limits = Limits {
            max_steps: self.settings.max_steps,
            max_continuations: self.settings.max_continuations,
        };
        let mut state = TurnState::new(self.settings.repeat_limit);
        let mut stop_continued = 0;
        loop {
            if let Some(model) = super::model_switch::take_model(inbox) {
                self.change_model(&model).await;
            }
            let (texts, compact_asked) = drain(inbox);
            for text in texts {
                self.add_user_text(text, UserMessageKind::Injected).await?;
            }
            // Compaction cannot make room the fixed prompt takes: say so before any request
            // (the session said it at its start too).
            if let Some(why) = self.window_too_small() {
                return Ok((TurnStatus::Failed, Some(why)));
            }
            self.maybe_compact(compact_asked).await?;
            self.wait_for_mcp(cancel).await;
            self.refresh_tools().await?;
            if cancel.is_cancelled() {
                return Ok((TurnStatus::Interrupted, None));
            }
            match state.before_call(limits) {
                BeforeCall::Call { step } => self.step = step,
                BeforeCall::LastWord { steps } => {
                    let note = format!(
                        "stopped after {steps} model calls (the step limit); send a message to continue"
                    );
                    self.last_word(steps, cancel).await?;
                    return Ok((TurnStatus::StepLimit, Some(note)));
                }
            }

            let estimated = self.working_tokens();
            let mut wasted = Vec::new();
            let step = self.model_step(cancel, &mut wasted).await;
            for (usage, model) in wasted {
                self.count_usage(usage, &model).await;
            }
            let (response, model) = match step {
                Ok(answered) => answered,
                Err(failure) => match state.on_failure(failure_kind(&failure)) {
                    Next::CompactAndRetry => {
                        self.compact(CompactReason::Requested).await?;
                        continue;
                    }
                    _ => return self.end_without_answer(failure).await,
                },
            };
            self.record_usage(response.usage, &model, estimated).await;
            let stop = response.stop_reason;
            let message = response.message;
            let text = message.text();
            let message_calls = message.tool_calls().count() as u32;
            self.commit(message).await?;
            self.emit(Event::AssistantMessage { text: text.clone() })
                .await;
            let limit = model.max_output_tokens;

            let reply = Reply {
                stop: &stop,
                tool_calls: message_calls,
                inbox_empty: inbox_is_empty(inbox),
                worth_a_skill: self.worth_a_skill(state.tool_calls),
            };
            let mut next = state.on_reply(&reply, limits);
            let mut loop_note = None;
            if next == Next::RunTools {
                let cut_off = (stop == StopReason::MaxTokens).then_some(limit);
                loop_note = self
                    .run_tool_calls(&mut state.guard, cancel, cut_off)
                    .await?;
                self.note_checkpoint();
                self.note_todo().await?;
                self.note_skills();
                next = state.after_tools(ToolsRan {
                    looped: loop_note.is_some(),
                    cancelled: cancel.is_cancelled(),
                    only_reported: self.only_reported(),
                    inbox_empty: inbox_is_empty(inbox),
                    worth_a_skill: self.worth_a_skill(state.tool_calls),
                });
            }
            match next {
                Next::Step | Next::RunTools | Next::CompactAndRetry => {}
                Next::AskToContinue => {
                    self.add_user_text(CONTINUE.into(), UserMessageKind::Continuation)
                        .await?;
                }
                Next::AskForSkill => {
                    let ask = self.distil_request(state.tool_calls).await;
                    self.add_user_text(ask, UserMessageKind::SkillRequest)
                        .await?;
                }
                Next::End(TurnStatus::LoopDetected) => {
                    if let Some(note) = &loop_note {
                        self.emit(Event::Error {
                            message: note.clone(),
                        })
                        .await;
                    }
                    return Ok((TurnStatus::LoopDetected, loop_note));
                }
                Next::End(TurnStatus::Completed)
                    if let Some(why) = self.stop_hooks(stop_continued).await =>
                {
                    stop_continued += 1;
                    self.add_user_text(format!("[Stop hook] {why}"), UserMessageKind::Injected)
                        .await?;
                }
                Next::End(status) => {
                    let note = match status {
                        TurnStatus::Refused => Some(refused(&text)),
                        TurnStatus::CutOff => Some(format!(
                            "the reply was cut off by the output limit ({limit} tokens) and is \
                             incomplete, even after {} continuation(s); send a message to \
                             continue",
                            state.continuations
                        )),
                        _ => None,
                    };
                    return Ok((status, note));
                }
            }
        }
    }

    /// Ends a turn whose model call gave no answer.
    async fn end_without_answer(
        &mut self,
        failure: StepFailure,
    ) -> Result<(TurnStatus, Option<String>), StoreError> {
        match failure {
            StepFailure::Cancelled { partial_text } => {
                // What the user already saw stays in the conversation.
                if !partial_text.is_empty() {
                    self.commit(Message::assistant(vec![ContentBlock::Text {
                        text: partial_text,
                    }]))
                    .await?;
                }
                Ok((TurnStatus::Interrupted, None))
            }
            StepFailure::Chain(err) => {
                let message = err.to_string();
                self.emit(Event::Error {
                    message: message.clone(),
                })
                .await;
                Ok((TurnStatus::Failed, Some(message)))
            }
        }
    }
}

/// What the model is asked for in its last call at the step limit.
const LAST_WORD: &str = "[mnemo] This turn reached its step limit, and tool calls are off now. \
    Answer the user: what is done, what is left, and what you would do next.";

impl Session {
    /// At the step limit: one more model call that may not call tools (they stay in the
    /// request, unchanged, so its prefix is read from the cache), whose answer (what is done
    /// and what is left) ends the turn instead of a bare "step limit". Its failure is told,
    /// and costs only that answer.
    async fn last_word(
        &mut self,
        steps: u32,
        cancel: &CancellationToken,
    ) -> Result<(), StoreError> {
        self.add_user_text(LAST_WORD.into(), UserMessageKind::StepLimit)
            .await?;
        self.tools_disabled = true;
        self.step = steps + 1;
        let mut wasted = Vec::new();
        let estimated = self.working_tokens();
        let step = self.model_step(cancel, &mut wasted).await;
        self.tools_disabled = false;
        for (usage, model) in wasted {
            self.count_usage(usage, &model).await;
        }
        let (response, model) = match step {
            Ok(answered) => answered,
            Err(StepFailure::Chain(err)) => {
                let message = format!("The summary at the step limit failed: {err}");
                self.emit(Event::Notice { message }).await;
                return Ok(());
            }
            Err(StepFailure::Cancelled { .. }) => return Ok(()),
        };
        self.record_usage(response.usage, &model, estimated).await;
        // Calls were forbidden; any that came anyway would stay unanswered.
        let text: Vec<ContentBlock> = response
            .message
            .content
            .into_iter()
            .filter(|block| matches!(block, ContentBlock::Text { .. }))
            .collect();
        let message = Message::assistant(text);
        let said = message.text();
        if said.trim().is_empty() {
            return Ok(());
        }
        self.commit(message).await?;
        self.emit(Event::AssistantMessage { text: said }).await;
        Ok(())
    }
}

/// What the model is told when its reply was cut off by the output limit.
const CONTINUE: &str = "[mnemo] Your reply was cut off by the output limit. Continue exactly \
    where it stopped, without repeating what you already wrote.";

/// The turn's message when the model refused.
fn refused(text: &str) -> String {
    match text.trim() {
        "" => "the model refused to answer".to_string(),
        said => format!(
            "the model refused to answer: {}",
            clip(first_line(said), 200)
        ),
    }
}

/// The injected texts, and whether a compaction was asked for.
fn drain(inbox: &Inbox) -> (Vec<String>, bool) {
    inbox
        .lock()
        .map(|mut pending| super::decide::drain_inbox(&mut pending))
        .unwrap_or_default()
}

fn failure_kind(failure: &StepFailure) -> CallFailure {
    match failure {
        StepFailure::Cancelled { .. } => CallFailure::Cancelled,
        StepFailure::Chain(ChainError::ContextTooLong { .. }) => CallFailure::ContextTooLong,
        StepFailure::Chain(_) => CallFailure::Other,
    }
}

fn inbox_is_empty(inbox: &Inbox) -> bool {
    inbox
        .lock()
        .map(|pending| pending.texts.is_empty())
        .unwrap_or(true)
}

fn store_failure(err: &StoreError) -> String {
    format!("could not save the conversation: {err}; the turn was stopped so nothing is lost")
}

pub(super) fn now_millis() -> i64 {
    chrono::Utc::now().timestamp_millis()
}

fn usage_since(now: &Usage, before: &Usage) -> Usage {
    Usage {
        input_tokens: now.input_tokens - before.input_tokens,
        output_tokens: now.output_tokens - before.output_tokens,
        cache_read_tokens: now.cache_read_tokens - before.cache_read_tokens,
        cache_write_tokens: now.cache_write_tokens - before.cache_write_tokens,
    }
}
