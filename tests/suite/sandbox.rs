//! The sandbox end to end with the real bubblewrap: what a sandboxed command cannot write,
//! read from the environment or reach on the network, that timeouts still kill everything it
//! started, and that the file tools refuse symlink escapes and `.git/` writes. Needs `bwrap`
//! (`.ci/run` installs it); a machine without it fails here with the install command.
#![cfg(target_os = "linux")]

use std::ffi::OsString;
use std::io::ErrorKind;
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use mnemo::sandbox::{ApprovalMode, SandboxConfig, SandboxPolicy, preflight};
use mnemo::tools::fs_read::ReadFile;
use mnemo::tools::fs_write::{EditFile, WriteFile};
use mnemo::tools::shell::Shell;
use mnemo::tools::{Approvals, Tool, ToolError};
use serde_json::{Value, json};

use crate::sandbox_support;

use sandbox_support::{
    Fixture, TestResult, call, context, context_with, failure, marker, run, wait_until_gone,
};

#[tokio::test]
async fn bwrap_works_on_this_machine() -> TestResult {
    preflight(&SandboxConfig::default()).await?;
    Ok(())
}

#[tokio::test]
async fn writes_outside_the_workspace_fail_and_are_reported_as_the_sandbox() -> TestResult {
    let fx = Fixture::new()?;
    let shell = fx.shell(SandboxPolicy::WorkspaceWrite, false)?;
    let probe = format!("mnemo-sandbox-probe-{}", std::process::id());
    let message = failure(run(&shell, &fx.ws, &format!("touch /etc/{probe}")).await);
    assert!(message.contains("Read-only file system"), "{message}");
    assert!(
        message.contains("[sandbox] This failure looks like the sandbox blocked a write"),
        "{message}"
    );
    assert!(!Path::new("/etc").join(&probe).exists());
    let home = std::env::var_os("HOME").map_or_else(|| PathBuf::from("/root"), PathBuf::from);
    failure(run(&shell, &fx.ws, &format!("touch \"$HOME/{probe}\"")).await);
    assert!(!home.join(&probe).exists());
    // Next to the workspace on the host is inside the private /tmp in the sandbox.
    let outside = fx.dir.path().join("outside");
    let command = format!("echo x > '{}'", outside.display());
    let _ = run(&shell, &fx.ws, &command).await;
    assert!(!outside.exists());
    Ok(())
}

#[tokio::test]
async fn workspace_scratch_and_private_tmp_are_writable() -> TestResult {
    let fx = Fixture::new()?;
    let shell = fx.shell(SandboxPolicy::WorkspaceWrite, false)?;
    let tmp_name = format!("/tmp/mnemo-private-{}", std::process::id());
    let command =
        format!("echo a > f && echo b > \"$MNEMO_SCRATCH/g\" && echo c > {tmp_name} && pwd");
    let out = run(&shell, &fx.ws, &command).await?;
    assert_eq!(out, format!("{}\nexit code: 0", fx.ws.display()));
    assert_eq!(std::fs::read_to_string(fx.ws.join("f"))?, "a\n");
    let scratch = fx.dir.path().join("scratch/g");
    assert_eq!(std::fs::read_to_string(scratch)?, "b\n");
    assert!(
        !Path::new(&tmp_name).exists(),
        "/tmp inside is not the host's"
    );
    Ok(())
}

#[tokio::test]
async fn read_only_refuses_writes_in_the_workspace_but_keeps_scratch() -> TestResult {
    let fx = Fixture::new()?;
    let shell = fx.shell(SandboxPolicy::ReadOnly, false)?;
    let message = failure(run(&shell, &fx.ws, "echo x > f").await);
    assert!(message.contains("Read-only file system"), "{message}");
    assert!(message.contains("/tmp, not in the workspace"), "{message}");
    assert!(!fx.ws.join("f").exists());
    let out = run(&shell, &fx.ws, "echo y > \"$MNEMO_SCRATCH/n\" && ls").await?;
    assert_eq!(out, "(no output)\nexit code: 0");
    Ok(())
}

