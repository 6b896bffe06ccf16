//! End to end: the real `mnemo` TUI in a pseudo-terminal against an in-test OpenAI-compatible
//! server whose first stream breaks mid-answer. The retried answer is shown once.

use crate::common;
use crate::pty_support;

use pty_support::{Terminal, TestResult};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stream_cut_and_retried_shows_the_reply_once() -> TestResult {
    let server = common::flaky_server().await?;
    let dir = tempfile::tempdir()?;
    std::fs::create_dir_all(dir.path().join("config"))?;
    std::fs::write(
        dir.path().join("config/config.toml"),
        "[retry]\nbase_delay_secs = 1.0\nmax_delay_secs = 1.5\n",
    )?;
    let url = format!("{}/v1", server.base_url);
    let path = dir.path().to_path_buf();
    let session = move || -> TestResult {
        let args = [
            "--provider",
            "openai",
            "--base-url",
            &url,
            "--model",
            "local",
        ];
        let mut term = Terminal::spawn(&args, &path)?;
        term.wait_for("● idle")?;
        term.send("say hello\r")?;
        term.wait_for("local: ")?;
        term.wait_for(common::FLAKY_ANSWER)?;
        term.wait_for("● idle")?;
        let screen = term.contents();
        assert_eq!(
            screen.matches("Hello from").count(),
            1,
            "the broken attempt's text stayed:\n{screen}"
        );
        term.quit()
    };
    tokio::task::spawn_blocking(move || session().map_err(|e| e.to_string())).await??;
    assert_eq!(server.requests().len(), 2, "the cut stream was asked again");
    Ok(())
}
