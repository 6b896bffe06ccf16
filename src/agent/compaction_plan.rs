//! Which messages a compaction drops. Pure, so its promises are property-tested: the first
//! user message stays, a tool call is never separated from its result, every message is either
//! kept or dropped exactly once, the dropped stretch holds whole turns (a user's message through
//! the last reply it caused) unless the turn in progress alone is too big, and the kept part
//! fits the target when the last turn does, and the hard limit whenever anything can.

use std::sync::Arc;

use crate::llm::{ContentBlock, Message, Role};

/// The plan: keep `history[0]` and `history[tail_start..]`; drop `history[1..tail_start]`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Plan {
    pub tail_start: usize,
}

/// How much a compaction keeps, in the units of the token counts given.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Keep {
    /// What the kept messages should fit.
    pub target: u64,
    /// What they must fit: recent messages beyond `min_tail` are dropped rather than break it.
    pub hard: u64,
    /// Recent messages kept even past the target (while within `hard`).
    pub min_tail: usize,
}

/// Plans a compaction of `history`, whose messages count `tokens` and of which those marked in
/// `turn_starts` open a turn. `None` when there is nothing to drop.
pub fn plan(
    history: &[Arc<Message>],
    tokens: &[u32],
    turn_starts: &[bool],
    keep: Keep,
) -> Option<Plan> {
    let n = history.len().min(tokens.len()).min(turn_starts.len());
    if n < 3 {
        return None;
    }
    let kept_from = |start: usize| -> u64 {
        u64::from(tokens[0]) + tokens[start..n].iter().map(|&t| u64::from(t)).sum::<u64>()
    };
    // The longest tail that fits the target, with the last message always and at least
    // `min_tail` of them while the hard limit allows.
    let mut tail_start = n;
    let mut tail_tokens = u64::from(tokens[0]);
    while tail_start > 1 {
        let next = u64::from(tokens[tail_start - 1]);
        let short = n - tail_start < keep.min_tail && tail_tokens + next <= keep.hard;
        if tail_start < n && !short && tail_tokens + next > keep.target {
            break;
        }
        tail_start -= 1;
        tail_tokens += next;
    }
    // Whole turns: start the tail at the next turn (dropping the rest of the one it cut), or
    // else keep the turn it cut whole if that fits the hard limit; only a turn in progress
    // that is too big by itself is split.
    if let Some(next) = (tail_start..n).find(|&i| turn_starts[i]) {
        tail_start = next;
    } else if let Some(start) = (2..tail_start).rev().find(|&i| turn_starts[i])
        && kept_from(start) <= keep.hard
    {
        tail_start = start;
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
    fn history_strategy() -> impl Strategy<Value = (Vec<Arc<Message>>, Vec<u32>, Vec<bool>)> {
        prop::collection::vec((prop::collection::vec(0usize..3, 0..4), 1u32..400), 1..25).prop_map(
            |turns| {
                let mut history = Vec::new();
                let mut tokens = Vec::new();
                let mut starts = Vec::new();
                let mut call = 0;
                for (steps, size) in turns {
                    history.push(Arc::new(Message::user_text("do something")));
                    tokens.push(size);
                    starts.push(true);
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
                        starts.push(false);
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
                        starts.push(false);
                    }
                    history.push(Arc::new(Message::assistant(vec![ContentBlock::Text {
                        text: "done".into(),
                    }])));
                    tokens.push(size);
                    starts.push(false);
                }
                (history, tokens, starts)
            },
        )
    }

    proptest! {
        #[test]
        fn compaction_keeps_pairs_the_first_message_whole_turns_and_loses_nothing(
            (history, tokens, starts) in history_strategy(),
            target in 50u64..5000,
            extra in 0u64..5000,
            min_tail in 1usize..12,
        ) {
            let keep = Keep { target, hard: target + extra, min_tail };
            let Some(plan) = plan(&history, &tokens, &starts, keep) else {
                return Ok(());
            };
            let n = history.len();
            let kept: Vec<usize> = std::iter::once(0).chain(plan.tail_start..n).collect();
            let dropped: Vec<usize> = (1..plan.tail_start).collect();
            // Nothing lost, nothing twice.
            let mut all: Vec<usize> = kept.iter().chain(&dropped).copied().collect();
            all.sort_unstable();
            prop_assert_eq!(all, (0..n).collect::<Vec<_>>());
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
            // Whole turns: the tail starts a turn, or it lies within the last turn.
            let later_start = (plan.tail_start + 1..n).any(|i| starts[i]);
            prop_assert!(starts[plan.tail_start] || !later_start, "a finished turn was split");
            // Without a minimal tail, the target holds whenever the last turn fits it.
            let kept_tokens: u64 = kept.iter().map(|&i| u64::from(tokens[i])).sum();
            let last_turn = (1..n).rev().find(|&i| starts[i]).unwrap_or(1);
            let last_turn_tokens = u64::from(tokens[0]) + tokens[last_turn..].iter().map(|&t| u64::from(t)).sum::<u64>();
            if min_tail == 1 && last_turn_tokens <= target && last_turn > 1 {
                prop_assert!(kept_tokens <= target, "kept {} > target {}", kept_tokens, target);
            }
            // The hard limit holds (give or take the call that results take along) whenever
            // the first and the last message fit it.
            let max_pair = tokens.iter().map(|&t| u64::from(t)).max().unwrap_or(0) * 2;
            if u64::from(tokens[0]) + u64::from(tokens[n - 1]) <= keep.hard {
                prop_assert!(kept_tokens <= keep.hard + max_pair, "kept {} > hard {}", kept_tokens, keep.hard);
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
        let starts = [true, false, false, false];
        let keep = Keep {
            target: 20,
            hard: 20,
            min_tail: 1,
        };
        assert_eq!(
            plan(&history, &tokens, &starts, keep),
            Some(Plan { tail_start: 2 })
        );
    }

    #[test]
    fn an_oversized_recent_tail_is_compacted_instead_of_kept_whole() {
        let history: Vec<Arc<Message>> = (0..8)
            .map(|i| Arc::new(Message::user_text(format!("prompt {i}"))))
            .collect();
        let tokens = [100, 3000, 3000, 3000, 3000, 3000, 3000, 3000];
        let starts = [true; 8];
        let keep = Keep {
            target: 4000,
            hard: 8000,
            min_tail: 10,
        };
        let plan = plan(&history, &tokens, &starts, keep);
        // Ten recent messages would be 21,000 tokens: only what fits the hard limit stays.
        assert_eq!(plan, Some(Plan { tail_start: 6 }));
    }
}
