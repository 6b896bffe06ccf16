//! MCP servers through the real binary: `mnemo run` starts them and denies a write-like tool
//! that would need a question, and `mnemo mcp list` shows each server's state, broken,
//! missing and untrusted entries included.

use crate::cli_support;
use crate::mcp_support;

use cli_support::{Workspace, text};
use mcp_support::script;
use serde_json::json;

/// A config with server-filesystem allowed to see the workspace, plus `extra` TOML.
fn configure(ws: &Workspace, extra: &str) -> Result<(), String> {
    let server = script("server-filesystem")?;
    let config = format!(
        "[mcp_servers.filesystem]\ncommand = \"node\"\nargs = [{:?}, {:?}]\n\
         startup_timeout_secs = 60\n{extra}",
        server.display().to_string(),
        ws.path()
            .canonicalize()
            .map_err(|e| e.to_string())?
            .display()
            .to_string(),
    );
    std::fs::create_dir_all(ws.path().join(".cfg")).map_err(|e| e.to_string())?;
    std::fs::write(ws.path().join(".cfg/config.toml"), config).map_err(|e| e.to_string())
}

#[test]
fn headless_run_denies_a_write_like_mcp_tool_and_runs_a_read_only_one() -> Result<(), String> {
    let ws = Workspace::new();
    configure(&ws, "")?;
    let root = ws.path().canonicalize().map_err(|e| e.to_string())?;
    let target = root.join("from-mcp.txt");
    ws.write("seen.txt", "listed by MCP");
    let model = ws.script(json!({"turns": [
        {"tool_calls": [{"name": "mcp__filesystem__write_file",
                         "arguments": {"path": target, "content": "x"}}]},
        {"tool_calls": [{"name": "mcp__filesystem__list_directory",
                         "arguments": {"path": root}}]},
        {"text": "could not write"}
    ]}));
    let out = ws.mnemo(
        &["--approval", "ask", "--model", &model, "run", "write"],
        None,
    );
    let stderr = text(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(!target.exists(), "the write was not approved");
    assert!(
        stderr.contains("✗ mcp__filesystem__write_file: not run: this needs the user's approval"),
        "{stderr}"
    );
    assert!(
        !stderr.contains("✗ mcp__filesystem__list_directory"),
        "{stderr}"
    );
    // The server's stderr went to its log under the data directory.
    assert!(ws.path().join(".data/logs/mcp-filesystem.log").is_file());
    Ok(())
}

#[test]
fn mcp_list_shows_ready_broken_and_untrusted_servers() -> Result<(), String> {
    let ws = Workspace::new();
    configure(
        &ws,
        "\n[mcp_servers.broken]\ncommand = 5\n\n[mcp_servers.missing]\n\
         command = \"/nonexistent/mcp-server\"\n",
    )?;
    std::fs::create_dir_all(ws.path().join(".mnemo")).map_err(|e| e.to_string())?;
    ws.write(
        ".mnemo/config.toml",
        "[mcp_servers.local]\ncommand = \"sh\"\nargs = [\"-c\", \"touch pwned\"]\n",
    );
    let out = ws.mnemo(&["mcp", "list", "--tools"], None);
    let stdout = text(&out.stdout);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let line = |name: &str| {
        stdout
            .lines()
            .find(|l| l.starts_with(name))
            .unwrap_or_default()
            .to_string()
    };
    assert!(line("filesystem").contains("ready with "), "{stdout}");
    assert!(
        line("broken").contains("failed:") && line("broken").contains("command"),
        "{stdout}"
    );
    // A server that cannot start shows why, not a restart that is over by the time it is read.
    assert!(line("missing").contains("failed: cannot start"), "{stdout}");
    assert!(!stdout.contains("restarting"), "{stdout}");
    assert!(
        line("local").contains("not started: workspace not trusted"),
        "{stdout}"
    );
    assert!(!ws.path().join("pwned").exists());
    assert!(
        stdout
            .lines()
            .any(|l| l.contains("mcp__filesystem__read_text_file") && l.contains("read-only")),
        "{stdout}"
    );
    assert!(
        stdout
            .lines()
            .any(|l| l.contains("mcp__filesystem__write_file") && l.contains("write")),
        "{stdout}"
    );
    Ok(())
}
