//! The Anthropic stream events as read off the wire: small structs that borrow their strings
//! from the SSE buffer, with only the fields the decoder uses. Every event is one of these, so
//! nothing here builds a `serde_json::Value`.

use std::borrow::Cow;

use serde::Deserialize;

#[derive(Deserialize)]
pub(super) struct TypeTag<'a> {
    #[serde(rename = "type", borrow)]
    pub(super) kind: Cow<'a, str>,
}

#[derive(Deserialize)]
pub(super) struct MessageStart {
    pub(super) message: StartedMessage,
}

#[derive(Deserialize)]
pub(super) struct StartedMessage {
    #[serde(default)]
    pub(super) usage: WireUsage,
}

/// `message_start` carries the input side; `message_delta` the output side and, in newer
/// API versions, cumulative input counts as well. A field that is present wins.
#[derive(Deserialize, Default)]
pub(super) struct WireUsage {
    pub(super) input_tokens: Option<u64>,
    pub(super) output_tokens: Option<u64>,
    pub(super) cache_creation_input_tokens: Option<u64>,
    pub(super) cache_read_input_tokens: Option<u64>,
}

#[derive(Deserialize)]
pub(super) struct BlockStart<'a> {
    pub(super) index: usize,
    #[serde(borrow)]
    pub(super) content_block: StartedBlock<'a>,
}

#[derive(Deserialize)]
pub(super) struct StartedBlock<'a> {
    #[serde(rename = "type", borrow)]
    pub(super) kind: Cow<'a, str>,
    #[serde(default, borrow)]
    pub(super) id: Cow<'a, str>,
    #[serde(default, borrow)]
    pub(super) name: Cow<'a, str>,
    #[serde(default, borrow)]
    pub(super) text: Cow<'a, str>,
    #[serde(default, borrow)]
    pub(super) thinking: Cow<'a, str>,
    #[serde(default, borrow)]
    pub(super) signature: Cow<'a, str>,
}

#[derive(Deserialize)]
pub(super) struct BlockDelta<'a> {
    pub(super) index: usize,
    #[serde(borrow)]
    pub(super) delta: Delta<'a>,
}

/// One flat struct for every delta kind: an internally tagged enum would buffer the event.
#[derive(Deserialize)]
pub(super) struct Delta<'a> {
    #[serde(rename = "type", borrow)]
    pub(super) kind: Cow<'a, str>,
    #[serde(default, borrow)]
    pub(super) text: Cow<'a, str>,
    #[serde(default, borrow)]
    pub(super) thinking: Cow<'a, str>,
    #[serde(default, borrow)]
    pub(super) signature: Cow<'a, str>,
    #[serde(default, borrow)]
    pub(super) partial_json: Cow<'a, str>,
    /// Of a `citations_delta`: the page a passage of the text cites.
    #[serde(default, borrow)]
    pub(super) citation: Option<Citation<'a>>,
}

#[derive(Deserialize)]
pub(super) struct Citation<'a> {
    #[serde(default, borrow)]
    pub(super) url: Cow<'a, str>,
    #[serde(default, borrow)]
    pub(super) title: Cow<'a, str>,
}

#[derive(Deserialize)]
pub(super) struct MessageDelta {
    pub(super) delta: StopDelta,
    #[serde(default)]
    pub(super) usage: WireUsage,
}

#[derive(Deserialize)]
pub(super) struct StopDelta {
    #[serde(default)]
    pub(super) stop_reason: Option<String>,
}

#[derive(Deserialize)]
pub(super) struct ErrorEvent {
    pub(super) error: ErrorBody,
}

#[derive(Deserialize)]
pub(super) struct ErrorBody {
    #[serde(rename = "type", default)]
    pub(super) kind: String,
}
