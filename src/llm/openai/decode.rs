//! Decodes Chat Completions stream chunks into canonical deltas and the final message:
//! assembles tool calls from their pieces, tells reasoning from text, and classifies errors
//! that arrive inside the stream. This runs once per token, so it works on the borrowed
//! chunk structs of `chunk`.

use reqwest::header::HeaderMap;
use serde_json::Value;

use super::chunk::{Choice, Chunk, ToolCallDelta, WireStr};

use crate::llm::WireDecoder;
use crate::llm::error::ProviderError;
use crate::llm::http;
use crate::llm::sse::SseEvent;
use crate::llm::tool_input;
use crate::llm::types::{ContentBlock, Message, ModelResponse, StopReason, StreamEvent, Usage};

/// Assembles one streamed response. Create one per request.
#[derive(Debug, Default)]
pub struct OpenAiDecoder {
    text: String,
    /// What the model said instead of answering (`delta.refusal`).
    refusal: String,
    reasoning: String,
    calls: Vec<CallState>,
    usage: Usage,
    finish_reason: Option<StopReason>,
    done: bool,
}

#[derive(Debug)]
struct CallState {
    /// The `index` the server gave the call, if any.
    index: Option<usize>,
    id: String,
    name: String,
    arguments: String,
}

impl OpenAiDecoder {
    pub fn new() -> Self {
        Self::default()
    }

    fn apply_choice(&mut self, choice: Choice<'_>, out: &mut Vec<StreamEvent>) {
        if let Some(delta) = choice.delta {
            // Some servers send both reasoning fields with the same text; one is enough.
            if let Some(WireStr(piece)) = delta.reasoning_content.or(delta.reasoning)
                && !piece.is_empty()
            {
                self.reasoning.push_str(&piece);
                out.push(StreamEvent::ReasoningDelta(piece.into_owned()));
            }
            if let Some(WireStr(piece)) = delta.content
                && !piece.is_empty()
            {
                self.text.push_str(&piece);
                out.push(StreamEvent::TextDelta(piece.into_owned()));
            }
            if let Some(WireStr(piece)) = delta.refusal
                && !piece.is_empty()
            {
                self.refusal.push_str(&piece);
                out.push(StreamEvent::TextDelta(piece.into_owned()));
            }
            for call in delta.tool_calls.into_iter().flatten() {
                self.apply_tool_call(call);
            }
        }
        if let Some(WireStr(reason)) = choice.finish_reason {
            self.finish_reason = Some(stop_reason(&reason));
        }
    }

    fn apply_tool_call(&mut self, call: ToolCallDelta<'_>) {
        let id = call.id.map(|WireStr(id)| id).unwrap_or_default();
        let state = self.call_slot(call.index, &id);
        if state.id.is_empty() {
            state.id.push_str(&id);
        }
        if let Some(function) = call.function {
            if let Some(WireStr(name)) = function.name
                && state.name.is_empty()
            {
                state.name.push_str(&name);
            }
            if let Some(WireStr(piece)) = function.arguments {
                state.arguments.push_str(&piece);
            }
        }
    }

    /// The call a piece belongs to: by `index`, or, from servers that send none, by id, or
    /// else the latest call.
    fn call_slot(&mut self, index: Option<usize>, id: &str) -> &mut CallState {
        let found = match index {
            Some(index) => self.calls.iter().position(|c| c.index == Some(index)),
            None if !id.is_empty() => self.calls.iter().position(|c| c.id == id),
            None => self.calls.len().checked_sub(1),
        };
        let position = found.unwrap_or_else(|| {
            self.calls.push(CallState {
                index,
                id: String::new(),
                name: String::new(),
                arguments: String::new(),
            });
            self.calls.len() - 1
        });
        &mut self.calls[position]
    }
}

