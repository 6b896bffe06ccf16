//! `ask_user` end to end through the real binary against an in-test model server: in the
//! terminal the model's question shows as a picker, the person picks a choice, and the model's
//! next request carries the answer; `mnemo run`, with nobody to ask, tells the model so at once.

use std::time::Duration;

use serde_json::{Value, json};

use crate::cache_support;
use crate::pty_support;

use cache_support::{Answer, CacheServer, Wire};
use pty_support::{Terminal, TestResult};

fn question() -> Answer {
    Answer::tool(
        "ask_user",
        json!({"question": "Which colour should the button be?", "choices": ["red", "blue"]}),
    )
}

/// The text of every tool result in a request body (Anthropic wire).
fn tool_results(body: &Value) -> String {
    let mut found = String::new();
    for message in body["messages"].as_array().into_iter().flatten() {
        for block in message["content"].as_array().into_iter().flatten() {
            if block["type"] == "tool_result" {
                found.push_str(&block["content"].to_string());
            }
        }
    }
    found
}

#[test]
fn the_person_picks_a_choice_and_the_next_request_carries_it() -> TestResult {
    let runtime = tokio::runtime::Runtime::new()?;
    let script = Box::new(|step: usize, _: &Value| match step {
        0 => question(),
        _ => Answer::Text("Blue it is.".into()),
    });
    let server = runtime.block_on(CacheServer::start(Wire::Anthropic, script))?;
    let dir = tempfile::tempdir()?;
    let flags = server.flags();
    let args: Vec<&str> = flags.iter().map(String::as_str).collect();
    let mut term = Terminal::spawn_with(&args, dir.path(), &[("LLM_KEY", "test-key")])?;

    term.wait_for("● idle")?;
    term.send("style the button\r")?;
    term.wait_for("? The agent asks")?;
    term.wait_for("Which colour should the button be?")?;
    term.wait_for("2. blue")?;
    term.wait_for("waiting for your answer")?;
    // Keys in the question's first moments are not answers.
    std::thread::sleep(Duration::from_millis(600));
    term.send("\x1b[B")?;
    term.send("\r")?;
    term.wait_for("Blue it is.")?;
    term.wait_for("Which colour should the button be? → blue")?;
    term.quit()?;

    let exchanges = server.exchanges();
    assert_eq!(exchanges.len(), 2, "one request asks, one answers");
    let answered = tool_results(&exchanges[1].body);
    assert!(
        answered.contains("The user answered: blue"),
        "the answer did not reach the model: {answered}"
    );
    Ok(())
}

#[test]
fn mnemo_run_tells_the_model_nobody_can_answer_and_goes_on() {
    let project = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let script = Box::new(|step: usize, _: &Value| match step {
        0 => question(),
        _ => Answer::Text("I went with blue.".into()),
    });
    let (exchanges, output) =
        cache_support::session::run_with(Wire::Anthropic, project.path(), script, &[]);
    assert!(
        output.status.success(),
        "mnemo run failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(String::from_utf8_lossy(&output.stdout).contains("I went with blue."));
    assert_eq!(exchanges.len(), 2);
    let told = tool_results(&exchanges[1].body);
    assert!(
        told.contains("No one can answer here"),
        "the model was not told: {told}"
    );
}
