//! End to end: images attached in the real `mnemo` TUI in a pseudo-terminal, against an
//! in-test OpenAI-compatible server. `@shot.png` typed in a message and a path a terminal pastes
//! when a file is dropped on it (bracketed paste, quoted, from outside the workspace) reach the
//! model as image parts; the transcript names them, and a named file that is not an image is
//! said and not sent.

use crate::common;
use crate::pty_support;

use common::{Reply, TestServer, openai_text};
use pty_support::{Terminal, TestResult};
use serde_json::Value;

fn png(path: &std::path::Path, width: u32, height: u32) -> TestResult {
    image::DynamicImage::new_rgb8(width, height).save_with_format(path, image::ImageFormat::Png)?;
    Ok(())
}

/// The image parts of the last user message of a Chat Completions request.
fn image_parts(body: &Value) -> Vec<String> {
    let messages = body["messages"].as_array().cloned().unwrap_or_default();
    let Some(user) = messages.iter().rev().find(|m| m["role"] == "user") else {
        return Vec::new();
    };
    user["content"]
        .as_array()
        .map(|parts| {
            parts
                .iter()
                .filter(|p| p["type"] == "image_url")
                .filter_map(|p| p["image_url"]["url"].as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_named_and_a_dropped_image_reach_the_model_and_a_bad_one_is_said() -> TestResult {
    let server = TestServer::start(vec![
        Reply::sse(&openai_text("A small black picture.")),
        Reply::sse(&openai_text("Another one.")),
    ])
    .await?;
    let dir = tempfile::tempdir()?;
    let elsewhere = tempfile::tempdir()?;
    png(&dir.path().join("shot.png"), 30, 20)?;
    let dropped = elsewhere.path().join("screen shot.png");
    png(&dropped, 12, 8)?;
    std::fs::write(dir.path().join("fake.png"), "not a picture")?;
    let url = format!("{}/v1", server.base_url);
    let path = dir.path().to_path_buf();
    let session = move || -> TestResult {
        let args = [
            "--provider",
            "openai",
            "--base-url",
            &url,
            "--model",
            "gpt-4o",
        ];
        let mut term = Terminal::spawn(&args, &path)?;
        term.wait_for("● idle")?;
        term.send("what is in @shot.png and @fake.png?\r")?;
        term.wait_for("[image: shot.png 30×20]")?;
        term.wait_for("fake.png: not attached")?;
        term.wait_for("A small black picture.")?;
        term.wait_for("● idle")?;
        let pasted = format!("\x1b[200~'{}'\x1b[201~ and this one?\r", dropped.display());
        term.send(&pasted)?;
        term.wait_for("[image: screen shot.png 12×8]")?;
        term.wait_for("Another one.")?;
        term.wait_for("● idle")?;
        term.quit()
    };
    tokio::task::spawn_blocking(move || session().map_err(|e| e.to_string())).await??;
    let requests = server.requests();
    assert_eq!(requests.len(), 2);
    let first = image_parts(&requests[0].json()?);
    assert_eq!(first.len(), 1, "only the real image goes: {first:?}");
    assert!(first[0].starts_with("data:image/png;base64,"));
    let second = image_parts(&requests[1].json()?);
    assert_eq!(second.len(), 1, "{second:?}");
    assert_ne!(first, second);
    Ok(())
}
