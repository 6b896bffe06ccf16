//! The host API answered in-process and through a served gateway, against one store: a
//! front end attached to `mnemo serve` lists the same sessions, finds the same archive
//! entries and shows the same skills and capabilities as one running the host itself.

use crate::gateway_support;

use std::sync::Arc;
use std::time::Duration;

use gateway_support::{Served, serve, serve_searching};
use mnemo::gateway::client::GatewayClient;
use mnemo::host::api::{HostApi, SearchAsk};
use mnemo::host::{Attachment, Delivery, LocalHost, OpenOptions, SessionChoice};
use mnemo::memory::capabilities::NewCapability;
use mnemo::memory::skills::SkillOrigin;
use mnemo::protocol::{Event, Op};
use serde_json::json;

type TestResult = Result<(), Box<dyn std::error::Error>>;
type Fallible<T> = Result<T, Box<dyn std::error::Error>>;

const OPTIONS: OpenOptions = OpenOptions {
    approval_mode: None,
    questions: false,
    delivery: Delivery::Wait,
};

/// The host API of `served`'s gateway, as `mnemo attach` holds it.
async fn remote(served: &Served) -> Fallible<Arc<dyn HostApi>> {
    let token = served.dir.path().join("data/gateway-token");
    Ok(Arc::new(
        GatewayClient::connect_unix(&served.socket, &token).await?,
    ))
}

/// A new session opened through `host`, after one turn with `text`.
async fn one_turn(host: &Arc<dyn HostApi>, served: &Served, text: &str) -> Fallible<Attachment> {
    let cli = mnemo::config::CliOverrides::default();
    let mut attached = host
        .open(&served.loaded, &cli, SessionChoice::New, OPTIONS)
        .await?;
    let text = text.to_string();
    attached.ops.send(Op::user_input(text)).await?;
    let finished = tokio::time::timeout(Duration::from_secs(20), async {
        while let Some(event) = attached.events.recv().await {
            if matches!(event.event, Event::TurnFinished { .. }) {
                return true;
            }
        }
        false
    });
    assert!(finished.await?, "the turn finished");
    Ok(attached)
}

#[tokio::test]
async fn the_served_host_answers_as_the_in_process_one() -> TestResult {
    let served = serve_searching(
        json!({"turns": [{"when": "staging", "text": "the staging port is 8443"}]}),
        "",
    )
    .await?;
    let remote = remote(&served).await?;
    let local: Arc<dyn HostApi> =
        Arc::new(LocalHost::new(served.host.clone(), served.loaded.clone()));

    // A session started through the remote host, with one turn.
    let attached = one_turn(&remote, &served, "which port does staging use?").await?;
    served
        .loaded
        .store()?
        .call(|db| {
            db.skill_written("deploy", SkillOrigin::Learned, None, None)?;
            db.skill_loaded("deploy")?;
            db.create_capability(NewCapability {
                name: "port_probe".into(),
                description: "Checks a port\nand says so".into(),
                tags: vec![],
                input_schema: json!({"type": "object"}),
                language: "python".into(),
                code: "print(1)".into(),
                examples: vec![],
                session_id: None,
                turn: None,
                embedding: None,
            })?;
            Ok(())
        })
        .await?;

    let workspace = served.loaded.workspace_str();
    let live = (local.live_sessions().await?, remote.live_sessions().await?);
    assert_eq!(live.0, live.1);
    assert!(
        live.0.iter().any(|s| s.session == attached.session),
        "{live:?}"
    );

    let listed = (
        local.stored_sessions(Some(workspace.clone()), 200).await?,
        remote.stored_sessions(Some(workspace.clone()), 200).await?,
    );
    assert_eq!(listed.0, listed.1);
    assert_eq!(
        listed.0.first().map(|r| r.id.as_str()),
        Some(attached.session.as_str())
    );
    // The picker's preview: the last message with text, the model's answer here.
    assert_eq!(
        listed.0.first().and_then(|r| r.preview.as_deref()),
        Some("the staging port is 8443")
    );

    let prefix: String = attached.session.chars().take(8).collect();
    let named = (
        local.stored_session(prefix.clone()).await?,
        remote.stored_session(prefix).await?,
    );
    assert_eq!(named.0, named.1);
    assert_eq!(named.0.id, attached.session);

    // Renamed through either host, the store keeps the title and both read it back alike.
    let short: String = attached.session.chars().take(8).collect();
    let renamed = remote.rename(short.clone(), "staging ports".into()).await?;
    assert_eq!(renamed.title, "staging ports");
    assert_eq!(renamed, local.stored_session(short.clone()).await?);
    let renamed = local
        .rename(short.clone(), "the staging port".into())
        .await?;
    assert_eq!(renamed, remote.stored_session(short).await?);
    assert_eq!(renamed.title, "the staging port");

    let latest = (
        local.latest_session(workspace.clone()).await?,
        remote.latest_session(workspace.clone()).await?,
    );
    assert_eq!(latest.0, latest.1);
    assert_eq!(latest.0.map(|r| r.id), Some(attached.session.clone()));

    let ask = SearchAsk {
        query: "staging port".into(),
        limit: 5,
        workspace: None,
        database: None,
        model: None,
        except_session: None,
    };
    let found = (local.search(ask.clone()).await?, remote.search(ask).await?);
    assert_eq!(found.0, found.1);
    assert!(
        found
            .0
            .hits
            .iter()
            .any(|h| h.session_id.as_deref() == Some(&attached.session)),
        "{:?}",
        found.0
    );

    let skills = (local.skill_stats().await?, remote.skill_stats().await?);
    assert_eq!(skills.0, skills.1);
    assert!(
        skills
            .0
            .iter()
            .any(|s| s.name == "deploy" && s.origin == "learned" && s.loads == 1),
        "{skills:?}"
    );

    let capabilities = (local.capabilities().await?, remote.capabilities().await?);
    assert_eq!(capabilities.0, capabilities.1);
    assert_eq!(
        capabilities
            .0
            .iter()
            .map(|c| c.name.as_str())
            .collect::<Vec<_>>(),
        ["port_probe"]
    );

    let schedules = (
        local.schedules(workspace.clone()).await?,
        remote.schedules(workspace.clone()).await?,
    );
    assert_eq!(schedules.0, schedules.1);
    assert!(schedules.0.contains("No schedules"), "{}", schedules.0);

    assert_eq!(local.daemon().await?, remote.daemon().await?);
    Ok(())
}

