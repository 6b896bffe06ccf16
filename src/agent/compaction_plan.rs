//! Which messages a compaction drops. Pure, so its promises are property-tested: the first
//! user message stays, a tool call is never separated from its result, the kept part fits the
//! target when it can, and every message is either kept or dropped exactly once.

use std::sync::Arc;

use crate::llm::{ContentBlock, Message, Role};

/// The plan: keep `history[0]` and `history[tail_start..]`; drop `history[1..tail_start]`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Plan {
    pub tail_start: usize,
}

/// Plans a compaction. The tail grows from the end while it fits `target_tokens`, and holds
/// at least `min_tail` messages; it never starts with tool results (it takes their call
/// along instead). `None` when there is nothing to drop.
pub fn plan(
    history: &[Arc<Message>],
    tokens: &[u32],
    target_tokens: u64,
    min_tail: usize,
) -> Option<Plan> {
    let n = history.len().min(tokens.len());
    if n < 3 {
        return None;
    }
    let mut tail_start = n;
    let mut tail_tokens = u64::from(tokens[0]);
    while tail_start > 1 {
        let next = u64::from(tokens[tail_start - 1]);
        let must = n - tail_start < min_tail;
        if !must && tail_tokens + next > target_tokens {
            break;
        }
        tail_start -= 1;
        tail_tokens += next;
    }
    // Results travel with their call: a tail that would open on results takes the call too.
    while tail_start > 1 && is_tool_results(&history[tail_start]) {
        tail_start -= 1;
    }
    (tail_start > 1).then_some(Plan { tail_start })
}

pub fn is_tool_results(message: &Message) -> bool {
    message.role == Role::User
        && message
            .content
            .iter()
            .any(|b| matches!(b, ContentBlock::ToolResult { .. }))
}

#[cfg(test)]
mod tests {
    use std::collections::HashSet;

    use proptest::prelude::*;

    use super::*;

    /// A history of turns: a user prompt, then steps of (assistant with calls, results), then
    /// an answer — the shapes the agent writes.
    fn history_strategy() -> impl Strategy<Value = (Vec<Arc<Message>>, Vec<u32>)> {
        prop::collection::vec((prop::collection::vec(0usize..3, 0..4), 1u32..400), 1..25).prop_map(
            |turns| {
                let mut history = Vec::new();
                let mut tokens = Vec::new();
                let mut call = 0;
                for (steps, size) in turns {
                    history.push(Arc::new(Message::user_text("do something")));
                    tokens.push(size);
                    for calls in steps {
                        let ids: Vec<String> = (0..=calls)
                            .map(|_| {
                                call += 1;
                                format!("call_{call}")
                            })
                            .collect();
                        history.push(Arc::new(Message::assistant(
                            ids.iter()
                                .map(|id| ContentBlock::ToolUse {
                                    id: id.clone(),
                                    name: "read_file".into(),
                                    input: serde_json::json!({}),
                                })
                                .collect(),
                        )));
                        tokens.push(size / 2 + 1);
                        history.push(Arc::new(Message {
                            role: Role::User,
                            content: ids
                                .iter()
                                .map(|id| ContentBlock::ToolResult {
                                    tool_use_id: id.clone(),
                                    content: "ok".into(),
                                    is_error: false,
                                })
                                .collect(),
                        }));
                        tokens.push(size * 2);
                    }
                    history.push(Arc::new(Message::assistant(vec![ContentBlock::Text {
                        text: "done".into(),
                    }])));
                    tokens.push(size);
                }
                (history, tokens)
            },
        )
    }

    proptest! {
        #[test]
        fn compaction_keeps_pairs_the_first_message_the_budget_and_loses_nothing(
            (history, tokens) in history_strategy(),
            target in 50u64..5000,
            min_tail in 1usize..12,
        ) {
            let Some(plan) = plan(&history, &tokens, target, min_tail) else {
                return Ok(());
            };
            let kept: Vec<usize> = std::iter::once(0).chain(plan.tail_start..history.len()).collect();
            let dropped: Vec<usize> = (1..plan.tail_start).collect();
            // Nothing lost, nothing twice.
            let mut all: Vec<usize> = kept.iter().chain(&dropped).copied().collect();
            all.sort_unstable();
            prop_assert_eq!(all, (0..history.len()).collect::<Vec<_>>());
            // The first user message stays.
            prop_assert_eq!(kept[0], 0);
            // Calls and results are never split.
            let calls: HashSet<String> = kept.iter().flat_map(|&i| history[i].tool_calls().map(|c| c.id.to_string()).collect::<Vec<_>>()).collect();
            for &i in &kept {
                for block in &history[i].content {
                    if let ContentBlock::ToolResult { tool_use_id, .. } = block {
                        prop_assert!(calls.contains(tool_use_id), "orphaned result {}", tool_use_id);
                    }
                }
            }
            // The tail holds at least `min_tail` messages, or everything after the first.
            prop_assert!(history.len() - plan.tail_start >= min_tail.min(history.len() - 1) || plan.tail_start == 1);
            // The budget holds whenever the minimal tail itself fits it.
            let min_start = history.len().saturating_sub(min_tail).max(1);
            let minimal: u64 = u64::from(tokens[0]) + tokens[min_start..].iter().map(|&t| u64::from(t)).sum::<u64>();
            let kept_tokens: u64 = kept.iter().map(|&i| u64::from(tokens[i])).sum();
            let max_pair = tokens.iter().map(|&t| u64::from(t)).max().unwrap_or(0) * 2;
            if minimal + max_pair <= target {
                prop_assert!(kept_tokens <= target + max_pair, "kept {} > target {}", kept_tokens, target);
            }
        }
    }

    #[test]
    fn a_tail_that_would_start_on_results_takes_their_call_along() {
        let (history, _) = (
            vec![
                Arc::new(Message::user_text("a")),
                Arc::new(Message::assistant(vec![ContentBlock::Text {
                    text: "x".into(),
                }])),
                Arc::new(Message::assistant(vec![ContentBlock::ToolUse {
                    id: "1".into(),
                    name: "t".into(),
                    input: serde_json::json!({}),
                }])),
                Arc::new(Message {
                    role: Role::User,
                    content: vec![ContentBlock::ToolResult {
                        tool_use_id: "1".into(),
                        content: "r".into(),
                        is_error: false,
                    }],
                }),
            ],
            (),
        );
        let tokens = [10, 10, 10, 10];
        assert_eq!(plan(&history, &tokens, 20, 1), Some(Plan { tail_start: 2 }));
    }
}
