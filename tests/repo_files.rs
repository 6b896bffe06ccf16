//! What a repository carries and mnemo reads on its own (instruction files, its config) cannot
//! leak a secret, hang start-up, exhaust memory or crash mnemo: end to end through the binary.

#[path = "suite/cli_support/mod.rs"]
mod cli_support;
#[path = "suite/common/mod.rs"]
mod common;

use std::os::unix::fs::symlink;
use std::process::Output;
use std::sync::Arc;
use std::time::{Duration, Instant};

use cli_support::{Workspace, text};
use common::{Reply, TestServer, openai_text, run_on_openai_server};
use serde_json::json;

type TestResult = Result<(), Box<dyn std::error::Error>>;

/// Runs `mnemo run` against `server` with `env` added; a run longer than a minute is killed
/// and reported as hanging.
async fn run_against(
    ws: &Arc<Workspace>,
    server: &TestServer,
    env: &[(&str, &str)],
) -> Result<Output, String> {
    let args = run_on_openai_server(&server.base_url, "what do the instructions say?");
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let mut command = ws.command(&args);
    command.envs(env.iter().copied());
    tokio::task::spawn_blocking(move || {
        let mut child = command.spawn().map_err(|e| e.to_string())?;
        let started = Instant::now();
        while child.try_wait().map_err(|e| e.to_string())?.is_none() {
            if started.elapsed() > Duration::from_secs(60) {
                let _ = child.kill();
                return Err("mnemo run hung at start-up".to_string());
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        child.wait_with_output().map_err(|e| e.to_string())
    })
    .await
    .map_err(|e| e.to_string())?
}

fn mkfifo(path: &std::path::Path) -> TestResult {
    let name = std::ffi::CString::new(path.to_string_lossy().as_bytes())?;
    // SAFETY: mkfifo reads a valid NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(name.as_ptr(), 0o600) }, 0);
    Ok(())
}

/// The largest resident size of any child this test process waited for, in KiB.
fn children_max_rss_kib() -> i64 {
    // SAFETY: getrusage fills the zeroed struct it is given.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: as above; RUSAGE_CHILDREN is a valid target.
    unsafe { libc::getrusage(libc::RUSAGE_CHILDREN, &mut usage) };
    usage.ru_maxrss
}

#[tokio::test(flavor = "multi_thread")]
async fn instruction_files_linked_to_secrets_never_reach_the_provider() -> TestResult {
    let server = TestServer::start(vec![Reply::sse(&openai_text("nothing"))]).await?;
    let ws = Arc::new(Workspace::new());
    let outside = tempfile::tempdir()?;
    let key = outside.path().join("id_rsa");
    std::fs::write(&key, "-----BEGIN OPENSSH PRIVATE KEY----- key-material-42")?;
    symlink("/proc/self/environ", ws.path().join("AGENTS.md"))?;
    symlink(&key, ws.path().join("CLAUDE.md"))?;
    let env = [
        ("LLM_KEY", "llm-secret-value"),
        ("STRIPE_KEY", "sk_live_environ_secret"),
    ];
    let out = run_against(&ws, &server, &env).await?;
    let stderr = text(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    let requests = server.requests();
    assert_eq!(requests.len(), 1, "{stderr}");
    let body = String::from_utf8_lossy(&requests[0].body).into_owned();
    assert!(body.contains("Working directory"), "{body}");
    for secret in [
        "sk_live_environ_secret",
        "llm-secret-value",
        "key-material-42",
    ] {
        assert!(!body.contains(secret), "{secret} reached the provider");
    }
    for name in ["AGENTS.md", "CLAUDE.md"] {
        assert!(
            stderr.contains(&format!("{name} is a symlink out of the workspace")),
            "{stderr}"
        );
    }
    Ok(())
}

#[tokio::test(flavor = "multi_thread")]
async fn a_fifo_or_dev_zero_as_instructions_neither_hangs_nor_fills_memory() -> TestResult {
    let server = TestServer::start(vec![
        Reply::sse(&openai_text("first")),
        Reply::sse(&openai_text("second")),
    ])
    .await?;
    let ws = Arc::new(Workspace::new());
    mkfifo(&ws.path().join("AGENTS.md"))?;
    symlink("/dev/zero", ws.path().join("CLAUDE.md"))?;
    let out = run_against(&ws, &server, &[("LLM_KEY", "k")]).await?;
    let stderr = text(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(
        stderr.contains("AGENTS.md is not a regular file"),
        "{stderr}"
    );
    assert!(
        stderr.contains("CLAUDE.md is a symlink out of the workspace"),
        "{stderr}"
    );

    // A FIFO linked from inside the workspace is refused the same way, without blocking.
    std::fs::remove_file(ws.path().join("CLAUDE.md"))?;
    std::fs::create_dir(ws.path().join("docs"))?;
    mkfifo(&ws.path().join("docs/pipe"))?;
    symlink("docs/pipe", ws.path().join("CLAUDE.md"))?;
    let out = run_against(&ws, &server, &[("LLM_KEY", "k")]).await?;
    assert!(out.status.success(), "{}", text(&out.stderr));
    let requests = server.requests();
    assert_eq!(requests.len(), 2);
    assert!(requests.iter().all(|r| r.body.len() < 256 * 1024));
    let rss_mib = children_max_rss_kib() / 1024;
    assert!(rss_mib < 512, "a child of this test grew to {rss_mib} MiB");
    Ok(())
}

#[test]
fn an_infinite_timeout_in_a_repository_config_is_a_clear_error_not_a_crash() {
    let ws = Workspace::new();
    std::fs::create_dir_all(ws.path().join(".mnemo")).unwrap_or_else(|e| panic!("{e}"));
    ws.write(
        ".mnemo/config.toml",
        "[retry]\nconnect_timeout_secs = inf\n",
    );
    let model = ws.script(json!({"turns": [{"text": "hello"}]}));
    let out = ws.mnemo(&["--model", &model, "run", "hi"], None);
    let stderr = text(&out.stderr);
    assert!(!out.status.success(), "{stderr}");
    assert_ne!(out.status.code(), Some(101), "{stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");
    assert!(stderr.contains(".mnemo/config.toml"), "{stderr}");
    assert!(stderr.contains("retry.connect_timeout_secs"), "{stderr}");
}

#[test]
fn a_heartbeat_planted_by_a_command_does_not_run_until_the_person_trusts_it_again() {
    let ws = Workspace::new();
    let trusted = ws.mnemo(&["trust"], None);
    assert!(trusted.status.success(), "{}", text(&trusted.stderr));
    let plant = "mkdir -p .mnemo/heartbeat && printf -- '---\\nname: planted\\nevery: 1m\\n---\\nrun it\\n' > .mnemo/heartbeat/planted.md";
    let model = ws.script(json!({"turns": [
        {"tool_calls": [{"name": "shell", "arguments": {"command": plant}}]},
        {"text": "done"}
    ]}));
    let out = ws.mnemo(&["--model", &model, "run", "plant"], None);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(
        ws.path().join(".mnemo/heartbeat/planted.md").is_file(),
        "the command could create .mnemo"
    );

    let listed = text(&ws.mnemo(&["schedule", "list"], None).stdout);
    assert!(!listed.contains("planted"), "{listed}");
    assert!(
        listed.contains("wait until the workspace is trusted"),
        "{listed}"
    );

    // The person reviews and trusts the workspace as it is now: then it runs.
    assert!(ws.mnemo(&["trust"], None).status.success());
    let listed = text(&ws.mnemo(&["schedule", "list"], None).stdout);
    assert!(listed.contains("planted"), "{listed}");
}

#[test]
fn heartbeats_behind_a_symlinked_mnemo_folder_are_never_read() {
    let ws = Workspace::new();
    std::fs::create_dir_all(ws.path().join("elsewhere/heartbeat"))
        .unwrap_or_else(|e| panic!("{e}"));
    ws.write(
        "elsewhere/heartbeat/linked.md",
        "---\nname: linked\nevery: 1m\n---\nrun it\n",
    );
    symlink("elsewhere", ws.path().join(".mnemo")).unwrap_or_else(|e| panic!("{e}"));
    assert!(ws.mnemo(&["trust"], None).status.success());
    let out = ws.mnemo(&["schedule", "list"], None);
    let listed = text(&out.stdout);
    assert!(listed.contains("No heartbeats"), "{listed}");
    assert!(listed.contains("is a symbolic link"), "{listed}");
}

#[test]
fn a_repository_skill_linked_out_of_the_workspace_or_to_a_fifo_is_not_read() -> TestResult {
    let root = tempfile::tempdir()?;
    let ws = root.path().join("ws");
    let outside = root.path().join("outside/stolen");
    std::fs::create_dir_all(&outside)?;
    std::fs::write(
        outside.join("SKILL.md"),
        "---\nname: stolen\ndescription: outside secret\n---\nbody\n",
    )?;
    let skills = ws.join(".agents/skills");
    std::fs::create_dir_all(skills.join("piped"))?;
    std::fs::create_dir_all(skills.join("environ"))?;
    std::fs::create_dir_all(skills.join("good"))?;
    std::fs::write(
        skills.join("good/SKILL.md"),
        "---\nname: good\ndescription: a fine skill\n---\nbody\n",
    )?;
    symlink(&outside, skills.join("stolen"))?;
    symlink("/proc/self/environ", skills.join("environ/SKILL.md"))?;
    mkfifo(&skills.join("piped/SKILL.md"))?;
    let config = root.path().join("config");
    std::fs::create_dir_all(&config)?;
    let set = mnemo::skills::discover(&ws, &config);
    let names: Vec<&str> = set.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(names, ["good"]);
    let warnings = set.warnings().join("\n");
    assert!(
        warnings.contains("linked out of the workspace"),
        "{warnings}"
    );
    assert!(
        warnings.contains("symlink out of the workspace"),
        "{warnings}"
    );
    assert!(warnings.contains("not a regular file"), "{warnings}");
    Ok(())
}

#[test]
fn a_repository_config_linked_out_of_the_workspace_is_refused_by_name() -> TestResult {
    let ws = Workspace::new();
    let outside = tempfile::tempdir()?;
    std::fs::write(outside.path().join("config.toml"), "approval = \"full\"\n")?;
    std::fs::create_dir_all(ws.path().join(".mnemo"))?;
    symlink(
        outside.path().join("config.toml"),
        ws.path().join(".mnemo/config.toml"),
    )?;
    let model = ws.script(json!({"turns": [{"text": "hello"}]}));
    let out = ws.mnemo(&["--model", &model, "run", "hi"], None);
    let stderr = text(&out.stderr);
    assert!(!out.status.success(), "{stderr}");
    assert!(
        stderr.contains(".mnemo/config.toml is a symlink out of the workspace"),
        "{stderr}"
    );

    std::fs::remove_file(ws.path().join(".mnemo/config.toml"))?;
    mkfifo(&ws.path().join(".mnemo/config.toml"))?;
    let out = ws.mnemo(&["--model", &model, "run", "hi"], None);
    let stderr = text(&out.stderr);
    assert!(!out.status.success(), "{stderr}");
    assert!(stderr.contains("not a regular file"), "{stderr}");
    Ok(())
}
