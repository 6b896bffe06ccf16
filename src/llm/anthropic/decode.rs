//! Decodes the Anthropic Messages event stream into canonical deltas and the final message.
//! This runs once per token, so it works on the borrowed event structs of `events`.

use serde::Deserialize;

use super::events::{
    BlockDelta, BlockStart, ErrorEvent, MessageDelta, MessageStart, TypeTag, WireUsage,
};

use serde_json::Value;

use super::server_tools;
use crate::llm::WireDecoder;
use crate::llm::error::ProviderError;
use crate::llm::http;
use crate::llm::server_tool::{ServerBlock, ServerPart, Source, add_source, sources_text};
use crate::llm::sse::SseEvent;
use crate::llm::tool_input;
use crate::llm::types::{ContentBlock, Message, ModelResponse, StopReason, StreamEvent, Usage};

/// Assembles one streamed response. Create one per request.
#[derive(Debug, Default)]
pub struct AnthropicDecoder {
    /// By the API's block index.
    blocks: Vec<Block>,
    usage: Usage,
    stop_reason: Option<StopReason>,
    stopped: bool,
    /// Pages the text cites, listed after it.
    sources: Vec<Source>,
}

#[derive(Debug)]
enum Block {
    Text(String),
    Thinking {
        text: String,
        signature: String,
    },
    ToolUse {
        id: String,
        name: String,
        json: String,
    },
    /// A server tool's call (its input streamed like a tool call's) or result, kept verbatim.
    Server {
        raw: Value,
        json: String,
    },
    /// Kinds the canonical model does not carry, such as redacted thinking.
    Other,
}

impl AnthropicDecoder {
    pub fn new() -> Self {
        Self::default()
    }

    fn start_block(&mut self, start: BlockStart<'_>, data: &str, out: &mut Vec<StreamEvent>) {
        let started = start.content_block;
        let block = match started.kind.as_ref() {
            kind if server_tools::is_server_block(kind) => {
                let raw = server_tools::started_block(data);
                let result = ServerBlock::anthropic(raw.clone());
                let call = self
                    .blocks
                    .iter_mut()
                    .find_map(|b| b.finished_call(&result));
                out.extend(
                    server_tools::run_of(call.as_ref(), &result).map(StreamEvent::ServerTool),
                );
                Block::Server {
                    raw,
                    json: String::new(),
                }
            }
            "text" => {
                if !started.text.is_empty() {
                    out.push(StreamEvent::TextDelta(started.text.to_string()));
                }
                Block::Text(started.text.into_owned())
            }
            "thinking" => Block::Thinking {
                text: started.thinking.into_owned(),
                signature: started.signature.into_owned(),
            },
            "tool_use" => Block::ToolUse {
                id: started.id.into_owned(),
                name: started.name.into_owned(),
                json: String::new(),
            },
            _ => Block::Other,
        };
        if start.index >= self.blocks.len() {
            self.blocks.resize_with(start.index + 1, || Block::Other);
        }
        self.blocks[start.index] = block;
    }

    fn apply_delta(
        &mut self,
        event: BlockDelta<'_>,
        out: &mut Vec<StreamEvent>,
    ) -> Result<(), ProviderError> {
        let Some(block) = self.blocks.get_mut(event.index) else {
            return Err(ProviderError::Protocol(format!(
                "delta for content block {} that never started",
                event.index
            )));
        };
        let delta = event.delta;
        match (delta.kind.as_ref(), block) {
            ("text_delta", Block::Text(text)) if !delta.text.is_empty() => {
                text.push_str(&delta.text);
                out.push(StreamEvent::TextDelta(delta.text.into_owned()));
            }
            ("thinking_delta", Block::Thinking { text, .. }) if !delta.thinking.is_empty() => {
                text.push_str(&delta.thinking);
                out.push(StreamEvent::ReasoningDelta(delta.thinking.into_owned()));
            }
            ("signature_delta", Block::Thinking { signature, .. }) => {
                signature.push_str(&delta.signature);
            }
            ("input_json_delta", Block::ToolUse { json, .. } | Block::Server { json, .. }) => {
                json.push_str(&delta.partial_json);
            }
            ("citations_delta", Block::Text(_)) => {
                if let Some(cited) = delta.citation {
                    let source = Source {
                        url: cited.url.into_owned(),
                        title: cited.title.into_owned(),
                    };
                    add_source(&mut self.sources, source);
                }
            }
            // Citations, empty deltas and deltas of blocks that are not kept.
            _ => {}
        }
        Ok(())
    }

    fn apply_usage(&mut self, usage: WireUsage) {
        let slots = [
            (usage.input_tokens, &mut self.usage.input_tokens),
            (usage.output_tokens, &mut self.usage.output_tokens),
            (
                usage.cache_creation_input_tokens,
                &mut self.usage.cache_write_tokens,
            ),
            (
                usage.cache_read_input_tokens,
                &mut self.usage.cache_read_tokens,
            ),
        ];
        for (value, slot) in slots {
            if let Some(value) = value {
                *slot = value;
            }
        }
    }
}

