//! `mnemo acp` driven by an ACP client through a scripted model: a streamed reply, a tool
//! call whose permission is allowed or denied, a cancel in the middle of a slow command, and
//! `session/load` of an earlier session replaying its history.

use crate::acp_support;

use std::time::{Duration, Instant};

use acp_support::{Answer, LIMIT, Seen, Workspace, agent, new_session, prompt, run};
use agent_client_protocol::v1::schema::{
    CancelNotification, LoadSessionRequest, PlanEntryStatus, SessionConfigKind, SessionUpdate,
    StopReason, ToolCallContent, ToolCallStatus, ToolKind,
};
use serde_json::json;

#[tokio::test(flavor = "multi_thread")]
async fn a_prompt_streams_the_reply_as_message_chunks() {
    let ws = Workspace::new();
    let model = ws.script(json!({"turns": [
        {"chunks": ["Hello", " from", " mnemo."], "reasoning": "Greet them."},
    ]}));
    let seen = Seen::default();
    let main = async |cx: agent_client_protocol::v1::ConnectionTo<agent_client_protocol::Agent>| {
        let init = acp_support::initialize(&cx).await?;
        assert!(init.agent_capabilities.load_session);
        let session = cx
            .send_request(agent_client_protocol::v1::schema::NewSessionRequest::new(
                ws.path(),
            ))
            .block_task()
            .await?;
        let modes = session.modes.unwrap_or_else(|| panic!("no modes"));
        assert_eq!(&*modes.current_mode_id.0, "auto");
        assert_eq!(modes.available_modes.len(), 4);
        let options = session.config_options.unwrap_or_default();
        let picker = options.iter().find(|option| &*option.id.0 == "model");
        let picker = picker.unwrap_or_else(|| panic!("no model picker: {options:?}"));
        let SessionConfigKind::Select(select) = &picker.kind else {
            panic!("the model picker is not a select: {picker:?}")
        };
        assert_eq!(&*select.current_value.0, model.as_str());
        let id = session.session_id.0.to_string();
        cx.send_request(prompt(&id, "hi")).block_task().await
    };
    let done = tokio::time::timeout(
        LIMIT,
        run(agent(&ws, &model, &[]), &seen, Answer::Deny, main),
    )
    .await
    .unwrap_or_else(|e| panic!("{e}"))
    .unwrap_or_else(|e| panic!("{e:?}"));
    assert_eq!(done.stop_reason, StopReason::EndTurn);
    assert_eq!(seen.reply(), "Hello from mnemo.");
    let chunks = seen
        .updates()
        .iter()
        .filter(|u| matches!(u, SessionUpdate::AgentMessageChunk(_)))
        .count();
    assert_eq!(chunks, 3, "the reply streams chunk by chunk");
    let thought = seen.updates().iter().any(|u| {
        matches!(u, SessionUpdate::AgentThoughtChunk(c)
            if acp_support::text(&c.content).as_deref() == Some("Greet them."))
    });
    assert!(thought, "the model's reasoning arrives as a thought");
    let commands = seen
        .updates()
        .iter()
        .any(|u| matches!(u, SessionUpdate::AvailableCommandsUpdate(c) if c.available_commands.iter().any(|c| c.name == "compact")));
    assert!(commands, "slash commands are advertised");
}

/// A write under `--approval ask`, with the client answering the permission request.
async fn asked_write(answer: Answer) -> (Workspace, Seen) {
    let ws = Workspace::new();
    let model = ws.script(json!({"turns": [
        {"tool_calls": [{"id": "w1", "name": "write_file",
                         "arguments": {"path": "asked.txt", "content": "written\n"}}]},
        {"text": "Done."},
    ]}));
    let seen = Seen::default();
    let main = async |cx| {
        let id = new_session(&cx, &ws).await?;
        cx.send_request(prompt(&id, "write it")).block_task().await
    };
    let args = ["--approval", "ask"];
    let done = tokio::time::timeout(LIMIT, run(agent(&ws, &model, &args), &seen, answer, main))
        .await
        .unwrap_or_else(|e| panic!("{e}"))
        .unwrap_or_else(|e| panic!("{e:?}"));
    assert_eq!(done.stop_reason, StopReason::EndTurn);
    let asked = seen.asked();
    assert_eq!(asked.len(), 1, "one permission request");
    let request = &asked[0];
    assert_eq!(&*request.tool_call.tool_call_id.0, "w1");
    let title = request.tool_call.fields.title.clone().unwrap_or_default();
    assert!(title.contains("asked.txt"), "{title}");
    let started = seen.updates().into_iter().find_map(|u| match u {
        SessionUpdate::ToolCall(call) => Some(call),
        _ => None,
    });
    let started = started.unwrap_or_else(|| panic!("no tool call update"));
    assert_eq!(started.kind, ToolKind::Edit);
    assert_eq!(started.locations.len(), 1);
    assert!(started.locations[0].path.ends_with("asked.txt"));
    (ws, seen)
}

