//! Skills in running sessions, through the real Anthropic provider against an in-test server:
//! a long successful turn is asked to distil a skill and the one it writes is listed, loaded
//! and counted by later sessions; failed uses mark a learned skill suspect; an ambiguous patch
//! is refused; the working checkpoint rides at the end of every request of its turn, even
//! across a compaction; and the step limit ends with one call without tools.

use crate::capability_support;
use crate::common;
use crate::skills_support;

use capability_support::{
    TestResult, approvals, finished, last_results, sse_text, sse_tool_use, status,
};
use common::{Reply, TestServer};
use mnemo::memory::skills::SkillOrigin;
use mnemo::protocol::{Event, Op, ToolStatus, TurnStatus, UserMessageKind};
use mnemo::sandbox::ApprovalMode;
use serde_json::json;
use skills_support::{Env, bodies, final_text, last_texts, system_text};

fn sse(replies: &[String]) -> Vec<Reply> {
    replies.iter().map(|r| Reply::sse(r)).collect()
}

fn sleep_call(id: &str, ms: u64) -> String {
    sse_tool_use(id, "sleep", &json!({ "ms": ms }))
}

fn report(id: &str, did_success: bool) -> String {
    sse_tool_use(
        id,
        "turn_report",
        &json!({"did_success": did_success, "current_topic": "docs deployment"}),
    )
}

/// The last assistant text a turn's events show.
fn last_said(events: &[Event]) -> Option<String> {
    events.iter().rev().find_map(|e| match e {
        Event::AssistantMessage { text } if !text.is_empty() => Some(text.clone()),
        _ => None,
    })
}

#[tokio::test]
async fn a_long_successful_turn_distils_a_skill_that_later_sessions_list_load_and_count()
-> TestResult {
    let env = Env::new()?;
    env.person_skill(
        "docs-publish",
        "Deploy the docs site to the static host",
        "Run the publish script.\n",
    )?;
    let mut replies: Vec<String> = (0..5)
        .map(|i| sleep_call(&format!("r{i}"), i + 1))
        .collect();
    replies.push(report("r5", true));
    replies.push(sse_tool_use(
        "r6",
        "skill_write",
        &json!({
            "name": "deploy-docs",
            "description": "Deploy the docs site with the build script",
            "body": "1. Run make docs\n2. Upload site/ to the host\n",
            "verify": "true"
        }),
    ));
    replies.push(sse_text("r7", "Saved the skill."));
    let server = TestServer::start(sse(&replies)).await?;
    let mut agent = env.agent(&server, 6, |_| {}).await?;
    let events = agent.turn("deploy the docs site").await?;
    assert_eq!(status(&events), Some(TurnStatus::Completed), "{events:#?}");
    let calls = finished(&events);
    assert_eq!(calls.len(), 7, "{calls:#?}");
    // The person sees why mnemo wrote to the model: a skill question, not an output cut.
    let kinds: Vec<UserMessageKind> = events
        .iter()
        .filter_map(|e| match e {
            Event::UserMessage { kind, .. } => Some(*kind),
            _ => None,
        })
        .collect();
    assert_eq!(
        kinds,
        [UserMessageKind::Prompt, UserMessageKind::SkillRequest],
        "{events:#?}"
    );
    let written = &calls[6];
    assert_eq!(written.0, "skill_write");
    assert_eq!(written.1, ToolStatus::Ok, "{}", written.2);
    agent.finish().await?;

    let requests = bodies(&server)?;
    assert_eq!(requests.len(), 8);
    // Before the report nobody asks to distil.
    for body in &requests[..6] {
        assert!(
            !last_texts(body).iter().any(|t| t.contains("distil")),
            "{body}"
        );
    }
    let asked = last_texts(&requests[6]).join("\n");
    assert!(asked.contains("distil"), "{asked}");
    assert!(asked.contains("6 tool calls"), "{asked}");
    assert!(
        asked.contains("Closest existing skills: docs-publish"),
        "{asked}"
    );

    // Written where the workspace keeps its skills, without a question under auto.
    let file = env.ws.join(".agents/skills/deploy-docs/SKILL.md");
    assert!(file.is_file(), "{}", file.display());
    let stats = env.stats("deploy-docs").await?.ok_or("no stats row")?;
    assert_eq!(stats.origin, SkillOrigin::Learned);
    assert_eq!(stats.loads, 0);

    // A new session lists it, loads it, and counts every load.
    let server = TestServer::start(sse(&[
        sse_tool_use("s0", "load_skill", &json!({"name": "deploy-docs"})),
        sse_text("s1", "Deployed."),
        sse_tool_use("s2", "load_skill", &json!({"name": "deploy-docs"})),
        sse_text("s3", "Deployed again."),
    ]))
    .await?;
    let mut agent = env.agent(&server, 6, |_| {}).await?;
    let events = agent.turn("deploy the docs").await?;
    assert_eq!(status(&events), Some(TurnStatus::Completed));
    let requests = bodies(&server)?;
    let system = system_text(&requests[0]);
    // Listed as the workspace's own, which the person has not trusted here.
    assert!(
        system.contains("- deploy-docs (from this repository, not trusted"),
        "{system}"
    );
    let loaded = last_results(&requests[1]);
    assert_eq!(loaded.len(), 1);
    assert!(!loaded[0].1, "{}", loaded[0].0);
    assert!(loaded[0].0.contains("1. Run make docs"), "{}", loaded[0].0);
    assert!(loaded[0].0.contains("Upload site/ to the host"));
    let stats = env.stats("deploy-docs").await?.ok_or("no stats row")?;
    assert_eq!((stats.loads, stats.successes, stats.failures), (1, 1, 0));

    let events = agent.turn("and once more").await?;
    assert_eq!(status(&events), Some(TurnStatus::Completed));
    agent.finish().await?;
    let stats = env.stats("deploy-docs").await?.ok_or("no stats row")?;
    assert_eq!((stats.loads, stats.successes, stats.failures), (2, 2, 0));
    assert!(!stats.suspect);
    Ok(())
}

