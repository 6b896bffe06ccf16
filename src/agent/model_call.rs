//! One model call through the fallback chain: deltas go out as events the moment they
//! arrive; a retry after a broken stream tells the front end to drop what it showed, and no
//! tool runs before a response is complete, so nothing is duplicated.

use futures_util::StreamExt;
use tokio_util::sync::CancellationToken;

use super::Session;
use crate::llm::fallback::{ChainError, ChainModel, ChainNotice, Decision};
use crate::llm::{ModelRequest, ModelResponse, ProviderError, StreamEvent, ToolCalls, Usage};
use crate::protocol::{Event, ToolStatus};

/// How one attempt ended when it produced no response.
enum Attempt {
    Cancelled,
    Failed(ProviderError),
}

/// How a model step ended when it produced no response.
pub(super) enum StepFailure {
    /// The user interrupted; `partial_text` is what they had already seen.
    Cancelled {
        partial_text: String,
    },
    Chain(ChainError),
}

impl Session {
    /// One model call. Attempts that broke off (or were interrupted) after the provider
    /// reported usage are pushed to `wasted`: they were billed all the same.
    pub(super) async fn model_step(
        &self,
        cancel: &CancellationToken,
        wasted: &mut Vec<(Usage, ChainModel)>,
    ) -> Result<(ModelResponse, ChainModel), StepFailure> {
        let mut partial = String::new();
        let mut run = self.chain.start();
        while let Some((model, notice)) = run.next_model() {
            if let Some(notice) = notice {
                self.notify(notice, !partial.is_empty()).await;
            }
            loop {
                partial.clear();
                let mut used = Usage::default();
                let outcome = self
                    .stream_once(&model, cancel, &mut partial, &mut used)
                    .await;
                if outcome.is_err() && used != Usage::default() {
                    wasted.push((used, model.clone()));
                }
                let err = match outcome {
                    Ok(response) => return Ok((response, model)),
                    Err(Attempt::Cancelled) => {
                        return Err(StepFailure::Cancelled {
                            partial_text: partial,
                        });
                    }
                    Err(Attempt::Failed(err)) => err,
                };
                match run.failed(err) {
                    Decision::Retry { delay, notice } => {
                        self.notify(notice, !partial.is_empty()).await;
                        tokio::select! {
                            () = tokio::time::sleep(delay) => {}
                            () = cancel.cancelled() => {
                                return Err(StepFailure::Cancelled { partial_text: String::new() });
                            }
                        }
                    }
                    Decision::NextModel => break,
                    Decision::Stop(err) => return Err(StepFailure::Chain(err)),
                }
            }
        }
        Err(StepFailure::Chain(run.exhausted()))
    }

    /// Reports a retry or a fallback. `shown` says whether the failed attempt had already
    /// streamed something the front end must now drop.
    async fn notify(&self, notice: ChainNotice, shown: bool) {
        let event = match notice {
            ChainNotice::Retry {
                model,
                attempt,
                delay,
                reason,
            } => Event::Retry {
                model,
                attempt,
                delay_ms: delay.as_millis() as u64,
                reason,
                discard_partial: shown,
            },
            ChainNotice::Fallback { from, to, reason } => Event::ModelFallback {
                from,
                to,
                reason,
                discard_partial: shown,
            },
        };
        self.emit(event).await;
    }

    /// The working set as the model sees it (the compaction summary, when there is one, right
    /// after the first message), and how many blocks at its end change from step to step.
    fn request_messages(&self) -> (Vec<std::sync::Arc<crate::llm::Message>>, usize) {
        let messages = match self.summary_message() {
            None => self.history.clone(),
            Some(summary) => {
                let mut messages = Vec::with_capacity(self.history.len() + 2);
                messages.extend(self.history.first().cloned());
                messages.push(summary);
                messages.extend(self.history.iter().skip(1).cloned());
                messages
            }
        };
        match self.request_tail(self.step) {
            Some(tail) => (super::checkpoint::with_tail(messages, tail), 1),
            None => (messages, 0),
        }
    }

    async fn stream_once(
        &self,
        model: &ChainModel,
        cancel: &CancellationToken,
        partial: &mut String,
        used: &mut Usage,
    ) -> Result<ModelResponse, Attempt> {
        let (messages, volatile_tail) = self.request_messages();
        let (tools, static_tools) = self.router().request_tools();
        let request = ModelRequest {
            system: self.system_prompt.clone(),
            messages,
            volatile_tail,
            tools,
            static_tools,
            max_output_tokens: model.max_output_tokens,
            tool_calls: match self.tools_disabled {
                true => ToolCalls::Forbidden,
                false => ToolCalls::Allowed,
            },
            server_search: self.tools.server_search(),
        };
        let mut stream = tokio::select! {
            opened = model.provider.stream(request) => opened.map_err(Attempt::Failed)?,
            () = cancel.cancelled() => return Err(Attempt::Cancelled),
        };
        loop {
            let item = tokio::select! {
                item = stream.next() => item,
                () = cancel.cancelled() => return Err(Attempt::Cancelled),
            };
            match item {
                Some(Ok(StreamEvent::TextDelta(text))) => {
                    partial.push_str(&text);
                    self.emit(Event::TextDelta { text }).await;
                }
                Some(Ok(StreamEvent::ReasoningDelta(text))) => {
                    self.emit(Event::ReasoningDelta { text }).await;
                }
                Some(Ok(StreamEvent::Usage(usage))) => *used = usage,
                Some(Ok(StreamEvent::ServerTool(run))) => {
                    self.emit(Event::ToolCallStarted {
                        call_id: run.id.clone(),
                        name: run.name.clone(),
                        arguments: run.input,
                    })
                    .await;
                    self.emit(Event::ToolCallFinished {
                        call_id: run.id,
                        name: run.name,
                        status: match run.failed {
                            true => ToolStatus::Error,
                            false => ToolStatus::Ok,
                        },
                        output: run.output,
                        duration_ms: 0,
                    })
                    .await;
                }
                Some(Ok(StreamEvent::Completed(response))) => return Ok(response),
                Some(Err(err)) => return Err(Attempt::Failed(err)),
                None => {
                    return Err(Attempt::Failed(ProviderError::Connection(
                        "the response stream ended without a complete message".into(),
                    )));
                }
            }
        }
    }
}