impl WireDecoder for AnthropicDecoder {
    fn on_event(
        &mut self,
        event: SseEvent<'_>,
        out: &mut Vec<StreamEvent>,
    ) -> Result<(), ProviderError> {
        // Anthropic names every event; the `type` in the data is the fallback.
        let tag;
        let kind = if event.event.is_empty() {
            tag = parse::<TypeTag<'_>>(event)?;
            tag.kind.as_ref()
        } else {
            event.event
        };
        match kind {
            "content_block_delta" => self.apply_delta(parse(event)?, out),
            "content_block_start" => {
                self.start_block(parse(event)?, event.data, out);
                Ok(())
            }
            "message_start" => {
                let start: MessageStart = parse(event)?;
                self.apply_usage(start.message.usage);
                out.push(StreamEvent::Usage(self.usage));
                Ok(())
            }
            "message_delta" => {
                let delta: MessageDelta = parse(event)?;
                if let Some(reason) = delta.delta.stop_reason {
                    self.stop_reason = Some(stop_reason(reason));
                }
                self.apply_usage(delta.usage);
                out.push(StreamEvent::Usage(self.usage));
                Ok(())
            }
            "message_stop" => {
                self.stopped = true;
                if !self.sources.is_empty() {
                    let text = sources_text(&self.sources);
                    out.push(StreamEvent::TextDelta(text.clone()));
                    self.blocks.push(Block::Text(text));
                }
                Ok(())
            }
            "error" => Err(stream_error(event.data)),
            // content_block_stop, ping, and event types added later, which the API's
            // versioning policy asks clients to ignore.
            _ => Ok(()),
        }
    }

    fn finish(&mut self) -> Result<ModelResponse, ProviderError> {
        if !self.stopped {
            return Err(ProviderError::Connection(
                "the stream ended before message_stop".into(),
            ));
        }
        let content = merge_texts(
            std::mem::take(&mut self.blocks)
                .into_iter()
                .filter_map(Block::into_content),
        );
        let has_tool_use = content
            .iter()
            .any(|b| matches!(b, ContentBlock::ToolUse { .. }));
        let stop_reason = self.stop_reason.take().unwrap_or(if has_tool_use {
            StopReason::ToolUse
        } else {
            StopReason::EndTurn
        });
        Ok(ModelResponse {
            message: Message::assistant(content),
            usage: self.usage,
            stop_reason,
        })
    }
}

impl Block {
    fn into_content(self) -> Option<ContentBlock> {
        match self {
            Self::Text(text) if text.is_empty() => None,
            Self::Text(text) => Some(ContentBlock::Text { text }),
            Self::Thinking { text, signature } => Some(ContentBlock::Thinking {
                thinking: text,
                signature: (!signature.is_empty()).then_some(signature),
            }),
            Self::ToolUse { id, name, json } => Some(ContentBlock::ToolUse {
                id,
                name,
                input: tool_input(json),
            }),
            Self::Server { raw, json } => Some(ContentBlock::Server(ServerBlock::anthropic(
                with_input(raw, json),
            ))),
            Self::Other => None,
        }
    }

    /// The finished server call `result` answers (its streamed input set), if this is it.
    fn finished_call(&mut self, result: &ServerBlock) -> Option<ServerBlock> {
        let Block::Server { raw, json } = self else {
            return None;
        };
        let ServerPart::Result { tool_use_id, .. } = result.part()? else {
            return None;
        };
        if raw.get("id").and_then(Value::as_str) != Some(tool_use_id) {
            return None;
        }
        *raw = with_input(std::mem::take(raw), std::mem::take(json));
        Some(ServerBlock::anthropic(raw.clone()))
    }
}

/// Adjacent text blocks as one: a reply that cites pages comes as a text block per cited
/// passage, which other wires would otherwise join as separate paragraphs.
fn merge_texts(blocks: impl Iterator<Item = ContentBlock>) -> Vec<ContentBlock> {
    let mut out: Vec<ContentBlock> = Vec::new();
    for block in blocks {
        match (out.last_mut(), block) {
            (Some(ContentBlock::Text { text }), ContentBlock::Text { text: next }) => {
                text.push_str(&next);
            }
            (_, block) => out.push(block),
        }
    }
    out
}

/// A server call's block with the input that streamed in (if any did).
fn with_input(mut raw: Value, json: String) -> Value {
    if !json.trim().is_empty()
        && let Some(fields) = raw.as_object_mut()
    {
        fields.insert("input".into(), tool_input(json));
    }
    raw
}

fn parse<'a, T: Deserialize<'a>>(event: SseEvent<'a>) -> Result<T, ProviderError> {
    serde_json::from_str(event.data).map_err(|err| {
        ProviderError::Protocol(format!("unreadable `{}` event: {err}", event.event))
    })
}

