//! Chat Completions stream chunks as read off the wire: small structs that borrow their
//! strings from the SSE buffer. The compatible servers each add their own fields (reasoning,
//! cache counters, missing ids), so nearly every field is optional.

use std::borrow::Cow;
use std::fmt;

use serde::Deserialize;
use serde::de::{self, Deserializer, Visitor};

use crate::llm::types::Usage;

/// A JSON string borrowed from the event when it holds no escapes, copied otherwise.
/// (`Option<Cow<str>>` would always copy.)
pub(super) struct WireStr<'a>(pub(super) Cow<'a, str>);

impl<'de: 'a, 'a> Deserialize<'de> for WireStr<'a> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct StrVisitor;
        impl<'de> Visitor<'de> for StrVisitor {
            type Value = WireStr<'de>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a string")
            }
            fn visit_borrowed_str<E: de::Error>(self, v: &'de str) -> Result<Self::Value, E> {
                Ok(WireStr(Cow::Borrowed(v)))
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Self::Value, E> {
                Ok(WireStr(Cow::Owned(v.to_owned())))
            }
            fn visit_string<E: de::Error>(self, v: String) -> Result<Self::Value, E> {
                Ok(WireStr(Cow::Owned(v)))
            }
        }
        deserializer.deserialize_str(StrVisitor)
    }
}

#[derive(Deserialize)]
pub(super) struct Chunk<'a> {
    #[serde(default, borrow)]
    pub(super) choices: Vec<Choice<'a>>,
    #[serde(default)]
    pub(super) usage: Option<WireUsage>,
    /// Present only on an error; the rest of the chunk is then irrelevant.
    #[serde(default)]
    pub(super) error: Option<de::IgnoredAny>,
}

#[derive(Deserialize)]
pub(super) struct Choice<'a> {
    /// Which completion this is when several are streamed; absent on some servers.
    #[serde(default)]
    pub(super) index: Option<usize>,
    #[serde(default, borrow)]
    pub(super) delta: Option<Delta<'a>>,
    #[serde(default, borrow)]
    pub(super) finish_reason: Option<WireStr<'a>>,
}

#[derive(Deserialize)]
pub(super) struct Delta<'a> {
    #[serde(default, borrow)]
    pub(super) content: Option<WireStr<'a>>,
    /// What the model says instead of answering, when it refuses.
    #[serde(default, borrow)]
    pub(super) refusal: Option<WireStr<'a>>,
    /// DeepSeek, Kimi, Qwen.
    #[serde(default, borrow)]
    pub(super) reasoning_content: Option<WireStr<'a>>,
    /// Ollama, vLLM, OpenRouter.
    #[serde(default, borrow)]
    pub(super) reasoning: Option<WireStr<'a>>,
    #[serde(default, borrow)]
    pub(super) tool_calls: Option<Vec<ToolCallDelta<'a>>>,
}

#[derive(Deserialize)]
pub(super) struct ToolCallDelta<'a> {
    #[serde(default)]
    pub(super) index: Option<usize>,
    #[serde(default, borrow)]
    pub(super) id: Option<WireStr<'a>>,
    #[serde(default, borrow)]
    pub(super) function: Option<FunctionDelta<'a>>,
}

#[derive(Deserialize)]
pub(super) struct FunctionDelta<'a> {
    #[serde(default, borrow)]
    pub(super) name: Option<WireStr<'a>>,
    #[serde(default, borrow)]
    pub(super) arguments: Option<WireStr<'a>>,
}

#[derive(Deserialize)]
pub(super) struct WireUsage {
    #[serde(default)]
    pub(super) prompt_tokens: Option<u64>,
    #[serde(default)]
    pub(super) completion_tokens: Option<u64>,
    /// OpenAI, Qwen, Kimi, vLLM.
    #[serde(default)]
    pub(super) prompt_tokens_details: Option<PromptDetails>,
    /// DeepSeek.
    #[serde(default)]
    pub(super) prompt_cache_hit_tokens: Option<u64>,
    /// Kimi's older field.
    #[serde(default)]
    pub(super) cached_tokens: Option<u64>,
}

#[derive(Deserialize)]
pub(super) struct PromptDetails {
    #[serde(default)]
    pub(super) cached_tokens: Option<u64>,
}

impl WireUsage {
    /// `prompt_tokens` includes the cached part; canonical `input_tokens` does not.
    pub(super) fn canonical(&self) -> Usage {
        let prompt = self.prompt_tokens.unwrap_or(0);
        let cached = self
            .prompt_tokens_details
            .as_ref()
            .and_then(|d| d.cached_tokens)
            .or(self.prompt_cache_hit_tokens)
            .or(self.cached_tokens)
            .unwrap_or(0)
            .min(prompt);
        Usage {
            input_tokens: prompt - cached,
            output_tokens: self.completion_tokens.unwrap_or(0),
            cache_read_tokens: cached,
            cache_write_tokens: 0,
        }
    }
}
