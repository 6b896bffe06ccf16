//! A first run with no usable model, in a pseudo-terminal as a person meets it: the set-up
//! panel offers a local OpenAI-compatible server, checks that it answers, writes the choice to
//! the user config file and the session goes on with it, without a restart.

use crate::common;
use crate::pty_support;

use common::{Reply, TestServer};
use pty_support::{Terminal, TestResult};

/// No key of any configured provider, and no model chosen by the environment.
const NO_KEYS: [(&str, &str); 6] = [
    ("ANTHROPIC_API_KEY", ""),
    ("OPENAI_API_KEY", ""),
    ("DEEPSEEK_API_KEY", ""),
    ("MOONSHOT_API_KEY", ""),
    ("DASHSCOPE_API_KEY", ""),
    ("MNEMO_MODEL", ""),
];

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_first_run_sets_up_a_local_server_and_goes_on_with_it() -> TestResult {
    let sse = std::fs::read_to_string("tests/fixtures/openai/text.sse")?;
    let server = TestServer::start(vec![
        Reply::json(200, r#"{"object":"list","data":[{"id":"test-model"}]}"#),
        Reply::sse(&sse),
    ])
    .await?;
    let dir = tempfile::tempdir()?;
    // A home of its own, beside the workspace (a workspace holding it is asked about).
    let home_dir = tempfile::tempdir()?;
    let home = home_dir.path().display().to_string();
    let xdg = home_dir.path().join(".config").display().to_string();
    let mut env = NO_KEYS.to_vec();
    env.extend([("HOME", home.as_str()), ("XDG_CONFIG_HOME", xdg.as_str())]);
    let mut term = Terminal::spawn_with(&[], dir.path(), &env)?;
    term.wait_for("Set up a model")?;
    term.wait_for("1  a local server")?;
    term.send("1\r")?;
    term.wait_for("Type its URL and press Enter")?;
    term.wait_for("http://127.0.0.1:8080/v1")?;

    // A server that is not running is said at once, and the URL can be typed again.
    let closed = std::net::TcpListener::bind("127.0.0.1:0")?
        .local_addr()?
        .port();
    term.send(&format!("\x15http://127.0.0.1:{closed}/v1\r"))?;
    term.wait_for(&format!(
        "the server at 127.0.0.1:{closed} does not answer (connection refused)"
    ))?;

    let live = server.base_url.trim_start_matches("http://").to_string();
    term.send(&format!("\x15{}/v1\r", server.base_url))?;
    term.wait_for(&format!("the server at {live} answers"))?;
    term.wait_for("it serves: test-model")?;
    term.send("\r")?;
    term.wait_for("Saved [models.local] (test-model at")?;
    term.wait_for("● idle")?;

    let file = dir.path().join("config").join("config.toml");
    let written = std::fs::read_to_string(&file)?;
    assert!(written.contains("default_model = \"local\""), "{written}");
    assert!(written.contains("[models.local]"), "{written}");
    assert!(
        written.contains(&format!("base_url = \"{}/v1\"", server.base_url)),
        "{written}"
    );
    assert!(written.contains("model = \"test-model\""), "{written}");

    term.send("is the build green\r")?;
    term.wait_for("The build passes: all 42 tests")?;
    term.quit()?;
    let requests = server.requests();
    let paths: Vec<&str> = requests.iter().map(|r| r.path.as_str()).collect();
    assert_eq!(paths, ["/v1/models", "/v1/chat/completions"]);
    assert_eq!(requests[1].json()?["model"], "test-model");
    Ok(())
}

#[test]
fn a_local_server_that_is_down_is_said_once_at_once() -> TestResult {
    let dir = tempfile::tempdir()?;
    let closed = std::net::TcpListener::bind("127.0.0.1:0")?
        .local_addr()?
        .port();
    let url = format!("http://127.0.0.1:{closed}/v1");
    let args = ["--provider", "openai", "--base-url", &url, "--model", "m"];
    let mut term = Terminal::spawn_with(&args, dir.path(), &NO_KEYS)?;
    term.wait_for("● idle")?;
    let sent = std::time::Instant::now();
    term.send("hello\r")?;
    let said = format!("the server at 127.0.0.1:{closed} does not answer (connection refused)");
    term.wait_for(&said)?;
    term.wait_for("● idle")?;
    assert!(sent.elapsed() < std::time::Duration::from_secs(4));
    let screen = term.all_rows().join("\n");
    assert_eq!(screen.matches(&said).count(), 1, "{screen}");
    assert!(screen.contains("start it, or choose another"), "{screen}");
    assert!(!screen.contains("every model failed"), "{screen}");
    assert!(!screen.contains("attempt 2"), "{screen}");
    term.quit()
}

#[test]
fn a_model_whose_key_is_set_is_offered_and_becomes_the_default() -> TestResult {
    let dir = tempfile::tempdir()?;
    let config = dir.path().join("config");
    std::fs::create_dir_all(&config)?;
    let before = "# mine\ndefault_model = \"keyed\"\n[models.keyed]\nprovider = \"openai\"\n\
                  model = \"m\"\nbase_url = \"https://api.example.com/v1\"\n\
                  api_key_env = \"MNEMO_TEST_NO_SUCH_KEY\"\n";
    std::fs::write(config.join("config.toml"), before)?;
    let mut env = NO_KEYS.to_vec();
    env.push(("OPENAI_API_KEY", "sk-test-not-real"));
    let mut term = Terminal::spawn_with(&[], dir.path(), &env)?;
    term.wait_for("export MNEMO_TEST_NO_SUCH_KEY=")?;
    term.wait_for("1  gpt · its key is in OPENAI_API_KEY")?;
    term.wait_for("3  a local server")?;
    term.send("1\r")?;
    term.wait_for("Saved default_model = \"gpt\"")?;
    term.wait_for("● idle")?;
    term.quit()?;
    let written = std::fs::read_to_string(config.join("config.toml"))?;
    assert!(written.starts_with("# mine\n"), "{written}");
    assert!(written.contains("default_model = \"gpt\""), "{written}");
    assert!(written.contains("[models.keyed]"), "{written}");
    assert!(!written.contains("sk-test-not-real"), "{written}");
    Ok(())
}
