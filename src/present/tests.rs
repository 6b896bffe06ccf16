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
    assert_eq!(
        tool_succeeded("read_file", 12, "1\tfn main() {}"),
        "read_file (12 ms)"
    );
}

#[test]
fn results_written_for_the_model_are_said_in_words() {
    let created = serde_json::json!({
        "created": {"name": "word-count", "tool": "cap_word_count", "version": 1},
        "smoke_test": {"passed": true, "output": "3"}
    });
    assert_eq!(
        tool_succeeded("capability_create", 40, &created.to_string()),
        "capability_create (40 ms): created capability word-count v1 · smoke test passed"
    );
    let untested = serde_json::json!({
        "created": {"name": "word-count", "version": 2},
        "smoke_test": "not run: no examples were given"
    });
    assert_eq!(
        crate::tools::describe::result_line("capability_create", &untested.to_string()).as_deref(),
        Some("created capability word-count v2 · no example to test it with")
    );
    let found = serde_json::json!({"capabilities": [
        {"name": "a", "version": 1}, {"name": "b", "version": 3}
    ]});
    assert_eq!(
        crate::tools::describe::result_line("capability_query", &found.to_string()).as_deref(),
        Some("found 2: a v1, b v3")
    );
    let line = |output: &str| crate::tools::describe::result_line("schedule_create", output);
    assert_eq!(
        line("created schedule #1: once at 2020-01-02 00:29 UTC").as_deref(),
        Some("reminder #1 at 2020-01-02 00:29 · runs while mnemo serve runs")
    );
    let today = chrono::Local::now().format("%Y-%m-%d").to_string();
    assert_eq!(
        line(&format!(
            "created schedule #2: every 1h, next run {today} 10:00 CET\nmnemo serve is not \
             running, so this schedule runs only once it is started (`mnemo serve`); tell the \
             user."
        ))
        .as_deref(),
        Some("schedule #2 every 1h · next at 10:00 · runs once mnemo serve is started")
    );
    // Results that read well as they are keep their own words.
    assert_eq!(
        crate::tools::describe::result_line("schedule_delete", "deleted schedule #2"),
        None
    );
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