#[tokio::test]
async fn a_resumed_tui_and_a_gateway_client_get_the_same_history() -> TestResult {
    let served = serve(
        json!({"turns": [
            {"when": "port", "tool_calls": [{"name": "read_file", "arguments": {"path": "notes.txt"}}]},
            {"text": "staging listens on 8443"}
        ]}),
        "",
    )
    .await?;
    std::fs::write(served.loaded.workspace.join("notes.txt"), "staging: 8443\n")?;
    let remote = remote(&served).await?;
    let local: Arc<dyn HostApi> =
        Arc::new(LocalHost::new(served.host.clone(), served.loaded.clone()));
    let attached = one_turn(&remote, &served, "which port does staging use?").await?;

    // By a prefix of the id, as `mnemo --resume` takes it.
    let prefix: String = attached.session.chars().take(8).collect();
    for recent in [Some(20), Some(1), None] {
        let seen = (
            local.history(prefix.clone(), recent).await?,
            remote.history(prefix.clone(), recent).await?,
        );
        assert_eq!(seen.0, seen.1, "recent {recent:?}");
        assert_eq!(seen.0.session.id, attached.session);
    }
    let whole = local.history(attached.session.clone(), None).await?;
    let kinds: Vec<&str> = whole
        .replay
        .events
        .iter()
        .filter_map(|event| match event {
            Event::UserMessage { .. } => Some("user"),
            Event::ToolCallStarted { .. } => Some("call"),
            Event::ToolCallFinished { .. } => Some("result"),
            Event::AssistantMessage { .. } => Some("assistant"),
            _ => None,
        })
        .collect();
    assert_eq!(kinds, ["user", "call", "result", "assistant"], "{whole:?}");
    assert_eq!(whole.replay.earlier, 0);
    let unknown = remote.history("nosuchsession".into(), None).await;
    assert!(unknown.is_err(), "{unknown:?}");
    Ok(())
}

#[tokio::test]
async fn a_served_host_says_what_it_cannot_find() -> TestResult {
    let served = serve(json!({"turns": []}), "").await?;
    let remote = remote(&served).await?;
    let workspace = served.loaded.workspace_str();
    assert_eq!(remote.latest_session(workspace).await?, None);
    let cli = mnemo::config::CliOverrides::default();
    let opened = remote
        .open(&served.loaded, &cli, SessionChoice::Continue, OPTIONS)
        .await;
    let error = opened.err().map(|e| e.to_string()).unwrap_or_default();
    assert!(error.contains("no earlier session"), "{error}");
    let attached = remote.attach("nosuchsession", None).await;
    let error = attached.err().map(|e| e.to_string()).unwrap_or_default();
    assert!(error.contains("unknown session nosuchsession"), "{error}");
    Ok(())
}

#[tokio::test]
async fn jobs_changed_is_heard_only_where_a_scheduler_runs() -> TestResult {
    let served = serve(json!({"turns": []}), "").await?;
    let token = served.dir.path().join("data/gateway-token");
    let without: Arc<dyn HostApi> =
        Arc::new(GatewayClient::connect_unix(&served.socket, &token).await?);
    assert!(
        !without.jobs_changed().await,
        "no scheduler in that gateway"
    );

    let dir = tempfile::tempdir()?;
    std::fs::create_dir_all(dir.path().join("data"))?;
    let dirs = mnemo::config::Dirs {
        config: Some(dir.path().join("cfg")),
        data: Some(dir.path().join("data")),
    };
    let cli = mnemo::config::CliOverrides::default();
    let loaded = Arc::new(mnemo::host::load_config_from(&dirs, dir.path(), &cli)?);
    let socket = dir.path().join("gw.sock");
    let _running = mnemo::gateway::start(
        mnemo::host::SessionHost::new(),
        loaded,
        cli,
        &mnemo::gateway::GatewayOptions {
            listen: vec![mnemo::gateway::Listen::Unix(socket.clone())],
            tls: None,
            jobs_changed: Some(mnemo::jobs::scheduler::SchedulerHandle::default()),
            searcher: None,
            telegram_paired: None,
        },
        tokio_util::sync::CancellationToken::new(),
    )
    .await?;
    let token = dir.path().join("data/gateway-token");
    let with: Arc<dyn HostApi> = Arc::new(GatewayClient::connect_unix(&socket, &token).await?);
    assert!(with.jobs_changed().await, "the daemon's scheduler heard it");
    Ok(())
}