#[tokio::test]
async fn commands_see_only_allowed_variables_and_never_model_keys() -> TestResult {
    let fx = Fixture::new()?;
    let path = std::env::var_os("PATH").unwrap_or_else(|| "/usr/bin:/bin".into());
    let section = mnemo::sandbox::SandboxSection {
        env_allow: vec!["MYAPP_*".into(), "LLM_KEY".into()],
        key_vars: vec!["LLM_KEY".into()],
        ..Default::default()
    };
    let confinement = Arc::new(mnemo::sandbox::Confinement::from_section(&section));
    for policy in [SandboxPolicy::WorkspaceWrite, SandboxPolicy::FullAccess] {
        let sandbox = fx.sandbox(policy, false)?.confined(confinement.clone());
        let env: Vec<(OsString, OsString)> = vec![
            ("PATH".into(), path.clone()),
            ("LANG".into(), "C.UTF-8".into()),
            ("MYAPP_MODE".into(), "dev".into()),
            ("LLM_KEY".into(), "sk-model-key".into()),
            ("OPENAI_API_KEY".into(), "sk-fake-openai".into()),
            ("STRIPE_KEY".into(), "sk_live_fake".into()),
            ("PGPASSWORD".into(), "fake-pg".into()),
            ("DATABASE_URL".into(), "postgres://u:fake@db/x".into()),
            ("GH_PAT".into(), "ghp_fake".into()),
            ("UNLISTED".into(), "x".into()),
        ];
        let output = sandbox
            .command_with_env("env", env)
            .await?
            .command
            .output()
            .await?;
        let env = String::from_utf8_lossy(&output.stdout);
        assert!(env.contains("LANG=C.UTF-8"), "{policy}: {env}");
        assert!(env.contains("MYAPP_MODE=dev"), "{policy}: {env}");
        for secret in [
            "sk-model-key",
            "sk-fake",
            "sk_live",
            "fake-pg",
            "u:fake",
            "ghp_",
        ] {
            assert!(!env.contains(secret), "{policy}: {secret} leaked: {env}");
        }
        assert!(!env.contains("UNLISTED"), "{policy}: {env}");
    }
    Ok(())
}

#[tokio::test]
async fn loopback_listener_is_reachable_only_with_network() -> TestResult {
    let fx = Fixture::new()?;
    let listener = TcpListener::bind("127.0.0.1:0")?;
    listener.set_nonblocking(true)?;
    let port = listener.local_addr()?.port();
    let connect = format!("exec 3<>/dev/tcp/127.0.0.1/{port} && echo connected");

    let offline = fx.shell(SandboxPolicy::WorkspaceWrite, false)?;
    let message = failure(run(&offline, &fx.ws, &connect).await);
    assert!(message.contains("Connection refused"), "{message}");
    assert!(message.contains("blocked a network access"), "{message}");
    assert!(matches!(listener.accept(), Err(e) if e.kind() == ErrorKind::WouldBlock));

    let online = fx.shell(SandboxPolicy::WorkspaceWrite, true)?;
    let out = run(&online, &fx.ws, &connect).await?;
    assert_eq!(out, "connected\nexit code: 0");
    assert!(listener.accept().is_ok(), "the listener saw no connection");
    Ok(())
}

#[tokio::test]
async fn timeout_kills_grandchildren_sandboxed_or_not() -> TestResult {
    let fx = Fixture::new()?;
    for (salt, policy) in [SandboxPolicy::WorkspaceWrite, SandboxPolicy::FullAccess]
        .into_iter()
        .enumerate()
    {
        let shell = fx.shell(policy, false)?;
        let marker = marker(u32::try_from(salt)?);
        let command = format!("bash -c 'sleep {marker} & echo started; wait'");
        let input = json!({"command": command, "timeout_secs": 1});
        let result = call(&shell, &fx.ws, input).await;
        let Err(ToolError::TimedOut { after, output }) = result else {
            panic!("{policy}: expected a timeout, got {result:?}");
        };
        assert_eq!(
            (after, output.as_str()),
            (Duration::from_secs(1), "started\n")
        );
        assert!(
            wait_until_gone(&marker).await,
            "{policy}: grandchild survived"
        );
    }
    Ok(())
}

#[tokio::test]
async fn dropping_the_call_kills_everything_it_started() -> TestResult {
    let fx = Fixture::new()?;
    for (salt, policy) in [SandboxPolicy::WorkspaceWrite, SandboxPolicy::FullAccess]
        .into_iter()
        .enumerate()
    {
        let shell = fx.shell(policy, false)?;
        let marker = marker(10 + u32::try_from(salt)?);
        let command = format!("sleep {marker} & wait");
        let ctx = context(&fx.ws, "sandbox-test");
        let input = json!({ "command": command });
        let cut = tokio::time::timeout(Duration::from_millis(500), shell.call(input, &ctx)).await;
        assert!(cut.is_err(), "{policy}: the command should still run");
        assert!(wait_until_gone(&marker).await, "{policy}: child survived");
    }
    Ok(())
}

