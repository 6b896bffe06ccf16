//! What one session said is recalled by meaning from another before compaction archives it:
//! with the built-in model in memory, a finished turn's messages are embedded in the
//! background; the asking session's own messages are left out of its search.

use crate::agent_support;
use crate::embed_support;

use std::sync::Arc;
use std::time::Duration;

use agent_support::settings;
use mnemo::agent::Session;
use mnemo::llm::fallback::FallbackChain;
use mnemo::llm::scripted::{Script, ScriptedProvider};
use mnemo::memory::piece_index::Source;
use mnemo::memory::recall::RecallScope;
use mnemo::memory::{EmbeddingClient, Store, search_archive};
use mnemo::protocol::{Event, Op};
use serde_json::json;

fn chain(reply: &str) -> Result<Arc<FallbackChain>, serde_json::Error> {
    let script: Script = serde_json::from_value(json!({"turns": [{"text": reply}]}))?;
    Ok(agent_support::chain(Arc::new(ScriptedProvider::new(
        script,
    ))))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_finished_turn_is_found_by_meaning_from_another_session() -> embed_support::TestResult {
    let model = embed_support::model_dir()?;
    let embedder = Arc::new(EmbeddingClient::local(model));
    embedder.embed(&["warm up".to_string()]).await?;
    assert!(embedder.is_warm());

    let workspace = tempfile::tempdir()?;
    let root = workspace.path().canonicalize()?;
    let store = Store::open_in_memory()?;
    let mut session = Session::create(
        settings(&root),
        chain("Noted: the release train leaves every second Thursday.")?,
        mnemo::tools::builtin::builtin_tools(),
        store.clone(),
        None,
    )
    .await?;
    session.set_embedder(Some(embedder.clone()));
    let id = session.id.clone();
    let mut handle = mnemo::agent::spawn(session);
    handle
        .ops
        .send(Op::user_input(
            "We ship a new version to customers every other Thursday.",
        ))
        .await?;
    loop {
        let event = tokio::time::timeout(Duration::from_secs(30), handle.events.recv()).await?;
        if matches!(event, Some(Event::TurnFinished { .. }) | None) {
            break;
        }
    }

    // Embedding runs after the turn, off its path: wait for it, within a limit.
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    loop {
        let model_id = embedder.model_id();
        let pending = store.call(move |db| db.count_unembedded(&model_id)).await?;
        if pending == 0 {
            break;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "{pending} still unembedded"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }

    let question = "how often do releases go out";
    let elsewhere = search_archive(
        &store,
        Some(&embedder),
        question,
        RecallScope::everywhere(),
        5,
    )
    .await?;
    let first = elsewhere.hits.first().ok_or("no hit")?;
    assert_eq!(first.source, Source::Message, "{:#?}", elsewhere.hits);
    assert_eq!(first.session_id.as_deref(), Some(id.as_str()));
    assert!(first.semantic.is_some_and(|cosine| cosine > 0.3));

    let own = RecallScope {
        workspace: None,
        except_session: Some(id.clone()),
    };
    let asked_by_itself = search_archive(&store, Some(&embedder), question, own, 5).await?;
    assert!(
        asked_by_itself.hits.is_empty(),
        "{:#?}",
        asked_by_itself.hits
    );
    handle.ops.send(Op::Shutdown).await?;
    Ok(())
}
