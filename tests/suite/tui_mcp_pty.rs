//! MCP servers in the TUI, as a person sees them: the screen opens while servers start, one
//! that fails is noticed at once, their tools arriving show as one notice, and `/mcp` lists
//! each server's state.

use crate::mcp_support;
use crate::pty_support;

use pty_support::{Terminal, TestResult};

#[test]
fn mcp_shows_each_servers_state_and_the_tools_arriving() -> TestResult {
    let dir = tempfile::tempdir()?;
    let root = dir.path().canonicalize()?;
    let script = root.join("script.json");
    std::fs::write(&script, r#"{"turns": [{"text": "hello"}]}"#)?;
    let server = mcp_support::script("server-filesystem")?;
    std::fs::create_dir(root.join("config"))?;
    std::fs::write(
        root.join("config/config.toml"),
        format!(
            "[mcp_servers.files]\ncommand = \"node\"\nargs = [{:?}, {:?}]\n\
             startup_timeout_secs = 60\n\n[mcp_servers.missing]\n\
             command = \"/nonexistent/mcp-server\"\n",
            server.display().to_string(),
            root.display().to_string()
        ),
    )?;
    let model = format!("scripted:{}", script.display());
    let mut term = Terminal::spawn(&["--model", &model], &root)?;
    term.wait_for("● idle")?;
    // A server that cannot start is said at once, with why.
    term.wait_for("MCP server missing failed: cannot start `/nonexistent/mcp-server`")?;
    // Between turns, the server's tools arriving are one line.
    term.wait_for("tools of MCP server files")?;
    term.send("/mcp\r")?;
    term.wait_for("MCP servers:")?;
    let screen = term.contents();
    let line = |name: &str| {
        screen
            .lines()
            .find(|l| l.trim_start().starts_with(name))
            .unwrap_or_default()
            .to_string()
    };
    assert!(line("files").contains("ready with "), "{screen}");
    assert!(line("missing").contains("failed:"), "{screen}");
    term.quit()?;
    Ok(())
}
