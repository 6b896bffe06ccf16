use super::*;

#[test]
fn a_retry_names_the_model_the_cause_and_the_wait_in_seconds() {
    assert_eq!(
        retry("claude-sonnet", 2, 4000, "overloaded"),
        "claude-sonnet: overloaded; attempt 2 in 4.0 s"
    );
    assert_eq!(
        retry("gpt", 3, 1500, "cut off"),
        "gpt: cut off; attempt 3 in 1.5 s"
    );
}

#[test]
fn a_fallback_says_who_failed_why_and_who_answers() {
    assert_eq!(
        fallback("claude-sonnet", "gpt", "overloaded"),
        "claude-sonnet failed (overloaded); gpt takes over"
    );
}

#[test]
fn a_failed_tool_shows_only_the_first_line_of_its_output() {
    assert_eq!(
        tool_failed("shell", "exit 2\nlots of output\nmore"),
        "shell: exit 2"
    );
    assert_eq!(tool_failed("shell", ""), "shell: ");
    assert_eq!(tool_succeeded("read_file", 12), "read_file (12 ms)");
}

#[test]
fn sub_agents_are_counted_in_words() {
    assert_eq!(sub_agents(1), "1 sub-agent");
    assert_eq!(sub_agents(3), "3 sub-agents");
    assert_eq!(
        agent_started("a1", "look around"),
        "sub-agent a1: look around"
    );
    assert_eq!(
        agent_finished("a1", AgentStatus::Failed, "no key"),
        "sub-agent a1 failed: no key"
    );
}

#[test]
fn a_turn_that_did_not_complete_says_how_it_ended_and_why() {
    assert_eq!(turn_ending(TurnStatus::Completed, Some("ignored")), None);
    assert_eq!(
        turn_ending(TurnStatus::Interrupted, Some("stopped by SIGTERM")).as_deref(),
        Some("Stopped.")
    );
    assert_eq!(
        turn_ending(TurnStatus::StepLimit, None).as_deref(),
        Some("Stopped: the step limit")
    );
    assert_eq!(
        turn_ending(TurnStatus::Failed, Some("every model failed")).as_deref(),
        Some("The turn failed: every model failed")
    );
}

#[test]
fn a_compaction_says_how_much_went_and_where_it_is_kept() {
    assert_eq!(
        compacted(151_000, 12_500, 7, CompactionKind::Model),
        "Compacted the conversation: 151.0k → 12.5k tokens; the older part is archive entry 7"
    );
    assert!(
        compacted(900, 2_500_000, 1, CompactionKind::Mechanical)
            .starts_with("Compacted the conversation (mechanically): 900 → 2.5M tokens")
    );
}
