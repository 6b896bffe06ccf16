//! Maps the canonical conversation to an Anthropic Messages request body. Besides the shape,
//! this is where the prompt-cache breakpoints go, so that every turn of a long session reads
//! the shared prefix (system, tools, history) from cache instead of paying for it again.

use std::borrow::Cow;
use std::sync::Arc;

use serde::Serialize;
use serde_json::{Map, Value};

use super::server_tools;
use crate::llm::image::ImageBlock;
use crate::llm::types::{ContentBlock, Message, ModelRequest, Role, ToolCalls, ToolSpec};

/// Anthropic allows four breakpoints: the system prompt, the tools, and these many of the
/// latest user messages (the newest one, and the one before so the previous turn's cache
/// entry is still hit while the newest is written).
const USER_BREAKPOINTS: usize = 2;

#[derive(Debug, Serialize)]
pub(super) struct Body<'a> {
    model: &'a str,
    max_tokens: u32,
    /// Left out of a Message Batches request, which cannot stream.
    #[serde(skip_serializing_if = "is_false")]
    stream: bool,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    system: Vec<WireBlock<'a>>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    tools: Vec<WireTool<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    tool_choice: Option<ToolChoice>,
    messages: Vec<WireMessage<'a>>,
}

/// `{"type": "none"}`: the tools stay in the request, and the model may not call them.
#[derive(Debug, Clone, Copy, Serialize)]
struct ToolChoice {
    #[serde(rename = "type")]
    kind: &'static str,
}

#[derive(Debug, Clone, Copy, Serialize)]
pub(super) struct CacheControl {
    #[serde(rename = "type")]
    kind: &'static str,
}

const EPHEMERAL: CacheControl = CacheControl { kind: "ephemeral" };

/// A tool of mnemo's (name, description, schema) or one the API runs itself (type and name).
#[derive(Debug, Default, Serialize)]
pub(super) struct WireTool<'a> {
    #[serde(rename = "type", skip_serializing_if = "Option::is_none")]
    pub(super) kind: Option<&'static str>,
    pub(super) name: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) description: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) input_schema: Option<&'a Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) max_uses: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) cache_control: Option<CacheControl>,
}

#[derive(Debug, Serialize)]
struct WireMessage<'a> {
    role: Role,
    content: Vec<WireBlock<'a>>,
}

#[derive(Debug, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum WireBlock<'a> {
    Text {
        text: &'a str,
        #[serde(skip_serializing_if = "Option::is_none")]
        cache_control: Option<CacheControl>,
    },
    Thinking {
        thinking: &'a str,
        signature: &'a str,
    },
    ToolUse {
        id: &'a str,
        name: &'a str,
        input: Cow<'a, Value>,
        #[serde(skip_serializing_if = "Option::is_none")]
        cache_control: Option<CacheControl>,
    },
    Image {
        source: ImageSource<'a>,
        #[serde(skip_serializing_if = "Option::is_none")]
        cache_control: Option<CacheControl>,
    },
    ToolResult {
        tool_use_id: &'a str,
        /// Optional on the wire; an empty result is left out rather than sent.
        #[serde(skip_serializing_if = "ToolContent::is_empty")]
        content: ToolContent<'a>,
        #[serde(skip_serializing_if = "is_false")]
        is_error: bool,
        #[serde(skip_serializing_if = "Option::is_none")]
        cache_control: Option<CacheControl>,
    },
    /// A server tool's call or result, as the API sent it.
    #[serde(untagged)]
    Raw(&'a Value),
}

/// `{"type": "image", "source": {"type": "base64", ...}}`.
#[derive(Debug, Serialize)]
struct WireImage<'a> {
    #[serde(rename = "type")]
    kind: &'static str,
    source: ImageSource<'a>,
}

#[derive(Debug, Serialize)]
struct ImageSource<'a> {
    #[serde(rename = "type")]
    kind: &'static str,
    media_type: &'a str,
    data: &'a str,
}

