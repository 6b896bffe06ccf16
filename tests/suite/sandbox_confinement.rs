//! What confines a sandboxed command beyond the read-only root, checked with the real
//! bubblewrap: `.git` and `.mnemo` stay read-only inside the writable workspace, secret
//! locations are hidden even under read-only, Unix sockets are unreachable with the network
//! off, process and memory limits stop a runaway command with a clear note, and file tools never
//! follow a symlink swapped in while they work.
#![cfg(target_os = "linux")]

use crate::sandbox_support;

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use mnemo::sandbox::{Confinement, SandboxPolicy, SandboxSection};
use mnemo::tools::ToolError;
use mnemo::tools::fs_write::WriteFile;
use mnemo::tools::shell::Shell;
use sandbox_support::{Fixture, TestResult, call, failure, host_dir, run};
use serde_json::json;

fn confined_shell(
    fx: &Fixture,
    policy: SandboxPolicy,
    network: bool,
    section: SandboxSection,
) -> Result<Shell, String> {
    let confinement = Arc::new(Confinement::from_section(&section));
    Ok(Shell::in_sandbox(
        fx.sandbox(policy, network)?.confined(confinement),
    ))
}

#[tokio::test]
async fn git_and_mnemo_stay_read_only_inside_a_writable_workspace() -> TestResult {
    let fx = Fixture::new()?;
    std::fs::create_dir_all(fx.ws.join(".git/hooks"))?;
    std::fs::write(fx.ws.join(".git/config"), "[core]\n")?;
    std::fs::create_dir_all(fx.ws.join(".mnemo"))?;
    std::fs::write(fx.ws.join(".mnemo/config.toml"), "")?;
    let shell = fx.shell(SandboxPolicy::WorkspaceWrite, false)?;
    for command in [
        "printf '#!/bin/sh\\ncurl evil' > .git/hooks/pre-commit",
        "printf '[core]\\nhooksPath = /tmp\\n' >> .git/config",
        "echo 'approval = \"full\"' > .mnemo/config.toml",
        "rm -rf .git",
        "mv .mnemo elsewhere",
    ] {
        let message = failure(run(&shell, &fx.ws, command).await);
        assert!(
            message.contains("Read-only file system")
                || message.contains("Device or resource busy"),
            "{command}: {message}"
        );
    }
    assert!(!fx.ws.join(".git/hooks/pre-commit").exists());
    assert_eq!(
        std::fs::read_to_string(fx.ws.join(".git/config"))?,
        "[core]\n"
    );
    assert_eq!(
        std::fs::read_to_string(fx.ws.join(".mnemo/config.toml"))?,
        ""
    );
    assert_eq!(
        run(&shell, &fx.ws, "cat .git/config && echo ok > src.txt").await?,
        "[core]\nexit code: 0"
    );
    assert!(fx.ws.join("src.txt").exists());
    Ok(())
}

#[tokio::test]
async fn secret_locations_are_hidden_even_read_only_and_inside_the_workspace() -> TestResult {
    let fx = Fixture::new()?;
    let host = host_dir()?;
    let ssh = host.path().join(".ssh");
    std::fs::create_dir(&ssh)?;
    std::fs::write(ssh.join("id_ed25519"), "PRIVATE KEY")?;
    let netrc = host.path().join(".netrc");
    std::fs::write(&netrc, "machine x password hunter2")?;
    std::fs::create_dir(fx.ws.join("keys"))?;
    std::fs::write(fx.ws.join("keys/deploy.pem"), "DEPLOY KEY")?;
    let section = SandboxSection {
        deny_read: [&ssh, &netrc, &fx.ws.join("keys")]
            .iter()
            .map(|p| p.display().to_string())
            .collect(),
        ..SandboxSection::default()
    };
    for policy in [SandboxPolicy::ReadOnly, SandboxPolicy::WorkspaceWrite] {
        let shell = confined_shell(&fx, policy, false, section.clone())?;
        let command = format!(
            "cat {}/id_ed25519 {} keys/deploy.pem; ls -A {} keys",
            ssh.display(),
            netrc.display(),
            ssh.display()
        );
        let out = match run(&shell, &fx.ws, &command).await {
            Ok(out) => out,
            Err(e) => e.to_string(),
        };
        for secret in [
            "PRIVATE KEY",
            "hunter2",
            "DEPLOY KEY",
            "id_ed25519\n",
            "deploy.pem\n",
        ] {
            assert!(!out.contains(secret), "{policy}: {secret} visible: {out}");
        }
    }
    assert_eq!(
        std::fs::read_to_string(ssh.join("id_ed25519"))?,
        "PRIVATE KEY"
    );
    Ok(())
}