fn stop_reason(reason: String) -> StopReason {
    match reason.as_str() {
        "end_turn" => StopReason::EndTurn,
        "tool_use" => StopReason::ToolUse,
        // Both mean the output was cut by a limit.
        "max_tokens" | "model_context_window_exceeded" => StopReason::MaxTokens,
        "stop_sequence" => StopReason::StopSequence,
        "refusal" => StopReason::Refusal,
        "pause_turn" => StopReason::Paused,
        _ => StopReason::Other(reason),
    }
}

/// An `error` event after the response had started, such as `overloaded_error`.
fn stream_error(data: &str) -> ProviderError {
    let kind = serde_json::from_str::<ErrorEvent>(data)
        .map(|e| e.error.kind)
        .unwrap_or_default();
    let message = http::error_message(data);
    match kind.as_str() {
        "overloaded_error" => ProviderError::Overloaded { message },
        "rate_limit_error" => ProviderError::RateLimit {
            retry_after: None,
            message,
        },
        "authentication_error" => ProviderError::Auth {
            status: 401,
            message,
        },
        "permission_error" => ProviderError::Auth {
            status: 403,
            message,
        },
        "invalid_request_error" | "request_too_large" | "not_found_error" => {
            if http::is_context_too_long(&message.to_lowercase()) {
                ProviderError::ContextTooLong { message }
            } else {
                ProviderError::BadRequest { message }
            }
        }
        "timeout_error" => ProviderError::Timeout(message),
        // api_error, and kinds added later: treat as a transient server failure.
        _ => ProviderError::Server {
            status: 500,
            message,
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn feed(decoder: &mut AnthropicDecoder, events: &[(&str, &str)]) -> Vec<StreamEvent> {
        let mut out = Vec::new();
        for (event, data) in events {
            let result = decoder.on_event(SseEvent { event, data }, &mut out);
            assert!(result.is_ok(), "{event}: {result:?}");
        }
        out
    }

    #[test]
    fn events_without_an_event_name_are_dispatched_by_their_type() {
        let mut decoder = AnthropicDecoder::new();
        let out = feed(
            &mut decoder,
            &[
                (
                    "",
                    r#"{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}"#,
                ),
                (
                    "",
                    r#"{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"hi \"there\""}}"#,
                ),
                ("", r#"{"type":"message_stop"}"#),
            ],
        );
        assert_eq!(out, vec![StreamEvent::TextDelta("hi \"there\"".into())]);
        let response = decoder.finish();
        assert_eq!(
            response.map(|r| r.message.text()),
            Ok("hi \"there\"".into())
        );
    }

    #[test]
    fn a_delta_for_an_unknown_block_is_a_protocol_error() {
        let mut decoder = AnthropicDecoder::new();
        let data =
            r#"{"type":"content_block_delta","index":3,"delta":{"type":"text_delta","text":"x"}}"#;
        let result = decoder.on_event(
            SseEvent {
                event: "content_block_delta",
                data,
            },
            &mut Vec::new(),
        );
        assert!(matches!(result, Err(ProviderError::Protocol(_))));
    }

    #[test]
    fn stop_reasons_map_to_canonical_ones() {
        assert_eq!(stop_reason("end_turn".into()), StopReason::EndTurn);
        assert_eq!(stop_reason("tool_use".into()), StopReason::ToolUse);
        assert_eq!(stop_reason("max_tokens".into()), StopReason::MaxTokens);
        assert_eq!(
            stop_reason("stop_sequence".into()),
            StopReason::StopSequence
        );
        assert_eq!(stop_reason("refusal".into()), StopReason::Refusal);
        assert_eq!(stop_reason("pause_turn".into()), StopReason::Paused);
    }

    #[test]
    fn stream_error_kinds_map_to_typed_errors() {
        let error = |kind: &str, message: &str| {
            stream_error(&format!(
                r#"{{"type":"error","error":{{"type":"{kind}","message":"{message}"}}}}"#
            ))
        };
        assert!(matches!(
            error("overloaded_error", "Overloaded"),
            ProviderError::Overloaded { .. }
        ));
        assert!(matches!(
            error("rate_limit_error", "slow down"),
            ProviderError::RateLimit { .. }
        ));
        assert!(matches!(
            error("api_error", "boom"),
            ProviderError::Server { status: 500, .. }
        ));
        assert!(matches!(
            error("authentication_error", "bad key"),
            ProviderError::Auth { status: 401, .. }
        ));
        assert!(matches!(
            error("invalid_request_error", "bad field"),
            ProviderError::BadRequest { .. }
        ));
        assert!(matches!(
            error(
                "invalid_request_error",
                "prompt is too long: 201000 tokens > 200000 maximum"
            ),
            ProviderError::ContextTooLong { .. }
        ));
    }
}