fn wire_image(image: &ImageBlock) -> WireImage<'_> {
    WireImage {
        kind: "image",
        source: ImageSource {
            kind: "base64",
            media_type: &image.media_type,
            data: &image.data,
        },
    }
}

/// A tool result's content: a string, or with images an array of a text and image blocks.
#[derive(Debug)]
struct ToolContent<'a> {
    text: &'a str,
    images: Vec<&'a ImageBlock>,
}

impl ToolContent<'_> {
    fn is_empty(&self) -> bool {
        self.text.is_empty() && self.images.is_empty()
    }
}

impl Serialize for ToolContent<'_> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeSeq;
        if self.images.is_empty() {
            return serializer.serialize_str(self.text);
        }
        let mut seq = serializer.serialize_seq(None)?;
        if !self.text.is_empty() {
            seq.serialize_element(&WireBlock::Text {
                text: self.text,
                cache_control: None,
            })?;
        }
        for image in &self.images {
            seq.serialize_element(&wire_image(image))?;
        }
        seq.end()
    }
}

fn is_false(flag: &bool) -> bool {
    !*flag
}

impl WireBlock<'_> {
    /// Marks the block as a cache breakpoint. Thinking blocks cannot carry one.
    fn set_breakpoint(&mut self) -> bool {
        match self {
            Self::Text { cache_control, .. }
            | Self::Image { cache_control, .. }
            | Self::ToolUse { cache_control, .. }
            | Self::ToolResult { cache_control, .. } => {
                *cache_control = Some(EPHEMERAL);
                true
            }
            Self::Thinking { .. } | Self::Raw(_) => false,
        }
    }
}

pub(super) fn body<'a>(model: &'a str, request: &'a ModelRequest) -> Body<'a> {
    let system = if request.system.is_empty() {
        Vec::new()
    } else {
        vec![WireBlock::Text {
            text: &request.system,
            cache_control: Some(EPHEMERAL),
        }]
    };
    let mut tools: Vec<WireTool<'a>> = server_tools::offered(request).into_iter().collect();
    // The breakpoint sits on the last static tool, so capabilities entering or leaving do
    // not spoil the cached system prompt and static tools (the server's tool comes first).
    let static_tools = request.static_tools.saturating_add(tools.len());
    tools.extend(request.tools.iter().map(tool));
    let last_static = static_tools.min(tools.len()).checked_sub(1);
    if let Some(last) = last_static.and_then(|at| tools.get_mut(at)) {
        last.cache_control = Some(EPHEMERAL);
    }
    let mut messages = messages(&request.messages);
    let mut volatile = request.volatile_tail;
    let mut marked = 0;
    for message in messages.iter_mut().rev() {
        let skipped = volatile.min(message.content.len());
        volatile -= skipped;
        if message.role != Role::User {
            continue;
        }
        let stable = message.content.len() - skipped;
        if message.content[..stable]
            .iter_mut()
            .rev()
            .any(WireBlock::set_breakpoint)
        {
            marked += 1;
        }
        if marked == USER_BREAKPOINTS {
            break;
        }
    }
    Body {
        model,
        max_tokens: request.max_output_tokens,
        stream: true,
        system,
        tool_choice: forbidden(request).then_some(ToolChoice { kind: "none" }),
        tools,
        messages,
    }
}

/// Whether `request` offers tools the model may not call.
fn forbidden(request: &ModelRequest) -> bool {
    request.tool_calls == ToolCalls::Forbidden && !request.tools.is_empty()
}

/// The `params` of one Message Batches request: the body of a direct call without `stream`,
/// with `shared` as a first system block carrying a cache breakpoint and `request.system`
/// after it. Requests whose instructions differ then still read the shared part from the
/// cache entry the first one wrote.
pub fn batch_params(model: &str, request: &ModelRequest, shared: &str) -> Value {
    let mut body = body(model, request);
    body.stream = false;
    for block in &mut body.system {
        if let WireBlock::Text { cache_control, .. } = block {
            *cache_control = None;
        }
    }
    body.system.insert(
        0,
        WireBlock::Text {
            text: shared,
            cache_control: Some(EPHEMERAL),
        },
    );
    serde_json::to_value(&body).unwrap_or_default()
}

