//! Maps the canonical conversation to a Chat Completions request body. The canonical model
//! keeps tool results inside user messages (as Anthropic does); here each becomes its own
//! `tool` message, right after the assistant message that made the calls.

use std::borrow::Cow;

use serde::Serialize;
use serde_json::Value;

use super::Dialect;
use crate::llm::image::ImageBlock;
use crate::llm::types::{ContentBlock, Message, ModelRequest, Role, ToolCalls, ToolSpec};

#[derive(Debug, Serialize)]
pub(super) struct Body<'a> {
    model: &'a str,
    messages: Vec<WireMessage<'a>>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    tools: Vec<WireTool<'a>>,
    /// `"none"`: the tools stay in the request, and the model may not call them.
    #[serde(skip_serializing_if = "Option::is_none")]
    tool_choice: Option<&'static str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    max_completion_tokens: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    max_tokens: Option<u32>,
    stream: bool,
    stream_options: StreamOptions,
}

#[derive(Debug, Serialize)]
struct StreamOptions {
    /// Asks for the final chunk that carries the token counts.
    include_usage: bool,
}

#[derive(Debug, Serialize)]
#[serde(tag = "role", rename_all = "snake_case")]
enum WireMessage<'a> {
    System {
        content: &'a str,
    },
    User {
        content: UserContent<'a>,
    },
    Assistant {
        /// `null` when the message only calls tools.
        content: Option<String>,
        #[serde(skip_serializing_if = "Option::is_none")]
        reasoning_content: Option<String>,
        #[serde(skip_serializing_if = "Vec::is_empty")]
        tool_calls: Vec<WireToolCall<'a>>,
    },
    Tool {
        tool_call_id: &'a str,
        content: Cow<'a, str>,
    },
}

/// A user message's content: a string, or with images an array of text and `image_url` parts.
#[derive(Debug)]
struct UserContent<'a> {
    text: Cow<'a, str>,
    images: Vec<&'a ImageBlock>,
}

impl Serialize for UserContent<'_> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeSeq;
        if self.images.is_empty() {
            return serializer.serialize_str(&self.text);
        }
        let mut seq = serializer.serialize_seq(None)?;
        if !self.text.is_empty() {
            seq.serialize_element(&serde_json::json!({"type": "text", "text": self.text}))?;
        }
        for image in &self.images {
            let url = format!("data:{};base64,{}", image.media_type, image.data);
            seq.serialize_element(&serde_json::json!({
                "type": "image_url",
                "image_url": {"url": url},
            }))?;
        }
        seq.end()
    }
}

#[derive(Debug, Serialize)]
struct WireToolCall<'a> {
    id: &'a str,
    #[serde(rename = "type")]
    kind: &'static str,
    function: WireFunction<'a>,
}

#[derive(Debug, Serialize)]
struct WireFunction<'a> {
    name: &'a str,
    /// JSON text, as the API wants it.
    arguments: Cow<'a, str>,
}

#[derive(Debug, Serialize)]
struct WireTool<'a> {
    #[serde(rename = "type")]
    kind: &'static str,
    function: WireToolFunction<'a>,
}

#[derive(Debug, Serialize)]
struct WireToolFunction<'a> {
    name: &'a str,
    description: &'a str,
    parameters: &'a Value,
}

pub(super) fn body<'a>(model: &'a str, request: &'a ModelRequest, dialect: Dialect) -> Body<'a> {
    let mut messages = Vec::with_capacity(request.messages.len() + 1);
    if !request.system.is_empty() {
        messages.push(WireMessage::System {
            content: &request.system,
        });
    }
    for message in &request.messages {
        match message.role {
            Role::User => push_user(&mut messages, message),
            Role::Assistant => messages.extend(assistant(message, dialect)),
        }
    }
    let limit = Some(request.max_output_tokens);
    let (max_completion_tokens, max_tokens) = match dialect {
        Dialect::OpenAi => (limit, None),
        Dialect::Compatible => (None, limit),
    };
    Body {
        model,
        messages,
        tools: request.tools.iter().map(tool).collect(),
        tool_choice: (request.tool_calls == ToolCalls::Forbidden && !request.tools.is_empty())
            .then_some("none"),
        max_completion_tokens,
        max_tokens,
        stream: true,
        stream_options: StreamOptions {
            include_usage: true,
        },
    }
}

fn tool(spec: &ToolSpec) -> WireTool<'_> {
    WireTool {
        kind: "function",
        function: WireToolFunction {
            name: &spec.name,
            description: &spec.description,
            parameters: &spec.input_schema,
        },
    }
}

