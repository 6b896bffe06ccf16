//! `/model` in the terminal, in-process: the same session goes on with the other model, whose
//! first request holds the conversation so far, and the status line names it.

use crate::common;
use crate::pty_support;

use common::{Reply, TestServer, openai_text};
use pty_support::{Terminal, TestResult};

#[test]
fn model_switch_keeps_the_session_and_its_history() -> TestResult {
    let runtime = tokio::runtime::Runtime::new()?;
    let second = runtime.block_on(TestServer::start(vec![Reply::sse(&openai_text(
        "from the second model",
    ))]))?;
    let dir = tempfile::tempdir()?;
    let script = dir.path().join("script.json");
    std::fs::write(&script, r#"{"turns": [{"text": "from the first model"}]}"#)?;
    std::fs::create_dir_all(dir.path().join("config"))?;
    std::fs::write(
        dir.path().join("config/config.toml"),
        format!("[models.gpt]\nbase_url = \"{}/v1\"\n", second.base_url),
    )?;
    let model = format!("scripted:{}", script.display());
    let mut term = Terminal::spawn(&["--model", &model], dir.path())?;
    term.wait_for("● idle")?;
    term.send("remember the word walrus\r")?;
    term.wait_for("from the first model")?;
    term.wait_for("● idle")?;
    term.send("/model gpt\r")?;
    term.wait_for("Now using gpt")?;
    term.send("which word?\r")?;
    term.wait_for("from the second model")?;
    term.wait_for("● idle")?;
    let rows = term.all_rows();
    let status = rows.iter().rfind(|row| row.contains("● idle"));
    assert!(status.is_some_and(|row| row.contains("gpt")), "{rows:#?}");
    // Still the first session: nothing was restarted or resumed.
    assert!(
        !term.contents().contains("Resumed session"),
        "{}",
        term.contents()
    );

    let asked = second.only_request().json()?.to_string();
    assert!(asked.contains("remember the word walrus"), "{asked}");
    assert!(asked.contains("from the first model"), "{asked}");
    assert!(asked.contains("which word?"), "{asked}");
    term.quit()?;
    Ok(())
}
