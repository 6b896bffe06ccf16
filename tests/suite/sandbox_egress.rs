//! A network that opens per domain, with the real bubblewrap: a sandboxed command reaches a
//! listed host name through mnemo's proxy (plain HTTP and CONNECT), while another name, the
//! same server by its address, and a connection that skips the proxy reach nothing.
#![cfg(target_os = "linux")]

use std::io::{BufRead, BufReader, Write};
use std::net::TcpListener;
use std::sync::Arc;

use mnemo::sandbox::domains::{DomainList, DomainPattern};
use mnemo::sandbox::{ApprovalMode, Confinement, SandboxPolicy, SandboxSection};
use mnemo::tools::Approvals;
use mnemo::tools::shell::Shell;
use serde_json::json;

use crate::cli_support;
use crate::sandbox_support;

use cli_support::{Workspace, text};
use sandbox_support::{Fixture, TestResult, context_with};

/// A server on this machine's loopback that answers every request with `body`.
fn serve(body: &'static str) -> std::io::Result<u16> {
    let listener = TcpListener::bind("127.0.0.1:0")?;
    let port = listener.local_addr()?.port();
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            let mut reader = BufReader::new(&stream);
            let mut line = String::new();
            while reader.read_line(&mut line).is_ok_and(|n| n > 0) && line != "\r\n" {
                line.clear();
            }
            let mut stream = &stream;
            let _ = write!(
                stream,
                "HTTP/1.1 200 OK\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                body.len()
            );
        }
    });
    Ok(port)
}

fn session(fx: &Fixture, domains: &[&str]) -> Result<(Shell, Arc<Approvals>), String> {
    mnemo::sandbox::egress::use_shim_program(env!("CARGO_BIN_EXE_mnemo").into());
    let patterns = domains
        .iter()
        .map(|d| DomainPattern::parse(d).map_err(|e| e.to_string()))
        .collect::<Result<Vec<_>, _>>()?;
    let section = SandboxSection {
        allow_domains: DomainList::new(patterns),
        ..SandboxSection::default()
    };
    let confinement = Arc::new(Confinement::from_section(&section));
    let sandbox = fx.sandbox(SandboxPolicy::WorkspaceWrite, false)?;
    let approvals = Arc::new(Approvals::confined(
        *sandbox.config(),
        ApprovalMode::Auto,
        confinement.clone(),
    ));
    Ok((Shell::in_sandbox(sandbox.confined(confinement)), approvals))
}

async fn shell_output(
    fx: &Fixture,
    shell: &Shell,
    approvals: &Arc<Approvals>,
    command: &str,
) -> String {
    let ctx = context_with(&fx.ws, "egress-test", approvals.clone());
    match mnemo::tools::Tool::call(shell, json!({ "command": command }), &ctx).await {
        Ok(out) => out,
        Err(e) => e.to_string(),
    }
}

#[tokio::test]
async fn a_listed_name_is_reached_through_the_proxy_and_nothing_else_is() -> TestResult {
    let port = serve("hello from the listed host")?;
    let fx = Fixture::new()?;
    let (shell, approvals) = session(&fx, &["localhost"])?;
    let curl = "curl -sS --max-time 20";

    let plain = shell_output(
        &fx,
        &shell,
        &approvals,
        &format!("{curl} http://localhost:{port}/"),
    )
    .await;
    assert!(plain.contains("hello from the listed host"), "{plain}");

    let tunnel = format!("{curl} --proxytunnel http://localhost:{port}/");
    let tunnelled = shell_output(&fx, &shell, &approvals, &tunnel).await;
    assert!(
        tunnelled.contains("hello from the listed host"),
        "{tunnelled}"
    );

    let by_address =
        format!("{curl} --noproxy '' -x http://127.0.0.1:3128 http://127.0.0.1:{port}/");
    let refused = shell_output(&fx, &shell, &approvals, &by_address).await;
    assert!(!refused.contains("hello from"), "{refused}");
    assert!(
        refused.contains("127.0.0.1 is not in [sandbox] allow_domains"),
        "{refused}"
    );

    let other = format!("{curl} --proxytunnel https://example.com/");
    let refused = shell_output(&fx, &shell, &approvals, &other).await;
    assert!(refused.contains("403"), "{refused}");

    let bypass = format!("{curl} --noproxy '*' http://localhost:{port}/");
    let bypassed = shell_output(&fx, &shell, &approvals, &bypass).await;
    assert!(!bypassed.contains("hello from"), "{bypassed}");
    assert!(bypassed.contains("exit code: 7"), "{bypassed}");
    assert!(
        bypassed.contains("only these domains: localhost"),
        "{bypassed}"
    );

    // The socket the listener crossed is closed before the command runs.
    let fds = "ls -l /proc/self/fd/ | grep -c socket: || true";
    let sockets = shell_output(&fx, &shell, &approvals, fds).await;
    assert!(sockets.starts_with("0\n"), "{sockets}");
    Ok(())
}

#[tokio::test]
async fn without_allowed_domains_commands_get_no_proxy() -> TestResult {
    let fx = Fixture::new()?;
    let (shell, approvals) = session(&fx, &[])?;
    let env = shell_output(&fx, &shell, &approvals, "env | grep -ci proxy || true").await;
    assert!(env.starts_with("0\n"), "{env}");
    Ok(())
}

#[tokio::test]
async fn a_domain_allowed_for_the_session_passes_the_gate_but_not_to_private_addresses()
-> TestResult {
    let port = serve("hello after the grant")?;
    let fx = Fixture::new()?;
    let (shell, approvals) = session(&fx, &["crates.io"])?;
    // `localhost` bypasses the proxy unless listed; name the proxy to ask it all the same.
    let command = format!(
        "curl -sS --max-time 20 --noproxy '' -x http://127.0.0.1:3128 http://localhost:{port}/"
    );
    let before = shell_output(&fx, &shell, &approvals, &command).await;
    assert!(
        before.contains("localhost is not in [sandbox] allow_domains"),
        "{before}"
    );
    approvals.allow_domain(DomainPattern::parse("localhost")?);
    let after = shell_output(&fx, &shell, &approvals, &command).await;
    // The grant lets the name through; its loopback address still needs the name itself in
    // the configured list, so a grant never opens this machine's own services.
    assert!(!after.contains("hello after the grant"), "{after}");
    assert!(after.contains("localhost resolves to 127.0.0.1"), "{after}");
    Ok(())
}

#[test]
fn allow_domains_from_the_users_config_reach_a_run_s_shell_commands() -> TestResult {
    let port = serve("hello through mnemo run")?;
    let ws = Workspace::new();
    std::fs::create_dir_all(ws.path().join(".cfg"))?;
    ws.write(
        ".cfg/config.toml",
        "[sandbox]\nallow_domains = [\"localhost\"]\n",
    );
    let command = format!(
        "curl -sS --max-time 20 http://localhost:{port}/; echo; curl -sS --max-time 20 \
         http://blocked.invalid/"
    );
    let model = ws.script(json!({"turns": [
        {"tool_calls": [{"name": "shell", "arguments": {"command": command}}]},
        {"text": "fetched"}
    ]}));
    let out = ws.mnemo(&["--model", &model, "run", "--json", "fetch it"], None);
    let stdout = text(&out.stdout);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(stdout.contains("hello through mnemo run"), "{stdout}");
    assert!(
        stdout.contains("blocked.invalid is not in [sandbox] allow_domains"),
        "{stdout}"
    );
    Ok(())
}
