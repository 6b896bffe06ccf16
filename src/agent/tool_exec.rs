//! Runs the tool calls of one assistant message: read-only calls concurrently, mutating ones
//! one at a time in order, each under the per-tool timeout and the turn's cancel token.
//! Every call gets a result, so the history never holds a call without its answer.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Instant;

use futures_util::future::join_all;
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use super::Session;
use super::guards::RepeatGuard;
use super::nested_context::touched_dir;
use super::subagents::is_agent_tool;
use crate::llm::image::ImageBlock;
use crate::llm::{ContentBlock, Message, Role};
use crate::memory::StoreError;
use crate::protocol::{Event, ToolStatus};
use crate::tools::{ToolContext, ToolError};

type ToolImages = Arc<Mutex<Vec<ImageBlock>>>;

struct PendingCall {
    id: String,
    name: String,
    input: Value,
    /// Set when the call must not run (a repeat that tripped the loop guard, or one after it).
    refused: Option<String>,
}

impl Session {
    /// Executes the calls of the last assistant message and commits their results. Returns a
    /// note when the loop guard tripped. `cut_off` is the output limit when the response was
    /// cut off by it: a call whose arguments did not arrive whole is then answered as such.
    pub(super) async fn run_tool_calls(
        &mut self,
        guard: &mut RepeatGuard,
        cancel: &CancellationToken,
        cut_off: Option<u32>,
    ) -> Result<Option<String>, StoreError> {
        let mut calls: Vec<PendingCall> = match self.history.last() {
            Some(last) => last
                .tool_calls()
                .map(|c| PendingCall {
                    id: c.id.to_string(),
                    name: c.name.to_string(),
                    input: c.input.clone(),
                    refused: None,
                })
                .collect(),
            None => Vec::new(),
        };
        let mut loop_note = None;
        for call in &mut calls {
            if loop_note.is_none() && guard.observe(&call.name, &call.input) {
                loop_note = Some(format!(
                    "loop detected: `{}` was called {} times in a row with the same arguments; \
                     the turn was stopped",
                    call.name, self.settings.repeat_limit
                ));
            }
            if let Some(note) = &loop_note {
                call.refused = Some(format!("not run: {note}"));
            } else if let (Some(limit), Value::String(_)) = (cut_off, &call.input) {
                call.refused = Some(format!(
                    "not run: the arguments of this call were cut off by the output limit \
                     ({limit} tokens) before they were complete. Make the call smaller (for \
                     example, write a large file in several parts) and call again"
                ));
            }
        }

        let mut results = Vec::with_capacity(calls.len());
        let mut batch: Vec<&PendingCall> = Vec::new();
        for call in &calls {
            // Capabilities run like shell commands: one at a time, in order; so do MCP tools
            // not marked read-only.
            let mutates = self.router().mutates(&call.name);
            if mutates && !batch.is_empty() {
                results.extend(self.run_batch(std::mem::take(&mut batch), cancel).await);
            }
            batch.push(call);
            if mutates {
                results.extend(self.run_batch(std::mem::take(&mut batch), cancel).await);
            }
        }
        results.extend(self.run_batch(batch, cancel).await);
        let (mut results, images): (Vec<ContentBlock>, Vec<Vec<ContentBlock>>) =
            results.into_iter().unzip();

        // Results come in the order of the calls.
        let workspace = &self.settings.workspace;
        let touched: Vec<_> = calls
            .iter()
            .zip(&results)
            .filter(|(_, result)| {
                matches!(
                    result,
                    ContentBlock::ToolResult {
                        is_error: false,
                        ..
                    }
                )
            })
            .filter_map(|(call, _)| touched_dir(workspace, &call.name, &call.input))
            .collect();
        results.extend(images.into_iter().flatten());
        if let Some(text) = self.nested_instructions(&touched).await? {
            results.push(ContentBlock::Text { text });
        }
        self.commit(Message {
            role: Role::User,
            content: results,
        })
        .await?;
        Ok(loop_note)
    }

    async fn run_batch(
        &self,
        batch: Vec<&PendingCall>,
        cancel: &CancellationToken,
    ) -> Vec<(ContentBlock, Vec<ContentBlock>)> {
        join_all(batch.into_iter().map(|call| self.run_one(call, cancel))).await
    }

    /// The call's result, and the images it returned.
    async fn run_one(
        &self,
        call: &PendingCall,
        cancel: &CancellationToken,
    ) -> (ContentBlock, Vec<ContentBlock>) {
        self.emit(Event::ToolCallStarted {
            call_id: call.id.clone(),
            name: call.name.clone(),
            arguments: call.input.clone(),
        })
        .await;
        let started = Instant::now();
        let waited_ms = Arc::new(AtomicU64::new(0));
        let images: ToolImages = Arc::default();
        let outcome = match &call.refused {
            Some(reason) => Err(ToolError::Failed(reason.clone())),
            None if cancel.is_cancelled() => Err(ToolError::Cancelled),
            None => self.execute(call, cancel, &waited_ms, &images).await,
        };
        let images = std::mem::take(&mut *images.lock().unwrap_or_else(PoisonError::into_inner));
        // The time shown is the tool's own, not the person's to answer its question.
        let elapsed = u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX);
        let duration_ms = elapsed.saturating_sub(waited_ms.load(Ordering::Relaxed));
        let (content, is_error) = match outcome {
            Ok(output) => (output, false),
            Err(err) => (err.to_string(), true),
        };
        self.emit(Event::ToolCallFinished {
            call_id: call.id.clone(),
            name: call.name.clone(),
            status: if is_error {
                ToolStatus::Error
            } else {
                ToolStatus::Ok
            },
            output: content.clone(),
            duration_ms,
        })
        .await;
        let images = images
            .into_iter()
            .filter(|_| !is_error)
            .map(|mut image| {
                image.tool_use_id = Some(call.id.clone());
                ContentBlock::Image(image)
            })
            .collect();
        let result = ContentBlock::ToolResult {
            tool_use_id: call.id.clone(),
            content,
            is_error,
        };
        (result, images)
    }

    async fn execute(
        &self,
        call: &PendingCall,
        cancel: &CancellationToken,
        waited_ms: &Arc<AtomicU64>,
        images: &ToolImages,
    ) -> Result<String, ToolError> {
        let timeout = self.settings.tool_timeout;
        let mut ctx = ToolContext::new(
            self.settings.workspace.clone(),
            self.id.clone(),
            call.id.clone(),
            cancel.child_token(),
            timeout,
            self.event_sender(),
            self.settings.approvals.clone(),
        )
        .in_turn(self.turns);
        ctx.waited_ms = Arc::clone(waited_ms);
        ctx.images = Arc::clone(images);
        ctx.rewind = self.rewind.clone();
        if is_agent_tool(&call.name) {
            ctx.agents = Some(self.agent_host());
        }
        self.router()
            .dispatch(&call.name, &call.input, &ctx, &self.id, cancel)
            .await
    }
}