#[tokio::test]
async fn unix_sockets_are_unreachable_with_the_network_off() -> TestResult {
    let fx = Fixture::new()?;
    let host = host_dir()?;
    let path = host.path().join("daemon.sock");
    let listener = std::os::unix::net::UnixListener::bind(&path)?;
    listener.set_nonblocking(true)?;
    let connect = format!(
        "python3 -c 'import socket,sys; s=socket.socket(socket.AF_UNIX); s.connect(sys.argv[1]); \
         print(\"connected\")' {}",
        path.display()
    );
    let offline = fx.shell(SandboxPolicy::WorkspaceWrite, false)?;
    let message = failure(run(&offline, &fx.ws, &connect).await);
    assert!(message.contains("Operation not permitted"), "{message}");
    assert!(listener.accept().is_err(), "the daemon saw a connection");
    let online = fx.shell(SandboxPolicy::WorkspaceWrite, true)?;
    assert_eq!(
        run(&online, &fx.ws, &connect).await?,
        "connected\nexit code: 0"
    );
    // socketpair reaches nobody else and keeps working offline.
    let pair =
        "python3 -c 'import socket; a, b = socket.socketpair(); a.send(b\"x\"); print(b.recv(1))'";
    assert_eq!(run(&offline, &fx.ws, pair).await?, "b'x'\nexit code: 0");
    Ok(())
}

#[tokio::test]
async fn too_many_processes_stop_with_a_note_that_names_the_limit() -> TestResult {
    let fx = Fixture::new()?;
    let section = SandboxSection {
        max_processes: 40,
        ..SandboxSection::default()
    };
    let shell = confined_shell(&fx, SandboxPolicy::WorkspaceWrite, false, section)?;
    let input = json!({
        "command": "for i in $(seq 1 200); do sleep 30 & done; wait",
        "timeout_secs": 3
    });
    let result = call(&shell, &fx.ws, input).await;
    let Err(ToolError::TimedOut { output, .. }) = result else {
        panic!("expected the command to be stopped, got {result:?}");
    };
    assert!(output.contains("fork"), "{output}");
    assert!(
        output.contains("[limit]") && output.contains("40 processes"),
        "{output}"
    );
    Ok(())
}

#[tokio::test]
async fn running_out_of_memory_is_a_clear_error() -> TestResult {
    let fx = Fixture::new()?;
    let section = SandboxSection {
        max_memory_mb: 64,
        ..SandboxSection::default()
    };
    let shell = confined_shell(&fx, SandboxPolicy::WorkspaceWrite, false, section)?;
    let message = failure(
        run(
            &shell,
            &fx.ws,
            "python3 -c 'x = bytearray(512 * 1024 * 1024)'",
        )
        .await,
    );
    assert!(
        message.contains("[limit]") && message.contains("64 MiB"),
        "{message}"
    );
    Ok(())
}

/// Until `stop`, swaps `dir` between a real directory, nothing (both pass a check of the path)
/// and a symlink to `outside` (which a write by path would follow).
fn swap_until(dir: PathBuf, outside: PathBuf, stop: Arc<AtomicBool>) {
    while !stop.load(Ordering::Relaxed) {
        let _ = std::fs::create_dir(&dir);
        let _ = std::fs::remove_dir_all(&dir);
        for _ in 0..10 {
            let _ = std::os::unix::fs::symlink(&outside, &dir);
            let _ = std::fs::remove_file(&dir);
        }
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_directory_swapped_for_a_symlink_never_sends_a_write_outside() -> TestResult {
    let fx = Fixture::new()?;
    let outside = fx.dir.path().join("outside");
    std::fs::create_dir(&outside)?;
    let stop = Arc::new(AtomicBool::new(false));
    let swapper = std::thread::spawn({
        let (dir, outside, stop) = (fx.ws.join("d"), outside.clone(), stop.clone());
        move || swap_until(dir, outside, stop)
    });
    let mut written = 0;
    for i in 0..300 {
        let input = json!({"path": "d/f", "content": format!("write {i}\n")});
        if call(&WriteFile, &fx.ws, input).await.is_ok() {
            written += 1;
        }
    }
    stop.store(true, Ordering::Relaxed);
    let _ = swapper.join();
    let landed: Vec<_> = std::fs::read_dir(&outside)?
        .flatten()
        .map(|e| e.path())
        .collect();
    assert!(landed.is_empty(), "writes landed outside: {landed:?}");
    assert!(written > 0, "no write went through at all");
    Ok(())
}

#[tokio::test]
async fn setsid_children_of_an_unsandboxed_command_die_at_the_timeout() -> TestResult {
    let fx = Fixture::new()?;
    let shell = fx.shell(SandboxPolicy::FullAccess, false)?;
    let detached = sandbox_support::marker(40);
    let orphaned = sandbox_support::marker(41);
    let command =
        format!("setsid sleep {detached} & (setsid sleep {orphaned} &); echo started; sleep 60");
    let input = json!({"command": command, "timeout_secs": 1});
    let result = call(&shell, &fx.ws, input).await;
    assert!(
        matches!(result, Err(ToolError::TimedOut { .. })),
        "{result:?}"
    );
    assert!(
        sandbox_support::wait_until_gone(&detached).await,
        "setsid child survived"
    );
    assert!(
        sandbox_support::wait_until_gone(&orphaned).await,
        "orphan survived"
    );
    Ok(())
}