#[tokio::test]
async fn the_default_shell_is_sandboxed_with_a_scratch_directory_it_removes() -> TestResult {
    let fx = Fixture::new()?;
    let ctx = context(&fx.ws, "sandbox-default");
    let shell = Shell::default();
    let message = failure(shell.call(json!({"command": "touch /etc/x"}), &ctx).await);
    assert!(
        message.contains("workspace-write, network off"),
        "{message}"
    );
    let write = json!({"command": "echo kept > $MNEMO_SCRATCH/f && echo $MNEMO_SCRATCH"});
    let out = shell.call(write, &ctx).await?;
    let scratch = PathBuf::from(out.lines().next().unwrap_or_default());
    assert!(scratch.starts_with(std::env::temp_dir().canonicalize()?));
    let read = json!({"command": "cat $MNEMO_SCRATCH/f"});
    assert_eq!(shell.call(read, &ctx).await?, "kept\nexit code: 0");
    drop(shell);
    assert!(!scratch.exists(), "the scratch directory outlived the tool");
    Ok(())
}

#[tokio::test]
async fn bwrap_refusing_to_start_is_reported_as_the_sandbox() -> TestResult {
    let fx = Fixture::new()?;
    let shell = fx.shell(SandboxPolicy::WorkspaceWrite, false)?;
    std::fs::remove_dir(fx.dir.path().join("scratch"))?;
    let message = failure(run(&shell, &fx.ws, "true").await);
    assert!(message.contains("bwrap: "), "{message}");
    assert!(message.contains("[sandbox]"), "{message}");
    Ok(())
}

#[tokio::test]
async fn file_tools_refuse_symlinks_that_lead_outside() -> TestResult {
    let fx = Fixture::new()?;
    let outside = fx.dir.path().canonicalize()?.join("secret.txt");
    std::fs::write(&outside, "keep")?;
    std::os::unix::fs::symlink(&outside, fx.ws.join("link"))?;
    let attempts: [(&dyn Tool, Value); 3] = [
        (&ReadFile, json!({"path": "link"})),
        (&WriteFile, json!({"path": "link", "content": "gone"})),
        (
            &EditFile,
            json!({"path": "link", "old_string": "keep", "new_string": "gone"}),
        ),
    ];
    for (tool, input) in attempts {
        let message = failure(call(tool, &fx.ws, input).await);
        assert!(message.contains("outside the workspace"), "{message}");
    }
    assert_eq!(std::fs::read_to_string(&outside)?, "keep");
    Ok(())
}

#[tokio::test]
async fn file_tools_read_git_but_do_not_write_into_it() -> TestResult {
    let fx = Fixture::new()?;
    std::fs::create_dir_all(fx.ws.join(".git/hooks"))?;
    std::fs::write(fx.ws.join(".git/HEAD"), "ref: refs/heads/main\n")?;
    let read = call(&ReadFile, &fx.ws, json!({"path": ".git/HEAD"})).await?;
    assert!(read.contains("refs/heads/main"), "{read}");
    let hook = json!({"path": ".git/hooks/pre-commit", "content": "#!/bin/sh\n"});
    let message = failure(call(&WriteFile, &fx.ws, hook).await);
    assert!(message.contains("needs full access"), "{message}");
    let edit = json!({"path": ".git/HEAD", "old_string": "main", "new_string": "evil"});
    let message = failure(call(&EditFile, &fx.ws, edit).await);
    assert!(message.contains("needs full access"), "{message}");
    assert!(!fx.ws.join(".git/hooks/pre-commit").exists());
    Ok(())
}

#[tokio::test]
async fn an_approved_network_escalation_reaches_the_listener_through_bwrap() -> TestResult {
    let fx = Fixture::new()?;
    let listener = TcpListener::bind("127.0.0.1:0")?;
    listener.set_nonblocking(true)?;
    let port = listener.local_addr()?.port();
    let connect = format!("exec 3<>/dev/tcp/127.0.0.1/{port} && echo connected");
    let shell = fx.shell(SandboxPolicy::WorkspaceWrite, false)?;
    let approvals = Arc::new(Approvals::new(SandboxConfig::default(), ApprovalMode::Auto));
    let ctx = context_with(&fx.ws, "sandbox-test", approvals);
    let input = json!({"command": connect, "escalation": "network"});
    // The gate has approved the escalation; the command then runs with the network on.
    let out = shell.call(input, &ctx).await?;
    assert_eq!(out, "connected\nexit code: 0");
    assert!(listener.accept().is_ok(), "the listener saw no connection");
    Ok(())
}