#[tokio::test]
async fn two_failed_turns_with_a_learned_skill_mark_it_suspect_in_the_next_catalogue() -> TestResult
{
    let env = Env::new()?;
    let load = json!({"name": "flaky-fix"});
    let error = r#"{"type":"error","error":{"type":"invalid_request_error","message":"boom"}}"#;
    let replies = vec![
        Reply::sse(&sse_tool_use(
            "r0",
            "skill_write",
            &json!({
                "name": "flaky-fix",
                "description": "Fix the flaky build",
                "body": "Restart the runner.\n",
                "scope": "user",
                "verify": "test -d ."
            }),
        )),
        Reply::sse(&sse_text("r1", "Written.")),
        // A turn that reports it failed.
        Reply::sse(&sse_tool_use("r2", "load_skill", &load)),
        Reply::sse(&report("r3", false)),
        // A turn that the provider ends with an error.
        Reply::sse(&sse_tool_use("r4", "load_skill", &load)),
        Reply::json(400, error),
        Reply::sse(&sse_text("r5", "Hello.")),
    ];
    let server = TestServer::start(replies).await?;
    // Writing the person's own skills asks, except under full.
    let mut agent = env
        .agent(&server, 6, |s| s.approvals = approvals(ApprovalMode::Full))
        .await?;

    let events = agent.turn("write down how to fix the flaky build").await?;
    assert_eq!(status(&events), Some(TurnStatus::Completed));
    let stats = env.stats("flaky-fix").await?.ok_or("no stats row")?;
    assert_eq!(stats.origin, SkillOrigin::Learned);
    assert!(!stats.suspect);

    let events = agent.turn("fix the flaky build").await?;
    assert_eq!(status(&events), Some(TurnStatus::Completed));
    let stats = env.stats("flaky-fix").await?.ok_or("no stats row")?;
    assert_eq!((stats.loads, stats.successes, stats.failures), (1, 0, 1));
    assert!(!stats.suspect, "one failure is not a streak");

    let events = agent.turn("fix the flaky build again").await?;
    assert_eq!(status(&events), Some(TurnStatus::Failed), "{events:#?}");
    let stats = env.stats("flaky-fix").await?.ok_or("no stats row")?;
    assert_eq!((stats.loads, stats.successes, stats.failures), (2, 0, 2));
    assert!(stats.suspect);

    let events = agent.turn("hello").await?;
    assert_eq!(status(&events), Some(TurnStatus::Completed));
    agent.finish().await?;
    let requests = bodies(&server)?;
    let first = system_text(&requests[0]);
    assert!(!first.contains("flaky-fix"), "not written yet: {first}");
    // The catalogue is part of the system prompt, which stays byte-identical within a
    // session (its cached prefix holds); the skill_write result told the model of the skill.
    for body in &requests {
        assert_eq!(
            system_text(body),
            first,
            "the system prompt changed mid-session"
        );
    }

    // The next session's catalogue offers the skill, marked suspect.
    let later = TestServer::start(vec![Reply::sse(&sse_text("r6", "Hello."))]).await?;
    let mut agent = env.agent(&later, 6, |_| {}).await?;
    agent.turn("hello").await?;
    agent.finish().await?;
    let requests = bodies(&later)?;
    let last = system_text(requests.first().ok_or("no requests")?);
    assert!(
        last.contains(&format!(
            "- flaky-fix: Fix the flaky build{}",
            mnemo::skills::SUSPECT_NOTE
        )),
        "{last}"
    );
    Ok(())
}

