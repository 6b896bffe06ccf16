//! Sessions through the store: resume restores the working set exactly, the two tiers move old
//! turns to a searchable archive without losing a message, experiences reach the prompt.

use crate::agent_support;

use mnemo::memory::recall::RecallScope;
use std::sync::Arc;

use agent_support::{chain, settings};
use mnemo::agent::Session;
use mnemo::llm::scripted::{Script, ScriptedProvider};
use mnemo::memory::Store;
use mnemo::protocol::{Event, Op};
use serde_json::json;

type TestResult = Result<(), Box<dyn std::error::Error>>;

fn provider(script: serde_json::Value) -> Result<Arc<ScriptedProvider>, serde_json::Error> {
    let script: Script = serde_json::from_value(script)?;
    Ok(Arc::new(ScriptedProvider::new(script)))
}

/// Runs each prompt as one turn and returns the session.
async fn run_turns(
    session: Session,
    prompts: &[&str],
) -> Result<Session, Box<dyn std::error::Error>> {
    let mut handle = mnemo::agent::spawn(session);
    for prompt in prompts {
        handle.ops.send(Op::user_input(prompt.to_string())).await?;
        while let Some(event) = handle.events.recv().await {
            if matches!(event, Event::TurnFinished { .. }) {
                break;
            }
        }
    }
    handle.ops.send(Op::Shutdown).await?;
    while handle.events.recv().await.is_some() {}
    Ok(handle.task.await?)
}

#[tokio::test]
async fn resume_restores_the_working_set_with_tool_calls_and_results() -> TestResult {
    let dir = tempfile::tempdir()?;
    let ws = dir.path().canonicalize()?;
    std::fs::write(ws.join("a.txt"), "alpha\n")?;
    let store = Store::open(&dir.path().join("db.sqlite"))?;
    let script = json!({"turns": [
        {"tool_calls": [{"name": "read_file", "arguments": {"path": "a.txt"}}]},
        {"text": "It says alpha."}
    ]});
    let tools = mnemo::tools::builtin::builtin_tools();
    let session = Session::create(
        settings(&ws),
        chain(provider(script)?),
        tools.clone(),
        store.clone(),
        None,
    )
    .await?;
    let session = run_turns(session, &["what does a.txt say?"]).await?;
    let before: Vec<_> = session.history().iter().map(|m| (**m).clone()).collect();
    assert_eq!(before.len(), 4);
    let id = session.id.clone();
    drop(session);

    let resumed = Session::resume(
        settings(&ws),
        chain(provider(json!({"turns": [{"text": "again"}]}))?),
        tools,
        store.clone(),
        &id[..8],
    )
    .await?;
    let after: Vec<_> = resumed.history().iter().map(|m| (**m).clone()).collect();
    assert_eq!(after, before);
    let resumed = run_turns(resumed, &["and now?"]).await?;
    assert_eq!(resumed.history().len(), 6);
    let row = store.call(move |db| db.session(&id)).await?;
    assert_eq!(row.title, "what does a.txt say?");
    assert_eq!(row.message_count, 6);
    Ok(())
}

