//! Prompt-cache accounting as the Anthropic and OpenAI APIs document it, for the in-test model
//! server: how many input tokens of a request were read from the cache, written to it, and
//! billed plainly.
//!
//! Anthropic: the prompt is tools, then system, then messages, cut into blocks (each tool, each
//! system block, each content block). A block marked `cache_control` is a breakpoint. A request
//! reads the longest prefix already cached, looked up at each breakpoint and the 20 block
//! boundaries before it; it writes every breakpoint's prefix of at least `MIN_TOKENS`, and the
//! tokens from the end of the read to the last breakpoint are billed as writes. `tool_choice`
//! and `thinking` belong to the first message block (changing them keeps tools and system).
//! OpenAI: every prompt of at least `MIN_TOKENS` is kept; a later one reads the longest common
//! prefix with a kept one, rounded down to `MIN_TOKENS` plus steps of 128 tokens.
//! A session here lasts seconds, so the 5-minute lifetime never runs out. Tokens are estimated
//! as a quarter of the bytes of each block's JSON.

use std::collections::HashSet;
use std::hash::{DefaultHasher, Hash, Hasher};

use serde_json::Value;

/// The smallest prefix either API caches (Sonnet-class models).
pub const MIN_TOKENS: u64 = 1024;
/// How far before a breakpoint Anthropic looks for an earlier cache entry.
const LOOKBACK: usize = 20;
/// OpenAI's cache grows in steps of this many tokens.
const OPENAI_STEP: u64 = 128;

/// How one request's input tokens were billed.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Usage {
    /// Neither read from nor written to the cache.
    pub input: u64,
    pub write: u64,
    pub read: u64,
}

impl Usage {
    pub fn total(&self) -> u64 {
        self.input + self.write + self.read
    }

    /// Dollars at Sonnet prices ($3 per million input tokens, writes 1.25x, reads 0.1x), with
    /// `output` tokens at $15 per million.
    pub fn cost(&self, output: u64) -> f64 {
        (self.input as f64 * 3.0
            + self.write as f64 * 3.75
            + self.read as f64 * 0.3
            + output as f64 * 15.0)
            / 1e6
    }
}

/// One block of a prompt: its text for hashing, its tokens, whether it is a breakpoint.
struct Block {
    key: String,
    tokens: u64,
    breakpoint: bool,
}

#[derive(Default)]
pub struct CacheSim {
    /// Hashes of the Anthropic prefixes written.
    prefixes: HashSet<u64>,
    /// The OpenAI prompts kept.
    prompts: Vec<String>,
}

impl CacheSim {
    /// The accounting of an Anthropic Messages request body.
    pub fn anthropic(&mut self, body: &Value) -> Usage {
        let blocks = anthropic_blocks(body);
        let mut hasher = DefaultHasher::new();
        let mut hashes = Vec::with_capacity(blocks.len());
        let mut ends = Vec::with_capacity(blocks.len());
        let mut total = 0;
        for block in &blocks {
            block.key.hash(&mut hasher);
            hashes.push(hasher.finish());
            total += block.tokens;
            ends.push(total);
        }
        let breakpoints: Vec<usize> = (0..blocks.len())
            .filter(|&at| blocks[at].breakpoint)
            .collect();
        let read = breakpoints
            .iter()
            .flat_map(|&at| (at.saturating_sub(LOOKBACK)..=at).rev())
            .filter(|&at| self.prefixes.contains(&hashes[at]))
            .map(|at| ends[at])
            .max()
            .unwrap_or(0);
        let mut write = 0;
        if let Some(&last) = breakpoints.last()
            && ends[last] >= MIN_TOKENS
        {
            write = ends[last].saturating_sub(read);
            for &at in &breakpoints {
                if ends[at] >= MIN_TOKENS {
                    self.prefixes.insert(hashes[at]);
                }
            }
        }
        Usage {
            input: total - read - write,
            write,
            read,
        }
    }

    /// The accounting of an OpenAI Chat Completions request body.
    pub fn openai(&mut self, body: &Value) -> Usage {
        let prompt = openai_prompt(body);
        let total = tokens_of(&prompt);
        let common = self
            .prompts
            .iter()
            .map(|kept| common_prefix(kept, &prompt))
            .max()
            .unwrap_or(0);
        let common = (common as u64) / 4;
        let read = if common >= MIN_TOKENS {
            (MIN_TOKENS + (common - MIN_TOKENS) / OPENAI_STEP * OPENAI_STEP).min(total)
        } else {
            0
        };
        if total >= MIN_TOKENS {
            self.prompts.push(prompt);
        }
        Usage {
            input: total - read,
            write: 0,
            read,
        }
    }
}