#[tokio::test]
async fn a_patch_whose_old_text_occurs_twice_is_refused_and_changes_nothing() -> TestResult {
    let env = Env::new()?;
    let file = env.person_skill("twice", "Says a step twice", "run step\nrun step\n")?;
    let before = std::fs::read(&file)?;
    let server = TestServer::start(sse(&[
        sse_tool_use(
            "r0",
            "skill_patch",
            &json!({"name": "twice", "old_text": "run step", "new_text": "run once"}),
        ),
        sse_text("r1", "It is ambiguous."),
    ]))
    .await?;
    let mut agent = env
        .agent(&server, 6, |s| s.approvals = approvals(ApprovalMode::Full))
        .await?;
    let events = agent.turn("make the step run once").await?;
    assert_eq!(status(&events), Some(TurnStatus::Completed));
    agent.finish().await?;
    let calls = finished(&events);
    assert_eq!(calls.len(), 1, "{calls:#?}");
    assert_eq!(
        (calls[0].0.as_str(), calls[0].1),
        ("skill_patch", ToolStatus::Error)
    );
    assert!(calls[0].2.contains("occurs 2 times"), "{}", calls[0].2);
    let results = last_results(&bodies(&server)?[1]);
    assert!(
        results[0].1 && results[0].0.contains("occurs 2 times"),
        "{results:?}"
    );
    assert_eq!(std::fs::read(&file)?, before);
    Ok(())
}

#[tokio::test]
async fn the_checkpoint_ends_every_later_request_of_its_turn_even_after_a_compaction() -> TestResult
{
    const MARK: &str = "CHECKPOINT-XYZ";
    let env = Env::new()?;
    let summary = json!({"goal": "Deploy the docs", "current_status": "sleeping"});
    let mut replies: Vec<String> = (0..6)
        .map(|i| sse_text(&format!("n{i}"), &format!("Noted {i}.")))
        .collect();
    replies.extend([
        sse_tool_use(
            "c0",
            "update_working_checkpoint",
            &json!({"key_info": MARK}),
        ),
        sleep_call("c1", 600),
        sse_text("compressor", &summary.to_string()),
        sleep_call("c2", 1),
        sse_text("c3", "Done."),
        sse_text("next", "A fresh task."),
    ]);
    let server = TestServer::start(sse(&replies)).await?;
    let mut agent = env.agent(&server, 0, |_| {}).await?;
    for i in 0..6 {
        let events = agent.turn(&format!("note {i}")).await?;
        assert_eq!(status(&events), Some(TurnStatus::Completed));
    }
    agent.send(Op::user_input("deploy the docs")).await?;
    // While the long sleep runs, ask for a compaction: it happens before the next step.
    let mut events = agent
        .until(|e| matches!(e, Event::ToolCallStarted { name, .. } if name == "sleep"))
        .await?;
    agent.send(Op::Compact).await?;
    events.extend(
        agent
            .until(|e| matches!(e, Event::TurnFinished { .. }))
            .await?,
    );
    assert_eq!(status(&events), Some(TurnStatus::Completed), "{events:#?}");
    assert!(
        events.iter().any(|e| matches!(e, Event::Compacted { .. })),
        "{events:#?}"
    );
    let events = agent.turn("something else").await?;
    assert_eq!(status(&events), Some(TurnStatus::Completed));
    agent.finish().await?;

    let requests = bodies(&server)?;
    assert_eq!(requests.len(), 12);
    let tail = |at: usize| final_text(&requests[at]).unwrap_or_default();
    // Before the call nothing rides along.
    for (at, body) in requests.iter().enumerate().take(7) {
        let text = final_text(body).unwrap_or_default();
        assert!(!text.contains(MARK), "request {at}: {body}");
    }
    // The requests of the turn after the call, before and after the compaction (request 8
    // is the compressor's).
    for at in [7, 9, 10] {
        let text = tail(at);
        assert!(
            text.starts_with(mnemo::llm::REMINDER_MARK),
            "request {at}: {}",
            requests[at]
        );
        assert!(text.contains(MARK), "request {at}: {text}");
    }
    assert!(
        serde_json::to_string(&requests[8]["tools"])?.len() <= 4,
        "the compressor gets no tools"
    );
    // A new prompt starts without it.
    let fresh = &requests[11];
    assert!(
        !serde_json::to_string(&fresh["messages"].as_array().and_then(|m| m.last()))?
            .contains(MARK),
        "{fresh}"
    );
    assert!(!tail(11).starts_with(mnemo::llm::REMINDER_MARK));
    Ok(())
}