#[tokio::test]
async fn old_turns_move_to_the_archive_and_nothing_is_lost() -> TestResult {
    let dir = tempfile::tempdir()?;
    let ws = dir.path().canonicalize()?;
    let store = Store::open(&dir.path().join("db.sqlite"))?;
    let turns: Vec<_> = (0..12)
        .map(|i| json!({"text": format!("answer {i}: the zebrafish{i} pipeline was configured")}))
        .collect();
    let mut s = settings(&ws);
    s.max_active_messages = 8;
    let tools = mnemo::tools::builtin::builtin_tools();
    let session = Session::create(
        s,
        chain(provider(json!({ "turns": turns }))?),
        tools,
        store.clone(),
        None,
    )
    .await?;
    let prompts: Vec<String> = (0..12).map(|i| format!("question {i}")).collect();
    let prompts: Vec<&str> = prompts.iter().map(String::as_str).collect();
    let session = run_turns(session, &prompts).await?;
    assert!(
        session.history().len() <= 8,
        "working set has {}",
        session.history().len()
    );
    assert_eq!(
        session.history().last().map(|m| m.text()),
        Some("answer 11: the zebrafish11 pipeline was configured".into())
    );

    let id = session.id.clone();
    let (all, active, hits) = store
        .call(move |db| {
            let all = db.all_messages(&id)?;
            let active = db.active_messages(&id)?;
            let hits = db.recall("zebrafish2", None, &RecallScope::everywhere(), 5)?;
            Ok((all, active, hits))
        })
        .await?;
    assert_eq!(all.len(), 24, "every message is kept");
    assert_eq!(active.len(), session.history().len());
    let first = hits.first().ok_or("archived turn not found by search")?;
    let entry = store
        .call({
            let id = first.id;
            move |db| db.archive_entry(id)
        })
        .await?;
    assert!(
        entry
            .messages
            .iter()
            .any(|m| m.text().contains("zebrafish2"))
    );
    Ok(())
}

/// A remembered fact reaches the system prompt of later sessions; within the session that kept
/// it, the system prompt stays byte-identical (its cached prefix holds): the fact is already in
/// the history, through the `remember` call.
#[tokio::test]
async fn experiences_reach_later_sessions_and_leave_this_ones_prompt_as_it_was() -> TestResult {
    let dir = tempfile::tempdir()?;
    let ws = dir.path().canonicalize()?;
    let store = Store::open(&dir.path().join("db.sqlite"))?;
    let script = json!({"turns": [
        {"tool_calls": [{"name": "remember", "arguments": {"text": "Run `make db` before the tests."}}]},
        {"text": "Noted."},
        {"text": "Running make db first."},
        {"text": "Starting with make db."}
    ]});
    let mut tools = mnemo::tools::builtin::builtin_tools();
    mnemo::tools::memory::register(&mut tools, &store, None);
    let session = Session::create(
        settings(&ws),
        chain(provider(script.clone())?),
        tools,
        store.clone(),
        None,
    )
    .await?;
    let session = run_turns(session, &["remember that the tests need make db"]).await?;
    let first_prompt = session.system_prompt().to_string();
    let session = run_turns(session, &["run the tests"]).await?;
    assert_eq!(session.system_prompt(), first_prompt);
    assert!(
        !session
            .history()
            .iter()
            .any(|m| m.text().contains("Kept as experiences")),
        "the session's own fact was repeated"
    );

    let project = ws.display().to_string();
    let experiences = store.call(move |db| db.experiences(Some(&project))).await?;
    assert_eq!(experiences.len(), 1);
    assert_eq!(experiences[0].text, "Run `make db` before the tests.");

    let later = Session::create(
        settings(&ws),
        chain(provider(script)?),
        mnemo::tools::builtin::builtin_tools(),
        store.clone(),
        None,
    )
    .await?;
    let later = run_turns(later, &["run the tests"]).await?;
    assert!(
        later
            .system_prompt()
            .contains(") Run `make db` before the tests."),
        "{}",
        later.system_prompt()
    );
    Ok(())
}

/// A fact kept elsewhere while a session runs (another session, the user) reaches it as a note
/// in its history at the next turn; its system prompt is not rebuilt.
#[tokio::test]
async fn experiences_kept_elsewhere_arrive_as_a_note_at_the_next_turn() -> TestResult {
    let dir = tempfile::tempdir()?;
    let ws = dir.path().canonicalize()?;
    let store = Store::open(&dir.path().join("db.sqlite"))?;
    let script = json!({"turns": [{"text": "Hello."}, {"text": "Using pnpm."}]});
    let session = Session::create(
        settings(&ws),
        chain(provider(script)?),
        mnemo::tools::builtin::builtin_tools(),
        store.clone(),
        None,
    )
    .await?;
    let session = run_turns(session, &["hello"]).await?;
    let first_prompt = session.system_prompt().to_string();
    let scope = mnemo::memory::types::Scope::Project(ws.display().to_string());
    store
        .call(move |db| db.remember("This project uses pnpm, not npm.", &scope, "user"))
        .await?;
    let session = run_turns(session, &["install the dependencies"]).await?;
    assert_eq!(session.system_prompt(), first_prompt);
    let notes: Vec<String> = session
        .history()
        .iter()
        .map(|m| m.text())
        .filter(|text| text.contains("Kept as experiences"))
        .collect();
    assert_eq!(notes.len(), 1, "{notes:?}");
    assert!(
        notes[0].contains("This project uses pnpm, not npm."),
        "{notes:?}"
    );
    Ok(())
}