impl WireDecoder for OpenAiDecoder {
    fn on_event(
        &mut self,
        event: SseEvent<'_>,
        out: &mut Vec<StreamEvent>,
    ) -> Result<(), ProviderError> {
        let data = event.data.trim();
        if data == "[DONE]" {
            self.done = true;
            return Ok(());
        }
        if self.done || data.is_empty() {
            return Ok(());
        }
        if event.event == "error" {
            return Err(stream_error(data));
        }
        let chunk: Chunk<'_> = serde_json::from_str(data)
            .map_err(|err| ProviderError::Protocol(format!("unreadable stream chunk: {err}")))?;
        if chunk.error.is_some() {
            return Err(stream_error(data));
        }
        if let Some(usage) = chunk.usage {
            self.usage = usage.canonical();
            out.push(StreamEvent::Usage(self.usage));
        }
        // One completion is asked for; a server that streams several anyway (`n` > 1) gets
        // only its first read, rather than all of them mixed into one text.
        if let Some(choice) = chunk
            .choices
            .into_iter()
            .find(|choice| choice.index.unwrap_or(0) == 0)
        {
            self.apply_choice(choice, out);
        }
        Ok(())
    }

    fn finish(&mut self) -> Result<ModelResponse, ProviderError> {
        // A finish_reason means the answer is whole even if [DONE] was lost.
        if !self.done && self.finish_reason.is_none() {
            return Err(ProviderError::Connection(
                "the stream ended before a finish_reason or [DONE]".into(),
            ));
        }
        let mut content = Vec::with_capacity(self.calls.len() + 2);
        if !self.reasoning.is_empty() {
            content.push(ContentBlock::Thinking {
                thinking: std::mem::take(&mut self.reasoning),
                signature: None,
            });
        }
        let refused = !self.refusal.is_empty();
        if refused {
            self.text.push_str(&self.refusal);
        }
        if !self.text.is_empty() {
            content.push(ContentBlock::Text {
                text: std::mem::take(&mut self.text),
            });
        }
        let has_calls = !self.calls.is_empty();
        content.extend(self.calls.drain(..).map(|call| ContentBlock::ToolUse {
            id: if call.id.is_empty() {
                generated_call_id()
            } else {
                call.id
            },
            name: call.name,
            input: tool_input(call.arguments),
        }));
        // Some local servers say "stop" even when the model called tools.
        let stop_reason = match self.finish_reason.take() {
            _ if refused => StopReason::Refusal,
            Some(StopReason::EndTurn) | None if has_calls => StopReason::ToolUse,
            Some(reason) => reason,
            None => StopReason::EndTurn,
        };
        Ok(ModelResponse {
            message: Message::assistant(content),
            usage: self.usage,
            stop_reason,
        })
    }
}

/// For servers that send calls without ids. The id must stay unique in the whole
/// conversation, which may be resumed later or continued by another provider, so it is
/// random rather than counted.
fn generated_call_id() -> String {
    format!("call_{}", uuid::Uuid::new_v4().simple())
}

fn stop_reason(reason: &str) -> StopReason {
    match reason {
        "stop" => StopReason::EndTurn,
        "tool_calls" | "function_call" => StopReason::ToolUse,
        "length" => StopReason::MaxTokens,
        "content_filter" => StopReason::Refusal,
        other => StopReason::Other(other.to_string()),
    }
}