#[tokio::test]
async fn the_step_limit_ends_with_one_call_that_may_not_call_tools_whose_answer_ends_the_turn()
-> TestResult {
    let env = Env::new()?;
    let answer = "Slept three times; nothing is left to do.";
    let server = TestServer::start(sse(&[
        sleep_call("r0", 1),
        sleep_call("r1", 2),
        sleep_call("r2", 3),
        sse_text("r3", answer),
    ]))
    .await?;
    let mut agent = env
        .agent(&server, 0, |settings| settings.max_steps = 3)
        .await?;
    let events = agent.turn("sleep a lot").await?;
    agent.finish().await?;
    assert_eq!(status(&events), Some(TurnStatus::StepLimit), "{events:#?}");
    assert_eq!(last_said(&events).as_deref(), Some(answer));
    assert!(
        events.iter().any(|e| matches!(
            e,
            Event::UserMessage {
                kind: UserMessageKind::StepLimit,
                ..
            }
        )),
        "the last word is asked as a step limit, not an output cut: {events:#?}"
    );
    let note = events.iter().rev().find_map(|e| match e {
        Event::TurnFinished { message, .. } => message.clone(),
        _ => None,
    });
    assert!(
        note.as_deref().is_some_and(|n| n.contains("step limit")),
        "{note:?}"
    );

    let requests = bodies(&server)?;
    assert_eq!(requests.len(), 4);
    for body in &requests[..3] {
        assert!(body["tools"].as_array().is_some_and(|t| !t.is_empty()));
    }
    let last = &requests[3];
    // The tools stay (the history holds calls, and the cached prefix holds); calls are off.
    assert_eq!(last["tools"], requests[2]["tools"]);
    assert_eq!(last["tool_choice"], json!({"type": "none"}));
    let asked = last_texts(last).join("\n");
    assert!(asked.contains("step limit"), "{asked}");
    assert_eq!(
        last_results(last).len(),
        1,
        "the third call's result is sent"
    );
    Ok(())
}

#[tokio::test]
async fn a_skill_loaded_before_a_compaction_is_loaded_again_after_it() -> TestResult {
    let env = Env::new()?;
    env.person_skill(
        "docs-publish",
        "Deploy the docs site to the static host",
        "Run the publish script with --prod.\n",
    )?;
    let summary = json!({"goal": "Deploy the docs", "current_status": "sleeping"});
    let mut replies: Vec<String> = (0..6)
        .map(|i| sse_text(&format!("n{i}"), &format!("Noted {i}.")))
        .collect();
    replies.extend([
        sse_tool_use("c0", "load_skill", &json!({"name": "docs-publish"})),
        sleep_call("c1", 600),
        sse_text("compressor", &summary.to_string()),
        sse_text("c2", "Done."),
    ]);
    let server = TestServer::start(sse(&replies)).await?;
    let mut agent = env.agent(&server, 0, |_| {}).await?;
    for i in 0..6 {
        let events = agent.turn(&format!("note {i}")).await?;
        assert_eq!(status(&events), Some(TurnStatus::Completed));
    }
    agent.send(Op::user_input("deploy the docs")).await?;
    let mut events = agent
        .until(|e| matches!(e, Event::ToolCallStarted { name, .. } if name == "sleep"))
        .await?;
    agent.send(Op::Compact).await?;
    events.extend(
        agent
            .until(|e| matches!(e, Event::TurnFinished { .. }))
            .await?,
    );
    assert_eq!(status(&events), Some(TurnStatus::Completed), "{events:#?}");
    assert!(events.iter().any(|e| matches!(e, Event::Compacted { .. })));
    agent.finish().await?;

    let requests = bodies(&server)?;
    assert_eq!(requests.len(), 10);
    let after = serde_json::to_string(&requests[9]["messages"])?;
    assert!(
        after.contains("loaded again after the compaction"),
        "{after}"
    );
    assert!(
        after.contains("Run the publish script with --prod."),
        "{after}"
    );
    let stats = env.stats("docs-publish").await?.ok_or("no stats row")?;
    assert_eq!((stats.loads, stats.successes), (1, 1));
    Ok(())
}