#[tokio::test]
async fn archived_turns_get_embeddings_and_rank_semantically() -> TestResult {
    let server = EmbeddingServer::start().await?;
    let dir = tempfile::tempdir()?;
    let ws = dir.path().canonicalize()?;
    let store = Store::open(&dir.path().join("db.sqlite"))?;
    let turns: Vec<_> = (0..8)
        .map(|i| json!({"text": format!("reply {i}")}))
        .collect();
    let mut s = settings(&ws);
    s.max_active_messages = 6;
    let tools = mnemo::tools::builtin::builtin_tools();
    let mut session = Session::create(
        s,
        chain(provider(json!({ "turns": turns }))?),
        tools,
        store.clone(),
        None,
    )
    .await?;
    session.set_embedder(Some(Arc::new(mnemo::memory::EmbeddingClient::new(
        mnemo::memory::EmbeddingConfig {
            kind: mnemo::memory::EmbeddingKind::OpenAi,
            base_url: format!("{}/v1", server.base_url),
            model: "e".into(),
            api_key_env: None,
            model_dir: None,
        },
    ))));
    let prompts: Vec<String> = (0..8).map(|i| format!("question {i}")).collect();
    let prompts: Vec<&str> = prompts.iter().map(String::as_str).collect();
    run_turns(session, &prompts).await?;
    // Entries are embedded in the background, off the turns' path.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    while store.call(|db| db.count_unembedded("openai:e")).await? > 0 {
        assert!(
            std::time::Instant::now() < deadline,
            "the entries were never embedded"
        );
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    let paths = server.paths();
    assert!(!paths.is_empty(), "no embedding was requested");
    assert!(paths.iter().all(|p| p == "/v1/embeddings"), "{paths:?}");

    // A query with no keyword in common still finds the entries by meaning.
    let hits = store
        .call(|db| {
            db.recall(
                "unrelated words",
                Some(("openai:e", &[0.6, 0.8, 0.0])),
                &RecallScope::everywhere(),
                5,
            )
        })
        .await?;
    let best = hits.first().ok_or("no semantic hit")?;
    assert!(best.semantic.is_some_and(|s| s > 0.99), "{best:?}");
    Ok(())
}

/// An OpenAI-style `/embeddings` endpoint answering every input with [0.6, 0.8, 0], as many
/// vectors as texts (each archived piece is one input).
struct EmbeddingServer {
    base_url: String,
    paths: Arc<std::sync::Mutex<Vec<String>>>,
}