fn tokens_of(text: &str) -> u64 {
    (text.len() as u64).div_ceil(4)
}

fn common_prefix(a: &str, b: &str) -> usize {
    a.bytes().zip(b.bytes()).take_while(|(x, y)| x == y).count()
}

/// `block` without its `cache_control`, and whether it had one.
fn without_breakpoint(block: &Value) -> (Value, bool) {
    let mut block = block.clone();
    let marked = block
        .as_object_mut()
        .and_then(|o| o.remove("cache_control"))
        .is_some();
    (block, marked)
}

fn anthropic_blocks(body: &Value) -> Vec<Block> {
    let mut blocks = Vec::new();
    let mut push = |key: String, breakpoint: bool| {
        blocks.push(Block {
            tokens: tokens_of(&key),
            key,
            breakpoint,
        });
    };
    for tool in body["tools"].as_array().into_iter().flatten() {
        let (tool, marked) = without_breakpoint(tool);
        push(format!("tool {tool}"), marked);
    }
    match &body["system"] {
        Value::String(text) => push(format!("system {text}"), false),
        Value::Array(system) => {
            for block in system {
                let (block, marked) = without_breakpoint(block);
                push(format!("system {block}"), marked);
            }
        }
        _ => {}
    }
    // Changing these keeps the cached tools and system prompt, not the messages.
    let mut settings = format!("{} {}", body["tool_choice"], body["thinking"]);
    for message in body["messages"].as_array().into_iter().flatten() {
        let role = message["role"].as_str().unwrap_or_default();
        let content = match &message["content"] {
            Value::String(text) => vec![serde_json::json!({"type": "text", "text": text})],
            Value::Array(blocks) => blocks.clone(),
            _ => Vec::new(),
        };
        for block in &content {
            let (block, marked) = without_breakpoint(block);
            push(
                format!("{} {role} {block}", std::mem::take(&mut settings)),
                marked,
            );
        }
    }
    blocks
}

/// The prompt of an OpenAI request as the service renders it, near enough: tools first, then
/// the messages in order.
fn openai_prompt(body: &Value) -> String {
    let mut prompt = String::new();
    for tool in body["tools"].as_array().into_iter().flatten() {
        prompt.push_str(&tool.to_string());
    }
    for message in body["messages"].as_array().into_iter().flatten() {
        prompt.push_str(&message.to_string());
    }
    prompt
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn text(n: usize) -> String {
        "word ".repeat(n)
    }

    fn request(messages: Vec<Value>, breakpoint_on_last: bool) -> Value {
        let mut messages = messages;
        if breakpoint_on_last
            && let Some(block) = messages
                .last_mut()
                .and_then(|m| m["content"].as_array_mut())
                .and_then(|c| c.last_mut())
        {
            block["cache_control"] = json!({"type": "ephemeral"});
        }
        json!({
            "system": [{"type": "text", "text": text(1000), "cache_control": {"type": "ephemeral"}}],
            "tools": [{"name": "shell", "input_schema": {}}],
            "messages": messages,
        })
    }

    fn user(words: usize) -> Value {
        json!({"role": "user", "content": [{"type": "text", "text": text(words)}]})
    }

    #[test]
    fn a_grown_history_reads_what_came_before_and_writes_only_the_new_part() {
        let mut sim = CacheSim::default();
        let first = sim.anthropic(&request(vec![user(400)], true));
        assert_eq!(first.read, 0);
        assert!(first.write > MIN_TOKENS, "{first:?}");
        let second = sim.anthropic(&request(vec![user(400), user(400)], true));
        assert_eq!(second.read, first.write);
        assert!(second.write > 0 && second.write < first.write, "{second:?}");
    }

    #[test]
    fn a_changed_tool_list_rewrites_everything() {
        let mut sim = CacheSim::default();
        sim.anthropic(&request(vec![user(400)], true));
        let mut changed = request(vec![user(400)], true);
        changed["tools"] = json!([{"name": "shell", "input_schema": {"type": "object"}}]);
        assert_eq!(sim.anthropic(&changed).read, 0);
    }

    #[test]
    fn openai_reads_the_common_prefix_in_steps() {
        let mut sim = CacheSim::default();
        let long = json!({"messages": [{"role": "system", "content": text(1200)}]});
        assert_eq!(sim.openai(&long).read, 0);
        let grown = json!({"messages": [
            {"role": "system", "content": text(1200)},
            {"role": "user", "content": "hi"},
        ]});
        let usage = sim.openai(&grown);
        assert!(usage.read >= MIN_TOKENS && (usage.read - MIN_TOKENS).is_multiple_of(OPENAI_STEP));
        assert!(usage.input < OPENAI_STEP + 20, "{usage:?}");
    }
}
