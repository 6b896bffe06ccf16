use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use tokio_util::sync::CancellationToken;

use super::{IDLE, SearchError, Searcher};
use crate::config::{CliOverrides, Dirs};
use crate::gateway::search::SearchAsk;
use crate::serve::log::ServeLog;

type TestResult = Result<(), Box<dyn std::error::Error>>;

/// A searcher whose embedder is a remote one (made without reaching it), in `dir`.
fn searcher(dir: &Path) -> Result<Arc<Searcher>, Box<dyn std::error::Error>> {
    let (cfg, data) = (dir.join("cfg"), dir.join("data"));
    std::fs::create_dir_all(&cfg)?;
    std::fs::create_dir_all(&data)?;
    std::fs::write(
        cfg.join("config.toml"),
        "[memory.embedding]\nkind = \"openai\"\nbase_url = \"http://127.0.0.1:9/v1\"\n\
         model = \"tiny\"\n",
    )?;
    let dirs = Dirs {
        config: Some(cfg),
        data: Some(data.clone()),
    };
    let loaded = crate::host::load_config_from(&dirs, dir, &CliOverrides::default())?;
    let log = ServeLog::open(&data)?;
    Ok(Searcher::new(
        Arc::new(loaded),
        log,
        CancellationToken::new(),
    ))
}

fn kept(searcher: &Searcher) -> bool {
    searcher.kept.lock().is_ok_and(|k| k.embedder.is_some())
}

#[tokio::test(start_paused = true)]
async fn the_embedder_comes_with_the_first_search_and_goes_when_searches_stop() -> TestResult {
    let dir = tempfile::tempdir()?;
    let searcher = searcher(dir.path())?;
    assert!(!kept(&searcher), "an idle daemon holds no model");
    let first = searcher.embedder().ok_or("no embedder")?;
    let held = Arc::downgrade(&first);
    drop(first);

    let a_second = Duration::from_secs(1);
    tokio::time::sleep(IDLE - a_second).await;
    let again = searcher.embedder().ok_or("no embedder")?;
    assert!(
        held.upgrade().is_some_and(|h| Arc::ptr_eq(&h, &again)),
        "the same embedder serves the next search"
    );
    drop(again);
    // The idle time counts from the last search.
    tokio::time::sleep(IDLE - a_second).await;
    assert!(kept(&searcher) && held.upgrade().is_some());
    tokio::time::sleep(2 * a_second).await;
    assert!(!kept(&searcher) && held.upgrade().is_none(), "let go");
    let log = std::fs::read_to_string(dir.path().join("data/serve.log"))?;
    assert!(
        log.contains("searching by meaning with") && log.contains("let the embedding model go"),
        "{log}"
    );

    searcher.embedder().ok_or("no embedder")?;
    assert!(kept(&searcher), "the next search makes one again");
    Ok(())
}

#[tokio::test]
async fn searches_it_cannot_answer_alike_are_refused_with_the_reason() -> TestResult {
    let dir = tempfile::tempdir()?;
    let searcher = searcher(dir.path())?;
    let ask = |query: &str| SearchAsk {
        query: query.into(),
        limit: 10,
        workspace: None,
        database: None,
        model: None,
        except_session: None,
    };
    let refused = |ask: SearchAsk| {
        let searcher = searcher.clone();
        async move { searcher.search(ask).await.err() }
    };
    assert!(matches!(
        refused(ask("  ")).await,
        Some(SearchError::EmptyQuery)
    ));
    let many = SearchAsk {
        limit: 5000,
        ..ask("x")
    };
    assert!(matches!(
        refused(many).await,
        Some(SearchError::Limit(5000))
    ));
    let elsewhere = SearchAsk {
        database: Some("/elsewhere/mnemo.db".into()),
        ..ask("x")
    };
    let error = refused(elsewhere).await.ok_or("answered")?.to_string();
    assert!(
        error.contains("keeps the database") && error.contains("/elsewhere/mnemo.db"),
        "{error}"
    );
    let other_model = SearchAsk {
        model: Some("local:all-MiniLM-L6-v2".into()),
        ..ask("x")
    };
    let error = refused(other_model).await.ok_or("answered")?.to_string();
    assert!(
        error.contains("searches with") && error.contains("tiny"),
        "{error}"
    );
    Ok(())
}