/// Tool results first, in order (they must follow the assistant's calls directly), then the
/// images they returned (a tool message cannot carry images: a user message says whose they
/// are), then the text and attached images, joined onto the previous user message if there is
/// one: some chat templates of local servers insist that roles alternate.
fn push_user<'a>(out: &mut Vec<WireMessage<'a>>, message: &'a Message) {
    for block in &message.content {
        if let ContentBlock::ToolResult {
            tool_use_id,
            content,
            is_error,
        } = block
        {
            // The format has no error flag, so the model learns it from the text.
            let content = if *is_error && !content.to_ascii_lowercase().starts_with("error") {
                Cow::Owned(format!("Error: {content}"))
            } else {
                Cow::Borrowed(content.as_str())
            };
            out.push(WireMessage::Tool {
                tool_call_id: tool_use_id,
                content,
            });
        }
    }
    for block in &message.content {
        if let ContentBlock::Image(image) = block
            && let Some(id) = &image.tool_use_id
        {
            let note = format!("The image {} returned by tool call {id}:", image.name);
            push_user_part(out, Cow::Owned(note), Some(image));
        }
    }
    for block in &message.content {
        match block {
            ContentBlock::Text { text } if !text.trim().is_empty() => {
                push_user_part(out, Cow::Borrowed(text), None);
            }
            ContentBlock::Image(image) if image.tool_use_id.is_none() => {
                push_user_part(out, Cow::Borrowed(""), Some(image));
            }
            _ => {}
        }
    }
}

fn push_user_part<'a>(
    out: &mut Vec<WireMessage<'a>>,
    text: Cow<'a, str>,
    image: Option<&'a ImageBlock>,
) {
    match out.last_mut() {
        Some(WireMessage::User { content }) => {
            if !text.is_empty() {
                let joined = content.text.to_mut();
                if !joined.is_empty() {
                    joined.push_str("\n\n");
                }
                joined.push_str(&text);
            }
            content.images.extend(image);
        }
        _ => out.push(WireMessage::User {
            content: UserContent {
                text,
                images: image.into_iter().collect(),
            },
        }),
    }
}

fn assistant(message: &Message, dialect: Dialect) -> Option<WireMessage<'_>> {
    let mut text = String::new();
    let mut reasoning = String::new();
    let mut tool_calls = Vec::new();
    for block in &message.content {
        match block {
            ContentBlock::Text { text: piece } => join(&mut text, piece),
            ContentBlock::Thinking { thinking, .. } => join(&mut reasoning, thinking),
            ContentBlock::ToolUse { id, name, input } => tool_calls.push(WireToolCall {
                id,
                kind: "function",
                function: WireFunction {
                    name,
                    // Raw text that was not valid JSON goes back as the model wrote it.
                    arguments: match input {
                        Value::String(raw) => Cow::Borrowed(raw.as_str()),
                        other => Cow::Owned(other.to_string()),
                    },
                },
            }),
            // Not expected in an assistant message; there is no way to send it.
            // Another provider's own tools: this one could not read them.
            ContentBlock::ToolResult { .. } | ContentBlock::Image(_) | ContentBlock::Server(_) => {}
        }
    }
    if text.trim().is_empty() && tool_calls.is_empty() {
        return None;
    }
    let reasoning_content =
        (dialect == Dialect::Compatible && !reasoning.is_empty()).then_some(reasoning);
    Some(WireMessage::Assistant {
        content: (!text.is_empty()).then_some(text),
        reasoning_content,
        tool_calls,
    })
}

fn join(into: &mut String, piece: &str) {
    if piece.is_empty() {
        return;
    }
    if !into.is_empty() {
        into.push_str("\n\n");
    }
    into.push_str(piece);
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn request() -> ModelRequest {
        ModelRequest {
            system: "You are mnemo.".into(),
            messages: vec![
                Message::user_text("list files"),
                Message::assistant(vec![
                    ContentBlock::Thinking {
                        thinking: "I should call ls.".into(),
                        signature: None,
                    },
                    ContentBlock::ToolUse {
                        id: "call_1".into(),
                        name: "shell".into(),
                        input: json!({"command": "ls"}),
                    },
                ]),
                Message {
                    role: Role::User,
                    content: vec![ContentBlock::ToolResult {
                        tool_use_id: "call_1".into(),
                        content: "permission denied".into(),
                        is_error: true,
                    }],
                },
            ]
            .into_iter()
            .map(std::sync::Arc::new)
            .collect(),
            tools: Vec::new().into(),
            static_tools: usize::MAX,
            volatile_tail: 0,
            tool_calls: ToolCalls::Allowed,
            server_search: false,
            max_output_tokens: 4096,
        }
    }

    #[test]
    fn openai_gets_max_completion_tokens_and_no_reasoning_content() {
        let request = request();
        let body = serde_json::to_value(body("gpt-5", &request, Dialect::OpenAi));
        let body = body.unwrap_or_default();
        assert_eq!(body["max_completion_tokens"], 4096);
        assert!(body.get("max_tokens").is_none());
        assert!(body["messages"][2].get("reasoning_content").is_none());
        assert!(body.get("tools").is_none());
    }

    #[test]
    fn compatible_servers_get_max_tokens_and_reasoning_content() {
        let request = request();
        let body = serde_json::to_value(body("deepseek-chat", &request, Dialect::Compatible));
        let body = body.unwrap_or_default();
        assert_eq!(body["max_tokens"], 4096);
        assert!(body.get("max_completion_tokens").is_none());
        let assistant = &body["messages"][2];
        assert_eq!(assistant["reasoning_content"], "I should call ls.");
        assert_eq!(assistant["content"], Value::Null);
        assert_eq!(
            assistant["tool_calls"][0]["function"]["arguments"],
            "{\"command\":\"ls\"}"
        );
        assert_eq!(body["messages"][3]["content"], "Error: permission denied");
    }
}
