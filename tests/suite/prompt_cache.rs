//! What a session costs in prompt-cache terms, on both wires: the real binary runs a scripted
//! 30-step session (reads, shell commands, edits, greps, an answer) against an in-test server
//! that accounts caching as the APIs document it (`cache_support::sim`).

use crate::cache_support;

use cache_support::session::{Growth, STEPS, plain_step, project, run, run_with};
use cache_support::{Answer, Totals, Wire, growth_only};
use serde_json::json;

#[test]
fn a_plain_session_is_read_from_the_cache_on_both_wires() {
    for wire in [Wire::Anthropic, Wire::OpenAi] {
        let project = project();
        let exchanges = run(wire, project.path(), Box::new(|step, _| plain_step(step)));
        assert_eq!(
            exchanges.len(),
            STEPS,
            "{wire:?}: every step reached the model"
        );
        let totals = Totals::of(&exchanges);
        assert!(
            totals.read_share() > 0.9,
            "{wire:?}: only {:.1} % of the input was read from the cache: {totals:?}",
            totals.read_share() * 100.0
        );
        let edited = std::fs::read_to_string(project.path().join("src/part4.rs"))
            .unwrap_or_else(|e| panic!("{e}"));
        assert!(edited.contains("pub fn value"), "{edited}");
    }
}

#[test]
fn the_last_word_at_the_step_limit_keeps_the_tools_and_forbids_calls() {
    for wire in [Wire::Anthropic, Wire::OpenAi] {
        let project = project();
        let script = Box::new(|step, body: &serde_json::Value| {
            let forbidden = match &body["tool_choice"] {
                serde_json::Value::String(choice) => choice == "none",
                choice => choice["type"] == "none",
            };
            match forbidden {
                true => Answer::Text("Parts 0 to 2 are read; the rest is left.".into()),
                false => plain_step(step),
            }
        });
        let (exchanges, output) = run_with(wire, project.path(), script, &["--max-steps", "3"]);
        let printed = String::from_utf8_lossy(&output.stdout);
        assert_eq!(
            exchanges.len(),
            4,
            "{wire:?}: three steps and the last word"
        );
        let (before, last) = (&exchanges[2].body, &exchanges[3].body);
        assert_eq!(
            before["tools"], last["tools"],
            "{wire:?}: the tools changed"
        );
        assert!(before.get("tool_choice").is_none(), "{wire:?}: {before}");
        assert!(
            printed.contains("Parts 0 to 2 are read"),
            "{wire:?}: the last word was not shown: {printed}"
        );
        // The tool list and the system prompt are still read from the cache.
        assert!(
            exchanges[3].usage.read > 0,
            "{wire:?}: {:?}",
            exchanges[3].usage
        );
    }
}

#[test]
fn a_working_checkpoint_costs_only_what_it_adds() {
    for wire in [Wire::Anthropic, Wire::OpenAi] {
        let project = project();
        let exchanges = run(wire, project.path(), Growth::Checkpoint.script());
        assert_eq!(exchanges.len(), STEPS + 1);
        let checkpoint = exchanges
            .last()
            .map(|e| e.body.to_string())
            .unwrap_or_default();
        assert!(
            checkpoint.contains("parts 0-3"),
            "{wire:?}: the checkpoint is not sent"
        );
        if let Err(costly) = growth_only(wire, &exchanges, None) {
            panic!("{costly}");
        }
    }
}

#[test]
fn run_json_says_each_turns_cache_reads_and_writes() {
    let project = project();
    let (exchanges, output) = run_with(
        Wire::Anthropic,
        project.path(),
        Box::new(|step, _| plain_step(step)),
        &["--json"],
    );
    assert!(output.status.success());
    let printed = String::from_utf8_lossy(&output.stdout);
    let finished: Vec<serde_json::Value> = printed
        .lines()
        .filter_map(|line| serde_json::from_str::<serde_json::Value>(line).ok())
        .filter(|event| event["type"] == "turn_finished")
        .collect();
    assert_eq!(finished.len(), 1, "{printed}");
    let usage = &finished[0]["usage"];
    let totals = Totals::of(&exchanges);
    assert_eq!(usage["cache_read_tokens"], totals.usage.read, "{usage}");
    assert_eq!(usage["cache_write_tokens"], totals.usage.write, "{usage}");
    assert_eq!(usage["input_tokens"], totals.usage.input, "{usage}");
}

#[test]
fn a_capability_made_midway_costs_only_what_it_adds() {
    for wire in [Wire::Anthropic, Wire::OpenAi] {
        let project = project();
        let exchanges = run(wire, project.path(), Growth::Capability.script());
        assert_eq!(exchanges.len(), STEPS + 1);
        let made = exchanges
            .last()
            .map(|e| e.body.to_string())
            .unwrap_or_default();
        assert!(
            made.contains("count-lines"),
            "{wire:?}: the capability was not made"
        );
        if let Err(costly) = growth_only(wire, &exchanges, None) {
            panic!("{costly}");
        }
    }
}

#[test]
fn a_rarely_needed_tool_shows_its_schema_through_use_tool_and_runs() {
    let project = project();
    let script = Box::new(|step, _: &serde_json::Value| match step {
        0 => Answer::tool("use_tool", json!({"tool": "schedule_list"})),
        1 => Answer::tool(
            "use_tool",
            json!({"tool": "schedule_list", "arguments": {}}),
        ),
        _ => Answer::Text("No schedules yet.".into()),
    });
    let exchanges = run(Wire::Anthropic, project.path(), script);
    assert_eq!(exchanges.len(), 3);
    // The newest tool result of request `at`.
    let result = |at: usize| {
        let messages = exchanges[at].body["messages"]
            .as_array()
            .cloned()
            .unwrap_or_default();
        messages
            .last()
            .map(|m| m["content"][0].clone())
            .unwrap_or_default()
    };
    let schema = result(1);
    assert!(
        schema["content"]
            .as_str()
            .unwrap_or_default()
            .contains("input_schema"),
        "{schema}"
    );
    let listed = result(2);
    assert_eq!(listed["type"], "tool_result", "{listed}");
    assert_ne!(listed["is_error"], true, "{listed}");
    assert_eq!(exchanges[2].body["tools"], exchanges[0].body["tools"]);
}
