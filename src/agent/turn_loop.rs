//! One turn: drain injections, call the model, run the tools it asks for, repeat until it
//! answers without tools or a guard stops it. Every completed message is committed before
//! the next step starts.

use futures_util::StreamExt;
use tokio_util::sync::CancellationToken;

use super::guards::RepeatGuard;
use super::{Inbox, Session};
use crate::llm::{ContentBlock, Message, ModelRequest, ModelResponse, ProviderError, StreamEvent};
use crate::protocol::{Event, TurnStatus, UserMessageKind};

/// How a model call ended when it did not produce a response.
enum StepFailure {
    Cancelled { partial_text: String },
    Provider(ProviderError),
}

impl Session {
    pub(super) async fn run_turn(
        &mut self,
        text: String,
        kind: UserMessageKind,
        cancel: CancellationToken,
        inbox: Inbox,
    ) {
        self.turns += 1;
        let turn = self.turns;
        self.emit(Event::TurnStarted { turn }).await;
        self.add_user_text(text, kind).await;
        let (status, message) = self.turn_steps(&cancel, &inbox).await;
        self.emit(Event::TurnFinished {
            turn,
            status,
            message,
        })
        .await;
    }

    async fn add_user_text(&mut self, text: String, kind: UserMessageKind) {
        self.commit(Message::user_text(text.clone()));
        self.emit(Event::UserMessage { text, kind }).await;
    }

    async fn turn_steps(
        &mut self,
        cancel: &CancellationToken,
        inbox: &Inbox,
    ) -> (TurnStatus, Option<String>) {
        let mut guard = RepeatGuard::new(self.settings.repeat_limit);
        let mut steps = 0u32;
        loop {
            for text in drain(inbox) {
                self.add_user_text(text, UserMessageKind::Injected).await;
            }
            if cancel.is_cancelled() {
                return (TurnStatus::Interrupted, None);
            }
            if steps >= self.settings.max_steps {
                let note = format!(
                    "stopped after {steps} model calls (the step limit); send a message to continue"
                );
                return (TurnStatus::StepLimit, Some(note));
            }
            steps += 1;

            let response = match self.model_step(cancel).await {
                Ok(response) => response,
                Err(StepFailure::Cancelled { partial_text }) => {
                    // What the user already saw stays in the conversation.
                    if !partial_text.is_empty() {
                        self.commit(Message::assistant(vec![ContentBlock::Text {
                            text: partial_text,
                        }]));
                    }
                    return (TurnStatus::Interrupted, None);
                }
                Err(StepFailure::Provider(err)) => {
                    let message = format!("{} failed: {err}", self.provider.label());
                    self.emit(Event::Error {
                        message: message.clone(),
                    })
                    .await;
                    return (TurnStatus::Failed, Some(message));
                }
            };
            self.record_usage(response.usage).await;
            let message = response.message;
            self.emit(Event::AssistantMessage {
                text: message.text(),
            })
            .await;
            let has_calls = message.tool_calls().next().is_some();
            self.commit(message);

            if !has_calls {
                if inbox_is_empty(inbox) {
                    return (TurnStatus::Completed, None);
                }
                continue;
            }
            let loop_note = self.run_tool_calls(&mut guard, cancel).await;
            if let Some(note) = loop_note {
                self.emit(Event::Error {
                    message: note.clone(),
                })
                .await;
                return (TurnStatus::LoopDetected, Some(note));
            }
            if cancel.is_cancelled() {
                return (TurnStatus::Interrupted, None);
            }
        }
    }

    /// Streams one model call, forwarding deltas as events the moment they arrive.
    async fn model_step(
        &mut self,
        cancel: &CancellationToken,
    ) -> Result<ModelResponse, StepFailure> {
        let request = ModelRequest {
            system: self.settings.system_prompt.clone(),
            messages: self.history.clone(),
            tools: self.tools.specs(),
            max_output_tokens: self.settings.max_output_tokens,
        };
        let cancelled = || StepFailure::Cancelled {
            partial_text: String::new(),
        };
        let mut stream = tokio::select! {
            opened = self.provider.stream(request) => opened.map_err(StepFailure::Provider)?,
            () = cancel.cancelled() => return Err(cancelled()),
        };
        let mut partial_text = String::new();
        loop {
            let item = tokio::select! {
                item = stream.next() => item,
                () = cancel.cancelled() => return Err(StepFailure::Cancelled { partial_text }),
            };
            match item {
                Some(Ok(StreamEvent::TextDelta(text))) => {
                    partial_text.push_str(&text);
                    self.emit(Event::TextDelta { text }).await;
                }
                Some(Ok(StreamEvent::ReasoningDelta(text))) => {
                    self.emit(Event::ReasoningDelta { text }).await;
                }
                Some(Ok(StreamEvent::Completed(response))) => return Ok(response),
                Some(Err(err)) => return Err(StepFailure::Provider(err)),
                None => {
                    return Err(StepFailure::Provider(ProviderError::Connection(
                        "the response stream ended without a complete message".into(),
                    )));
                }
            }
        }
    }
}

fn drain(inbox: &Inbox) -> Vec<String> {
    inbox
        .lock()
        .map(|mut pending| pending.drain(..).collect())
        .unwrap_or_default()
}

fn inbox_is_empty(inbox: &Inbox) -> bool {
    inbox
        .lock()
        .map(|pending| pending.is_empty())
        .unwrap_or(true)
}