fn finished_status(seen: &Seen, call: &str) -> Option<ToolCallStatus> {
    seen.updates().into_iter().find_map(|u| match u {
        SessionUpdate::ToolCallUpdate(update) if &*update.tool_call_id.0 == call => {
            update.fields.status
        }
        _ => None,
    })
}

#[tokio::test(flavor = "multi_thread")]
async fn an_allowed_permission_lets_the_write_happen() {
    let (ws, seen) = asked_write(Answer::Allow).await;
    assert_eq!(ws.read("asked.txt"), "written\n");
    assert_eq!(
        finished_status(&seen, "w1"),
        Some(ToolCallStatus::Completed)
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_denied_permission_keeps_the_file_unwritten() {
    let (ws, seen) = asked_write(Answer::Deny).await;
    assert!(!ws.path().join("asked.txt").exists());
    assert_eq!(finished_status(&seen, "w1"), Some(ToolCallStatus::Failed));
}

/// Whether `update` shows a tool call's output containing `wanted`.
fn live_output(update: &SessionUpdate, wanted: &str) -> bool {
    let SessionUpdate::ToolCallUpdate(update) = update else {
        return false;
    };
    update.fields.content.iter().flatten().any(|content| {
        matches!(content, ToolCallContent::Content(shown)
            if acp_support::text(&shown.content).is_some_and(|t| t.contains(wanted)))
    })
}

#[tokio::test(flavor = "multi_thread")]
async fn a_client_failing_to_answer_a_permission_is_a_denial() {
    let (ws, seen) = asked_write(Answer::Fail).await;
    assert!(!ws.path().join("asked.txt").exists());
    assert_eq!(finished_status(&seen, "w1"), Some(ToolCallStatus::Failed));
}

#[tokio::test(flavor = "multi_thread")]
async fn a_cancel_stops_a_slow_command_and_ends_the_turn_as_cancelled() {
    let ws = Workspace::new();
    let model = ws.script(json!({"turns": [
        {"tool_calls": [{"id": "s1", "name": "shell",
                         "arguments": {"command": "echo started; sleep 30"}}]},
        {"text": "never"},
    ]}));
    let seen = Seen::default();
    let watched = seen.clone();
    let main = async |cx: agent_client_protocol::v1::ConnectionTo<agent_client_protocol::Agent>| {
        let id = new_session(&cx, &ws).await?;
        let turn = cx.send_request(prompt(&id, "wait")).block_task();
        let cancel = async {
            let deadline = Instant::now() + Duration::from_secs(20);
            // Its live output shows it runs.
            while !watched.updates().iter().any(|u| live_output(u, "started")) {
                assert!(Instant::now() < deadline, "the command never started");
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
            cx.send_notification(CancelNotification::new(id.clone()))
        };
        let started = Instant::now();
        let (turn, cancelled) = futures_util::join!(turn, cancel);
        cancelled?;
        Ok((turn?, started.elapsed()))
    };
    let args = ["--approval", "full"];
    let (done, took) = tokio::time::timeout(
        LIMIT,
        run(agent(&ws, &model, &args), &seen, Answer::Deny, main),
    )
    .await
    .unwrap_or_else(|e| panic!("{e}"))
    .unwrap_or_else(|e| panic!("{e:?}"));
    assert_eq!(done.stop_reason, StopReason::Cancelled);
    assert!(
        took < Duration::from_secs(20),
        "the command was not stopped: {took:?}"
    );
    assert!(!seen.reply().contains("never"));
}

#[tokio::test(flavor = "multi_thread")]
async fn session_load_replays_the_earlier_conversation() {
    let ws = Workspace::new();
    let model = ws.script(json!({"turns": [
        {"when": "remember", "text": "Noted: PEAR."},
        {"when": "which word", "text": "It was PEAR."},
    ]}));
    let first = Seen::default();
    let main = async |cx| {
        let id = new_session(&cx, &ws).await?;
        cx.send_request(prompt(&id, "remember the word PEAR"))
            .block_task()
            .await?;
        Ok(id)
    };
    let id = tokio::time::timeout(
        LIMIT,
        run(agent(&ws, &model, &[]), &first, Answer::Deny, main),
    )
    .await
    .unwrap_or_else(|e| panic!("{e}"))
    .unwrap_or_else(|e| panic!("{e:?}"));

    let later = Seen::default();
    let replayed = later.clone();
    let main = async |cx: agent_client_protocol::v1::ConnectionTo<agent_client_protocol::Agent>| {
        acp_support::initialize(&cx).await?;
        cx.send_request(LoadSessionRequest::new(id.clone(), ws.path()))
            .block_task()
            .await?;
        // The history arrives before session/load is answered.
        let before = replayed.updates();
        let done = cx
            .send_request(prompt(&id, "which word?"))
            .block_task()
            .await?;
        Ok((before, done))
    };
    let (before, done) = tokio::time::timeout(
        LIMIT,
        run(agent(&ws, &model, &[]), &later, Answer::Deny, main),
    )
    .await
    .unwrap_or_else(|e| panic!("{e}"))
    .unwrap_or_else(|e| panic!("{e:?}"));
    let said: Vec<String> = before
        .iter()
        .filter_map(|u| match u {
            SessionUpdate::UserMessageChunk(c) => {
                acp_support::text(&c.content).map(|t| format!("user: {t}"))
            }
            SessionUpdate::AgentMessageChunk(c) => {
                acp_support::text(&c.content).map(|t| format!("agent: {t}"))
            }
            _ => None,
        })
        .collect();
    assert_eq!(
        said,
        ["user: remember the word PEAR", "agent: Noted: PEAR."]
    );
    assert_eq!(done.stop_reason, StopReason::EndTurn);
    assert!(later.reply().ends_with("It was PEAR."), "{}", later.reply());
}

#[tokio::test(flavor = "multi_thread")]
async fn the_agents_plan_reaches_the_editors_plan_view() {
    let ws = Workspace::new();
    let model = ws.script(json!({"turns": [
        {"tool_calls": [{"name": "todo", "arguments": {"items": [
            {"step": "read the parser", "status": "done"},
            {"step": "fix the bug", "status": "in_progress"}]}}]},
        {"text": "fixing it"},
    ]}));
    let seen = Seen::default();
    let main = async |cx: agent_client_protocol::v1::ConnectionTo<agent_client_protocol::Agent>| {
        acp_support::initialize(&cx).await?;
        let id = new_session(&cx, &ws).await?;
        cx.send_request(prompt(&id, "fix the parser"))
            .block_task()
            .await
    };
    tokio::time::timeout(
        LIMIT,
        run(agent(&ws, &model, &[]), &seen, Answer::Deny, main),
    )
    .await
    .unwrap_or_else(|e| panic!("{e}"))
    .unwrap_or_else(|e| panic!("{e:?}"));
    let plans: Vec<Vec<(String, PlanEntryStatus)>> = seen
        .updates()
        .iter()
        .filter_map(|u| match u {
            SessionUpdate::Plan(plan) => Some(
                plan.entries
                    .iter()
                    .map(|e| (e.content.clone(), e.status.clone()))
                    .collect(),
            ),
            _ => None,
        })
        .collect();
    assert_eq!(
        plans,
        [vec![
            ("read the parser".to_string(), PlanEntryStatus::Completed),
            ("fix the bug".to_string(), PlanEntryStatus::InProgress),
        ]]
    );
}

/// An image in an ACP prompt is attached to the user message the session keeps (and the
/// model gets); the agent says it takes images.
#[tokio::test(flavor = "multi_thread")]
async fn an_image_in_a_prompt_is_attached_to_the_message() {
    use agent_client_protocol::v1::schema::{ContentBlock, ImageContent, PromptRequest};
    use base64::Engine;
    let ws = Workspace::new();
    let model = ws.script(json!({"turns": [{"text": "A small picture."}]}));
    let mut png = std::io::Cursor::new(Vec::new());
    image::DynamicImage::new_rgb8(6, 4)
        .write_to(&mut png, image::ImageFormat::Png)
        .unwrap_or_else(|e| panic!("{e}"));
    let data = base64::engine::general_purpose::STANDARD.encode(png.into_inner());
    let seen = Seen::default();
    let main = async |cx: agent_client_protocol::v1::ConnectionTo<agent_client_protocol::Agent>| {
        let init = acp_support::initialize(&cx).await?;
        assert!(init.agent_capabilities.prompt_capabilities.image);
        let id = new_session(&cx, &ws).await?;
        let image = ImageContent::new(data.clone(), "image/png").uri("file:///tmp/shot.png");
        let request = PromptRequest::new(
            id.clone(),
            vec![
                ContentBlock::from("what is this?"),
                ContentBlock::Image(image),
            ],
        );
        cx.send_request(request).block_task().await
    };
    let done = tokio::time::timeout(
        LIMIT,
        run(agent(&ws, &model, &[]), &seen, Answer::Deny, main),
    )
    .await
    .unwrap_or_else(|e| panic!("{e}"))
    .unwrap_or_else(|e| panic!("{e:?}"));
    assert_eq!(done.stop_reason, StopReason::EndTurn);
    let db = mnemo::memory::Db::open(&ws.path().join(".data").join("mnemo.db"))
        .unwrap_or_else(|e| panic!("{e}"));
    let cwd = ws.path().canonicalize().unwrap_or_else(|e| panic!("{e}"));
    let session = db
        .latest_session(&cwd.to_string_lossy())
        .unwrap_or_else(|e| panic!("{e}"))
        .unwrap_or_else(|| panic!("no session"));
    let messages = db
        .all_messages(&session.id)
        .unwrap_or_else(|e| panic!("{e}"));
    let first = &messages[0].message;
    assert_eq!(first.text(), "what is this?");
    assert!(
        first.content.iter().any(|b| matches!(b,
            mnemo::llm::ContentBlock::Image(i) if i.name == "shot.png" && (i.width, i.height) == (6, 4))),
        "{:?}",
        first.content
    );
}