/// An error object in the stream, after a 200 answer. Servers label it with a string `code`,
/// a `type`, an HTTP status as a numeric `code` (OpenRouter), or only a message.
fn stream_error(data: &str) -> ProviderError {
    let parsed: Value = serde_json::from_str(data).unwrap_or(Value::Null);
    let error = parsed.get("error").unwrap_or(&parsed);
    let code = error.get("code");
    if let Some(status) = code
        .and_then(Value::as_u64)
        .and_then(|c| u16::try_from(c).ok())
        && (400..=599).contains(&status)
    {
        return http::classify_status(status, &HeaderMap::new(), data);
    }
    let kind = code
        .and_then(Value::as_str)
        .or_else(|| error.get("type").and_then(Value::as_str))
        .unwrap_or_default()
        .to_ascii_lowercase();
    let message = http::error_message(data);
    let lower = message.to_lowercase();
    let kind_has = |needles: &[&str]| needles.iter().any(|n| kind.contains(n));
    if kind_has(&["context_length"]) {
        ProviderError::ContextTooLong { message }
    } else if kind_has(&["insufficient_quota"]) || http::is_quota_exhausted(&lower) {
        ProviderError::QuotaExhausted { message }
    } else if kind_has(&["rate_limit"]) || lower.contains("rate limit") {
        ProviderError::RateLimit {
            retry_after: None,
            message,
        }
    } else if kind_has(&["overload"]) || lower.contains("overloaded") {
        ProviderError::Overloaded { message }
    } else if kind_has(&[
        "invalid_api_key",
        "authentication",
        "unauthorized",
        "permission",
    ]) {
        ProviderError::Auth {
            status: 401,
            message,
        }
    } else if kind_has(&["timeout"]) {
        ProviderError::Timeout(message)
    } else if http::is_context_too_long(&lower) {
        ProviderError::ContextTooLong { message }
    } else if kind_has(&["invalid_request", "bad_request", "not_found"]) {
        ProviderError::BadRequest { message }
    } else {
        ProviderError::Server {
            status: 500,
            message,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finish_reasons_map_to_canonical_stop_reasons() {
        assert_eq!(stop_reason("stop"), StopReason::EndTurn);
        assert_eq!(stop_reason("tool_calls"), StopReason::ToolUse);
        assert_eq!(stop_reason("length"), StopReason::MaxTokens);
        assert_eq!(stop_reason("content_filter"), StopReason::Refusal);
        assert_eq!(stop_reason("eos"), StopReason::Other("eos".into()));
    }

    #[test]
    fn stream_errors_are_classified_by_code_type_or_message() {
        let cases = [
            (
                r#"{"error":{"message":"Rate limit reached","type":"requests","code":"rate_limit_exceeded"}}"#,
                "rate",
            ),
            (
                r#"{"error":{"message":"The server had an error","type":"server_error","code":null}}"#,
                "server",
            ),
            (
                r#"{"error":{"message":"Provider returned error","code":502}}"#,
                "server",
            ),
            (
                r#"{"error":{"message":"Too many requests","code":429}}"#,
                "rate",
            ),
            (
                r#"{"error":{"message":"The model is overloaded","type":"server_error"}}"#,
                "overloaded",
            ),
            (
                r#"{"error":{"message":"too long","code":"context_length_exceeded"}}"#,
                "context",
            ),
            (
                r#"{"error":{"message":"This model's maximum context length is 8192 tokens"}}"#,
                "context",
            ),
            (
                r#"{"error":{"message":"bad field","type":"invalid_request_error"}}"#,
                "bad",
            ),
            (
                r#"{"error":{"message":"Incorrect API key","code":"invalid_api_key"}}"#,
                "auth",
            ),
        ];
        for (data, want) in cases {
            let got = match stream_error(data) {
                ProviderError::RateLimit { .. } => "rate",
                ProviderError::Server { .. } => "server",
                ProviderError::Overloaded { .. } => "overloaded",
                ProviderError::ContextTooLong { .. } => "context",
                ProviderError::BadRequest { .. } => "bad",
                ProviderError::Auth { .. } => "auth",
                _ => "other",
            };
            assert_eq!(got, want, "{data}");
        }
    }

    #[test]
    fn pieces_without_index_are_grouped_by_id() {
        let mut decoder = OpenAiDecoder::new();
        let mut out = Vec::new();
        let chunks = [
            r#"{"choices":[{"delta":{"tool_calls":[{"id":"a","function":{"name":"x","arguments":"{}"}}]}}]}"#,
            r#"{"choices":[{"delta":{"tool_calls":[{"id":"b","function":{"name":"y","arguments":"{"}}]}}]}"#,
            r#"{"choices":[{"delta":{"tool_calls":[{"function":{"arguments":"}"}}]},"finish_reason":"stop"}]}"#,
        ];
        for data in chunks {
            let result = decoder.on_event(SseEvent { event: "", data }, &mut out);
            assert!(result.is_ok(), "{result:?}");
        }
        let response = decoder.finish();
        let Ok(response) = response else {
            panic!("{response:?}");
        };
        let calls: Vec<_> = response
            .message
            .tool_calls()
            .map(|c| (c.id.to_string(), c.input.clone()))
            .collect();
        assert_eq!(calls.len(), 2);
        assert_eq!(
            calls[1],
            ("b".to_string(), Value::Object(serde_json::Map::new()))
        );
        assert_eq!(response.stop_reason, StopReason::ToolUse);
    }
}
