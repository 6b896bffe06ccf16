//! A local model server as a person meets it from the command line: `mnemo doctor` and
//! `mnemo config` check the model the flags choose with one request to its server, and a
//! server that is down is said once, at once, by `mnemo run`.

use crate::common;

use std::time::{Duration, Instant};

use common::{Reply, TestServer};

/// A port on this machine nothing listens on.
fn closed_port() -> std::io::Result<u16> {
    let listener = std::net::TcpListener::bind("127.0.0.1:0")?;
    Ok(listener.local_addr()?.port())
}

async fn mnemo(dir: &std::path::Path, args: &[&str]) -> std::io::Result<std::process::Output> {
    tokio::process::Command::new(env!("CARGO_BIN_EXE_mnemo"))
        .args(args)
        .current_dir(dir)
        .env("MNEMO_CONFIG_DIR", dir.join("cfg"))
        .env("MNEMO_DATA_DIR", dir.join("data"))
        .env_remove("OPENAI_API_KEY")
        .env_remove("ANTHROPIC_API_KEY")
        .env_remove("MNEMO_MODEL")
        .output()
        .await
}

fn flags(base_url: &str) -> Vec<String> {
    [
        "--provider",
        "openai",
        "--base-url",
        base_url,
        "--model",
        "local-coder",
    ]
    .map(str::to_string)
    .to_vec()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_local_server_that_is_down_is_said_once_and_at_once() -> common::TestResult {
    let dir = tempfile::tempdir()?;
    let port = closed_port()?;
    let mut args = flags(&format!("http://127.0.0.1:{port}/v1"));
    args.extend(["run".to_string(), "say hi".to_string()]);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let started = Instant::now();
    let out = mnemo(dir.path(), &args).await?;
    let took = started.elapsed();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    let said = format!(
        "the server at 127.0.0.1:{port} does not answer (connection refused) — start it, or \
         choose another model (mnemo config)"
    );
    assert_eq!(stderr.matches(&said).count(), 1, "{stderr}");
    assert!(!stderr.contains("every model failed"), "{stderr}");
    assert!(!stderr.contains("attempt 2"), "retried: {stderr}");
    assert!(took < Duration::from_secs(4), "took {took:?}: {stderr}");
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn doctor_checks_the_server_the_flags_name() -> common::TestResult {
    let dir = tempfile::tempdir()?;
    let server = TestServer::start(vec![Reply::json(200, r#"{"data":[{"id":"m"}]}"#)]).await?;
    let args = flags(&format!("{}/v1", server.base_url));
    let args: Vec<&str> = args.iter().map(String::as_str).chain(["doctor"]).collect();
    let out = mnemo(dir.path(), &args).await?;
    let stdout = String::from_utf8_lossy(&out.stdout);
    let live = server.base_url.trim_start_matches("http://");
    assert!(
        stdout.contains("✓ the model openai:local-coder (from the command line) needs no key"),
        "{stdout}"
    );
    assert!(
        stdout.contains(&format!("✓ the server at {live} answers")),
        "{stdout}"
    );
    let request = server.only_request();
    assert_eq!(request.path, "/v1/models");
    assert_eq!(request.header("authorization"), None);

    let port = closed_port()?;
    let args = flags(&format!("http://127.0.0.1:{port}/v1"));
    let args: Vec<&str> = args.iter().map(String::as_str).chain(["doctor"]).collect();
    let out = mnemo(dir.path(), &args).await?;
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{stdout}");
    assert!(
        stdout.contains(&format!(
            "✗ the server at 127.0.0.1:{port} does not answer (connection refused): start it"
        )),
        "{stdout}"
    );
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn config_names_the_file_to_create_and_checks_the_chosen_server() -> common::TestResult {
    let dir = tempfile::tempdir()?;
    let server = TestServer::start(vec![Reply::json(401, r#"{"error":"no key"}"#)]).await?;
    let args = flags(&format!("{}/v1", server.base_url));
    let args: Vec<&str> = args.iter().map(String::as_str).chain(["config"]).collect();
    let out = mnemo(dir.path(), &args).await?;
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{stdout}");
    let file = dir.path().join("cfg").join("config.toml");
    assert!(
        stdout.contains(&format!(
            "# no user config file yet: create {}",
            file.display()
        )),
        "{stdout}"
    );
    assert!(
        stdout.contains("# the chosen model (from the command line): openai:local-coder"),
        "{stdout}"
    );
    // An answer that refuses is still a server that answers.
    let live = server.base_url.trim_start_matches("http://");
    assert!(
        stdout.contains(&format!("#   the server at {live} answers")),
        "{stdout}"
    );

    let port = closed_port()?;
    let args = flags(&format!("http://127.0.0.1:{port}/v1"));
    let args: Vec<&str> = args.iter().map(String::as_str).chain(["config"]).collect();
    let out = mnemo(dir.path(), &args).await?;
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains(&format!(
            "#   the server at 127.0.0.1:{port} does not answer (connection refused)"
        )),
        "{stdout}"
    );

    std::fs::create_dir_all(dir.path().join("cfg"))?;
    std::fs::write(&file, "")?;
    let out = mnemo(dir.path(), &["config"]).await?;
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(!stdout.contains("no user config file yet"), "{stdout}");
    Ok(())
}
