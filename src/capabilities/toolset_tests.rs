use serde_json::json;

use super::*;
use crate::capabilities::{CREATE, QUERY, item_json};
use crate::llm::{ContentBlock, Message, Role};

fn statics() -> Vec<ToolSpec> {
    ["read_file", "shell", "capability_query"]
        .iter()
        .map(|name| ToolSpec {
            name: name.to_string(),
            description: format!("{name} does things").into(),
            input_schema: json!({"type": "object", "properties": {}}).into(),
        })
        .collect()
}

/// A history built step by step: each capability tool call and its result are two messages.
struct History {
    refs: CapabilityRefs,
    seq: i64,
}

impl History {
    fn new() -> Self {
        Self {
            refs: CapabilityRefs::new(),
            seq: 0,
        }
    }

    /// The model calls `tool`, whose result names `caps` (name, version, description).
    /// Returns the seq of the result message.
    fn answer(&mut self, tool: &str, result: serde_json::Value) -> i64 {
        let id = format!("call{}", self.seq);
        let call = Message::assistant(vec![ContentBlock::ToolUse {
            id: id.clone(),
            name: tool.into(),
            input: json!({}),
        }]);
        let answer = Message {
            role: Role::User,
            content: vec![ContentBlock::ToolResult {
                tool_use_id: id,
                content: result.to_string(),
                is_error: false,
            }],
        };
        self.refs.observe(self.seq, &call, None);
        self.refs.observe(self.seq + 1, &answer, Some(&call));
        self.seq += 2;
        self.seq - 1
    }

    fn query(&mut self, caps: &[(&str, u32, &str)]) -> i64 {
        let items: Vec<_> = caps.iter().map(|c| item(c.0, c.1, c.2)).collect();
        self.answer(QUERY, json!({ "capabilities": items }))
    }

    fn create(&mut self, name: &str, version: u32, description: &str) -> i64 {
        self.answer(
            CREATE,
            json!({ "created": item(name, version, description) }),
        )
    }

    fn tools(&self, budget: u32) -> ToolSet {
        derive(&statics(), &[], &[], &self.refs, budget)
    }
}

fn item(name: &str, version: u32, description: &str) -> serde_json::Value {
    let schema = json!({"type": "object", "properties": {"text": {"type": "string"}}});
    item_json(name, version, description, "bash", &[], &schema)
}

fn dynamic(set: &ToolSet) -> Vec<&str> {
    set.dynamic_names().collect()
}

#[test]
fn a_capability_appears_after_a_query_result_and_after_a_create() {
    let mut history = History::new();
    assert_eq!(dynamic(&history.tools(4000)), Vec::<&str>::new());
    history.query(&[("sha256-hash", 1, "Hashes text")]);
    history.create("csv-to-json", 1, "Converts CSV");
    let set = history.tools(4000);
    assert_eq!(dynamic(&set), ["cap_sha256_hash", "cap_csv_to_json"]);
    // Static tools come first, in their fixed order.
    let names: Vec<&str> = set.names().collect();
    assert_eq!(names[..3], ["read_file", "shell", "capability_query"]);
    assert_eq!(set.static_count, 3);
    assert_eq!(set.capability("cap_sha256_hash"), Some(("sha256-hash", 1)));
    assert_eq!(set.capability("cap_missing"), None);
}

#[test]
fn the_last_occurrence_wins() {
    let mut history = History::new();
    history.query(&[("sha256-hash", 1, "Old words")]);
    history.create("sha256-hash", 2, "New words");
    let set = history.tools(4000);
    assert_eq!(dynamic(&set), ["cap_sha256_hash"]);
    assert_eq!(set.capability("cap_sha256_hash"), Some(("sha256-hash", 2)));
    assert_eq!(set.specs[3].description, "[capability] New words");
}

#[test]
fn a_capability_leaves_with_the_message_that_brought_it_and_a_query_brings_it_back() {
    let mut history = History::new();
    let first = history.query(&[("sha256-hash", 1, "Hashes text")]);
    history.query(&[("csv-to-json", 1, "Converts CSV")]);
    // Compaction archives the first call and its result.
    history.refs.remove([first - 1, first]);
    assert_eq!(dynamic(&history.tools(4000)), ["cap_csv_to_json"]);
    history.query(&[("sha256-hash", 1, "Hashes text")]);
    assert_eq!(
        dynamic(&history.tools(4000)),
        ["cap_csv_to_json", "cap_sha256_hash"]
    );
}

#[test]
fn past_the_budget_the_least_recently_referenced_leave_first() {
    let mut history = History::new();
    history.query(&[("a", 1, "first"), ("b", 1, "second")]);
    history.query(&[("c", 1, "third")]);
    // `a` is referenced again, so `b` is now the least recently referenced.
    history.query(&[("a", 1, "first")]);
    let all = history.tools(100_000);
    let each = all.dynamic_tokens / 3;
    assert_eq!(dynamic(&all), ["cap_a", "cap_b", "cap_c"]);
    let two = history.tools(2 * each + 2);
    assert_eq!(dynamic(&two), ["cap_a", "cap_c"]);
    assert_eq!(two.evicted, ["b"]);
    assert!(two.dynamic_tokens <= 2 * each + 2);
    let one = history.tools(each + 1);
    assert_eq!(dynamic(&one), ["cap_a"]);
    assert_eq!(one.evicted, ["b", "c"]);
    assert_eq!(dynamic(&history.tools(0)), Vec::<&str>::new());
}

#[test]
fn a_removed_capability_leaves_until_it_is_named_again() {
    let mut history = History::new();
    history.query(&[("a", 1, "first"), ("b", 1, "second")]);
    history.answer(crate::capabilities::REMOVE, json!({"removed": "a"}));
    assert_eq!(dynamic(&history.tools(4000)), ["cap_b"]);
    history.create("a", 2, "made again");
    let set = history.tools(4000);
    assert_eq!(dynamic(&set), ["cap_b", "cap_a"]);
    assert_eq!(set.capability("cap_a"), Some(("a", 2)));
}

#[test]
fn pinned_capabilities_stay_first_and_are_never_evicted() {
    let mut history = History::new();
    history.query(&[("b", 1, "second")]);
    let schema = json!({"type": "object"});
    let pinned = [CapSpec::new("p", 3, "pinned one", schema)];
    let set = derive(&statics(), &[], &pinned, &history.refs, 0);
    assert_eq!(dynamic(&set), ["cap_p"]);
    assert_eq!(set.evicted, ["b"]);
    let roomy = derive(&statics(), &[], &pinned, &history.refs, 4000);
    assert_eq!(dynamic(&roomy), ["cap_p", "cap_b"]);
}

#[test]
fn the_same_history_gives_the_same_bytes() {
    let mut history = History::new();
    history.query(&[("a", 1, "first"), ("b", 1, "second")]);
    let before = history.tools(4000);
    // A result that references nothing leaves the list as it was.
    history.answer("shell", json!({"capabilities": []}));
    let after = history.tools(4000);
    let bytes = |set: &ToolSet| serde_json::to_string(&*set.specs).unwrap_or_default();
    assert_eq!(bytes(&before), bytes(&after));
    assert_eq!(before, after);
}
