//! `web_search` against in-test services speaking SearXNG's JSON API and the Brave Search
//! API, through `mnemo run`: offered only when `[web]` names a service, the query reaches it,
//! the results come back numbered for `web_fetch`.

use crate::cli_support;

use std::io::{BufRead, BufReader, Write};
use std::net::TcpListener;
use std::sync::{Arc, Mutex};

use cli_support::{Workspace, text};
use serde_json::json;

type TestResult = Result<(), Box<dyn std::error::Error>>;

/// A service answering every request with `body`; it records each request's head.
fn service(body: String) -> std::io::Result<(u16, Arc<Mutex<Vec<String>>>)> {
    let listener = TcpListener::bind("127.0.0.1:0")?;
    let port = listener.local_addr()?.port();
    let heads = Arc::new(Mutex::new(Vec::new()));
    let seen = heads.clone();
    std::thread::spawn(move || {
        for mut stream in listener.incoming().flatten() {
            let mut reader = BufReader::new(&stream);
            let mut head = String::new();
            let mut line = String::new();
            while reader.read_line(&mut line).is_ok_and(|n| n > 2) {
                head.push_str(&line);
                line.clear();
            }
            if let Ok(mut heads) = seen.lock() {
                heads.push(head);
            }
            let _ = write!(
                stream,
                "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\
                 Connection: close\r\n\r\n{body}",
                body.len()
            );
        }
    });
    Ok((port, heads))
}

fn search_run(ws: &Workspace, env: &[(&str, &str)]) -> String {
    let model = ws.script(json!({"turns": [
        {"tool_calls": [{"name": "web_search", "arguments": {"query": "rust async runtime"}}]},
        {"text": "found"}
    ]}));
    let out = ws.mnemo_with(&["--model", &model, "run", "--json", "search"], None, env);
    assert!(out.status.success(), "{}", text(&out.stderr));
    text(&out.stdout)
}

#[test]
fn searxng_results_come_back_numbered_and_the_query_reaches_it() -> TestResult {
    let answer = json!({"results": [
        {"title": "Tokio", "url": "https://tokio.rs/", "content": "An asynchronous runtime for Rust."},
        {"title": "async-std", "url": "https://async.rs/", "content": "Async version of std."}
    ]});
    let (port, heads) = service(answer.to_string())?;
    let ws = Workspace::new();
    std::fs::create_dir_all(ws.path().join(".cfg"))?;
    ws.write(
        ".cfg/config.toml",
        &format!("[web]\nsearxng_url = \"http://127.0.0.1:{port}/search\"\n"),
    );
    let events = search_run(&ws, &[]);
    assert!(events.contains("1. Tokio — https://tokio.rs/"), "{events}");
    assert!(
        events.contains("An asynchronous runtime for Rust."),
        "{events}"
    );
    assert!(
        events.contains("2. async-std — https://async.rs/"),
        "{events}"
    );
    let heads = heads.lock().map(|h| h.clone()).unwrap_or_default();
    assert!(
        heads[0].starts_with("GET /search?q=rust+async+runtime&format=json "),
        "{heads:?}"
    );
    Ok(())
}

#[test]
fn brave_gets_the_key_from_its_variable_and_without_any_service_there_is_no_tool() -> TestResult {
    let answer = json!({"web": {"results": [
        {"title": "Tokio", "url": "https://tokio.rs/", "description": "A runtime."}
    ]}});
    let (port, heads) = service(answer.to_string())?;
    let ws = Workspace::new();
    std::fs::create_dir_all(ws.path().join(".cfg"))?;
    ws.write(
        ".cfg/config.toml",
        &format!(
            "[web]\nbrave_key_env = \"TEST_BRAVE_KEY\"\nbrave_url = \"http://127.0.0.1:{port}/res\"\n"
        ),
    );
    let events = search_run(&ws, &[("TEST_BRAVE_KEY", "secret-key")]);
    assert!(events.contains("1. Tokio — https://tokio.rs/"), "{events}");
    let heads = heads.lock().map(|h| h.clone()).unwrap_or_default();
    assert!(
        heads[0]
            .to_ascii_lowercase()
            .contains("x-subscription-token: secret-key"),
        "{heads:?}"
    );

    // No key in the environment: the tool is not there, and the call says so.
    let events = search_run(&ws, &[]);
    assert!(!events.contains("tokio.rs"), "{events}");
    assert!(events.contains("web_search"), "{events}");
    Ok(())
}