fn tool(spec: &ToolSpec) -> WireTool<'_> {
    WireTool {
        name: &spec.name,
        description: Some(&spec.description),
        input_schema: Some(&spec.input_schema),
        ..WireTool::default()
    }
}

/// Consecutive messages of one role become one wire message (the API wants the roles to
/// alternate; the history may hold tool results followed by an injected user note), and
/// messages left without any block are dropped.
fn messages(history: &[Arc<Message>]) -> Vec<WireMessage<'_>> {
    let mut out: Vec<WireMessage<'_>> = Vec::with_capacity(history.len());
    for message in history {
        let blocks = message.content.iter().filter_map(block);
        let blocks: Vec<_> = blocks.collect();
        let blocks = attach_tool_images(blocks, &message.content);
        match out.last_mut() {
            Some(last) if last.role == message.role => last.content.extend(blocks),
            _ => {
                let content: Vec<_> = blocks;
                if !content.is_empty() {
                    out.push(WireMessage {
                        role: message.role,
                        content,
                    });
                }
            }
        }
    }
    // The API rejects a user message whose tool results do not come first.
    for message in out.iter_mut().filter(|m| m.role == Role::User) {
        message
            .content
            .sort_by_key(|b| !matches!(b, WireBlock::ToolResult { .. }));
    }
    out
}

/// Images a tool call returned go inside that call's result; the others stay blocks.
fn attach_tool_images<'a>(
    mut blocks: Vec<WireBlock<'a>>,
    content: &'a [ContentBlock],
) -> Vec<WireBlock<'a>> {
    for block in content {
        let ContentBlock::Image(image) = block else {
            continue;
        };
        let id = image.tool_use_id.as_deref();
        let result = blocks.iter_mut().find_map(|wire| match wire {
            WireBlock::ToolResult {
                tool_use_id,
                content,
                ..
            } if Some(*tool_use_id) == id => Some(content),
            _ => None,
        });
        match result {
            Some(result) => result.images.push(image),
            None => blocks.push(WireBlock::Image {
                source: wire_image(image).source,
                cache_control: None,
            }),
        }
    }
    blocks
}

fn block(block: &ContentBlock) -> Option<WireBlock<'_>> {
    match block {
        // The API rejects text blocks that are empty or only whitespace.
        ContentBlock::Text { text } if text.trim().is_empty() => None,
        ContentBlock::Text { text } => Some(WireBlock::Text {
            text,
            cache_control: None,
        }),
        ContentBlock::Thinking {
            thinking,
            signature: Some(signature),
        } => Some(WireBlock::Thinking {
            thinking,
            signature,
        }),
        // Unsigned thinking came from another provider; Anthropic would reject it.
        ContentBlock::Thinking {
            signature: None, ..
        } => None,
        ContentBlock::ToolUse { id, name, input } => Some(WireBlock::ToolUse {
            id,
            name,
            // Arguments that were not a JSON object (kept as raw text) cannot go back as
            // `input`, which must be an object; the tool result already says what went wrong.
            input: if input.is_object() {
                Cow::Borrowed(input)
            } else {
                Cow::Owned(Value::Object(Map::new()))
            },
            cache_control: None,
        }),
        ContentBlock::ToolResult {
            tool_use_id,
            content,
            is_error,
        } => Some(WireBlock::ToolResult {
            tool_use_id,
            content: ToolContent {
                text: content,
                images: Vec::new(),
            },
            is_error: *is_error,
            cache_control: None,
        }),
        // Placed by `attach_tool_images`, beside or inside the tool results.
        ContentBlock::Image(_) => None,
        ContentBlock::Server(server) if server.wire == "anthropic" => {
            Some(WireBlock::Raw(&server.raw))
        }
        ContentBlock::Server(_) => None,
    }
}

#[cfg(test)]
#[path = "request_tests.rs"]
mod tests;
