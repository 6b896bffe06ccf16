use super::*;

type TestResult = Result<(), Box<dyn std::error::Error>>;

#[test]
fn missing_bwrap_message_names_the_install_command_and_the_way_out() {
    let error = SandboxError::Unavailable(SandboxUnavailable::Missing {
        tool: bwrap::BWRAP,
        install: bwrap::INSTALL_HINT,
    });
    assert_eq!(
        error.to_string(),
        "commands are refused because the sandbox cannot run: bwrap is not installed; \
         install it with `sudo apt-get install bubblewrap`. To run commands without a \
         sandbox instead, choose full access"
    );
}

#[test]
fn a_temporary_scratch_directory_lives_as_long_as_the_last_clone() -> TestResult {
    let dir = tempfile::tempdir()?;
    let sandbox = Sandbox::temporary(SandboxConfig::default(), dir.path())?;
    let scratch = sandbox.scratch().to_path_buf();
    assert_eq!(fs::metadata(&scratch)?.mode() & 0o777, 0o700);
    fs::write(scratch.join("left-behind"), "x")?;
    let clone = sandbox.with_config(SandboxConfig::default());
    drop(sandbox);
    assert!(
        scratch.join("left-behind").exists(),
        "a clone still uses it"
    );
    drop(clone);
    assert!(!scratch.exists());
    Ok(())
}

#[test]
fn scratch_directories_of_dead_processes_are_swept_and_live_ones_kept() -> TestResult {
    let temp = tempfile::tempdir()?;
    let mine = temp
        .path()
        .join(format!("{SCRATCH_PREFIX}{}-a", std::process::id()));
    // Beyond the kernel's pid_max: no such process can exist.
    let dead = temp.path().join(format!("{SCRATCH_PREFIX}99999999-b"));
    let unrelated = temp.path().join("mnemo-scratch-notapid");
    for dir in [&mine, &dead, &unrelated] {
        fs::create_dir(dir)?;
    }
    sweep_orphaned_scratch(temp.path());
    assert!(mine.exists() && unrelated.exists());
    assert!(!dead.exists());
    Ok(())
}

#[test]
fn a_file_in_place_of_the_scratch_directory_is_refused() -> TestResult {
    let dir = tempfile::tempdir()?;
    let file = dir.path().join("scratch");
    fs::write(&file, "")?;
    let result = Sandbox::new(SandboxConfig::default(), dir.path(), &file);
    assert!(matches!(result, Err(SandboxError::Directory { .. })));
    Ok(())
}

#[tokio::test]
async fn full_access_needs_no_sandbox_and_keeps_tmpdir() -> TestResult {
    let dir = tempfile::tempdir()?;
    let config = SandboxConfig {
        policy: SandboxPolicy::FullAccess,
        network: false,
    };
    preflight(&config).await?;
    let sandbox = Sandbox::new(config, dir.path(), &dir.path().join("s"))?;
    let env = [("TMPDIR".into(), "/var/tmp".into())];
    let output = sandbox
        .command_with_env("echo $TMPDIR $MNEMO_SCRATCH", env)
        .await?
        .command
        .output()
        .await?;
    let expected = format!("/var/tmp {}\n", sandbox.scratch().display());
    assert_eq!(String::from_utf8_lossy(&output.stdout), expected);
    Ok(())
}