impl EmbeddingServer {
    async fn start() -> std::io::Result<Self> {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
        let base_url = format!("http://{}", listener.local_addr()?);
        let paths = Arc::new(std::sync::Mutex::new(Vec::new()));
        let seen = paths.clone();
        tokio::spawn(async move {
            while let Ok((mut socket, _)) = listener.accept().await {
                let seen = seen.clone();
                tokio::spawn(async move {
                    let mut request = Vec::new();
                    let mut buf = [0u8; 8192];
                    let body = loop {
                        let Ok(n) = socket.read(&mut buf).await else {
                            return;
                        };
                        if n == 0 {
                            return;
                        }
                        request.extend_from_slice(&buf[..n]);
                        let text = String::from_utf8_lossy(&request).to_string();
                        let Some((head, body)) = text.split_once("\r\n\r\n") else {
                            continue;
                        };
                        let length = head
                            .lines()
                            .find_map(|l| {
                                l.to_ascii_lowercase()
                                    .strip_prefix("content-length:")
                                    .map(|v| v.trim().parse::<usize>().unwrap_or(0))
                            })
                            .unwrap_or(0);
                        if body.len() >= length {
                            if let Some(path) = head.split_whitespace().nth(1)
                                && let Ok(mut paths) = seen.lock()
                            {
                                paths.push(path.to_string());
                            }
                            break body.to_string();
                        }
                    };
                    let inputs = serde_json::from_str::<serde_json::Value>(&body)
                        .ok()
                        .and_then(|v| v["input"].as_array().map(Vec::len))
                        .unwrap_or(0);
                    let data: Vec<serde_json::Value> = (0..inputs)
                        .map(|i| json!({"object": "embedding", "index": i, "embedding": [0.6, 0.8, 0.0]}))
                        .collect();
                    let answer = json!({"object": "list", "data": data, "model": "e"}).to_string();
                    let response = format!(
                        "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{answer}",
                        answer.len()
                    );
                    let _ = socket.write_all(response.as_bytes()).await;
                });
            }
        });
        Ok(Self { base_url, paths })
    }

    fn paths(&self) -> Vec<String> {
        self.paths.lock().map(|p| p.clone()).unwrap_or_default()
    }
}

/// A session on `script` that reads its dream notes files from `notes_dir`.
async fn with_notes(
    ws: &std::path::Path,
    store: &Store,
    notes_dir: &std::path::Path,
    script: serde_json::Value,
) -> Result<Session, Box<dyn std::error::Error>> {
    let mut session = Session::create(
        settings(ws),
        chain(provider(script)?),
        mnemo::tools::builtin::builtin_tools(),
        store.clone(),
        None,
    )
    .await?;
    session.set_notes_dir(Some(notes_dir.to_path_buf()));
    Ok(session)
}

/// A person's edit of MEMORY.md reaches the next session's prompt, without waiting for a dream,
/// and becomes a version of its own; the running session's prompt stays as it was (its cached
/// prefix holds).
#[tokio::test]
async fn a_hand_edit_of_the_notes_reaches_the_next_prompt() -> TestResult {
    let dir = tempfile::tempdir()?;
    let ws = dir.path().canonicalize()?;
    let store = Store::open(&dir.path().join("db.sqlite"))?;
    let notes_dir = dir.path().join("memory");
    let written = mnemo::memory::dream_notes::DreamNotes {
        memory: "- deploys use make deploy".into(),
        user: String::new(),
    };
    let saved = written.clone();
    store
        .call(move |db| {
            db.save_notes(
                &saved,
                mnemo::memory::dream_notes::NotesOrigin::Dream,
                Some(0),
            )
        })
        .await?;
    mnemo::jobs::dream::write_note_files(&notes_dir, &written)?;
    let script = json!({"turns": [{"text": "one"}, {"text": "two"}]});
    let session = with_notes(&ws, &store, &notes_dir, script).await?;
    let session = run_turns(session, &["first"]).await?;
    assert!(
        session
            .system_prompt()
            .contains("- deploys use make deploy")
    );

    // A moment later, so the file's time is newer than the stored version's.
    tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    std::fs::write(
        notes_dir.join("MEMORY.md"),
        "- deploys use the pipeline now\n",
    )?;
    let first_prompt = session.system_prompt().to_string();
    let session = run_turns(session, &["second"]).await?;
    assert_eq!(session.system_prompt(), first_prompt);
    let script = json!({"turns": [{"text": "three"}]});
    let later = with_notes(&ws, &store, &notes_dir, script).await?;
    let later = run_turns(later, &["third"]).await?;
    let prompt = later.system_prompt();
    assert!(
        prompt.contains("- deploys use the pipeline now"),
        "{prompt}"
    );
    assert!(!prompt.contains("make deploy"), "{prompt}");
    let history = store.call(|db| db.notes_history()).await?;
    assert_eq!(history.len(), 2, "the edit is a version of its own");
    Ok(())
}
