//! SIGTERM and SIGHUP to a real `mnemo run`: the turn stops as an interrupt does (what was
//! streamed is kept in the session, the running command and everything it started is killed)
//! and the process exits with 143 or 129.

use std::io::{BufRead, BufReader, Read};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use serde_json::json;

type TestResult = Result<(), Box<dyn std::error::Error>>;

/// `mnemo run` in `dir`, its stderr lines forwarded to the returned channel.
fn spawn(dir: &Path, args: &[&str]) -> Result<(Child, mpsc::Receiver<String>), std::io::Error> {
    let mut child = Command::new(env!("CARGO_BIN_EXE_mnemo"))
        .args(args)
        .current_dir(dir)
        .env("MNEMO_CONFIG_DIR", dir.join("cfg"))
        .env("MNEMO_DATA_DIR", dir.join("data"))
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()?;
    let (tx, rx) = mpsc::channel();
    if let Some(stderr) = child.stderr.take() {
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                let _ = tx.send(line);
            }
        });
    }
    Ok((child, rx))
}

fn wait_for_line(lines: &mpsc::Receiver<String>, needle: &str) -> TestResult {
    let deadline = Instant::now() + Duration::from_secs(20);
    while let Some(left) = deadline.checked_duration_since(Instant::now()) {
        match lines.recv_timeout(left) {
            Ok(line) if line.contains(needle) => return Ok(()),
            Ok(_) => {}
            Err(_) => break,
        }
    }
    Err(format!("no stderr line with {needle:?}").into())
}

fn signal(child: &Child, signal: libc::c_int) -> TestResult {
    let pid = libc::pid_t::try_from(child.id())?;
    // SAFETY: kill has no memory-safety preconditions; the pid is our own child.
    if unsafe { libc::kill(pid, signal) } != 0 {
        return Err(std::io::Error::last_os_error().into());
    }
    Ok(())
}

/// Waits for the exit, with a limit; returns the exit code and stdout.
fn finish(mut child: Child) -> Result<(Option<i32>, String), Box<dyn std::error::Error>> {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        if let Some(status) = child.try_wait()? {
            let mut out = String::new();
            if let Some(mut stdout) = child.stdout.take() {
                stdout.read_to_string(&mut out)?;
            }
            return Ok((status.code(), out));
        }
        if Instant::now() > deadline {
            child.kill()?;
            return Err("mnemo did not exit after the signal".into());
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn sleeper_alive(marker: &str) -> bool {
    let needle = format!("sleep\0{marker}\0");
    std::fs::read_dir("/proc").is_ok_and(|entries| {
        entries.flatten().any(|entry| {
            let cmdline = std::fs::read(entry.path().join("cmdline")).unwrap_or_default();
            let stat = std::fs::read_to_string(entry.path().join("stat")).unwrap_or_default();
            let zombie = stat
                .rsplit(')')
                .next()
                .is_some_and(|s| s.trim().starts_with('Z'));
            !zombie
                && cmdline
                    .windows(needle.len())
                    .any(|w| w == needle.as_bytes())
        })
    })
}

fn exported(dir: &Path) -> Result<String, Box<dyn std::error::Error>> {
    let list = Command::new(env!("CARGO_BIN_EXE_mnemo"))
        .args(["sessions", "--all"])
        .current_dir(dir)
        .env("MNEMO_CONFIG_DIR", dir.join("cfg"))
        .env("MNEMO_DATA_DIR", dir.join("data"))
        .output()?;
    let listing = String::from_utf8_lossy(&list.stdout).into_owned();
    let id = listing
        .split_whitespace()
        .find(|w| w.len() >= 8 && w.chars().all(|c| c.is_ascii_hexdigit()))
        .ok_or(format!("no session listed: {listing}"))?
        .to_string();
    let export = Command::new(env!("CARGO_BIN_EXE_mnemo"))
        .args(["sessions", "export", &id, "--format", "md"])
        .current_dir(dir)
        .env("MNEMO_CONFIG_DIR", dir.join("cfg"))
        .env("MNEMO_DATA_DIR", dir.join("data"))
        .output()?;
    Ok(String::from_utf8_lossy(&export.stdout).into_owned())
}

#[test]
fn sigterm_stops_the_running_command_and_exits_143() -> TestResult {
    let dir = tempfile::tempdir()?;
    let marker = format!("900.{}", std::process::id());
    let script = dir.path().join("script.json");
    let command = format!("setsid sleep {marker} & sleep {marker}");
    std::fs::write(
        &script,
        json!({"turns": [
            {"text": "Starting the long job.", "tool_calls": [{"name": "shell", "arguments": {"command": command}}]},
            {"text": "never reached"}
        ]})
        .to_string(),
    )?;
    let model = format!("scripted:{}", script.display());
    let args = [
        "--approval",
        "full",
        "--model",
        &model,
        "run",
        "run the job",
    ];
    let (child, lines) = spawn(dir.path(), &args)?;
    wait_for_line(&lines, "shell")?;
    let started = Instant::now();
    while !sleeper_alive(&marker) && started.elapsed() < Duration::from_secs(5) {
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(sleeper_alive(&marker), "the command never started");
    signal(&child, libc::SIGTERM)?;
    let (code, stdout) = finish(child)?;
    assert_eq!(code, Some(143));
    assert!(stdout.contains("Starting the long job."), "{stdout}");
    let gone = Instant::now();
    while sleeper_alive(&marker) && gone.elapsed() < Duration::from_secs(5) {
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(!sleeper_alive(&marker), "the command outlived mnemo");
    assert!(exported(dir.path())?.contains("Starting the long job."));
    Ok(())
}

#[test]
fn sighup_mid_stream_keeps_what_was_shown_and_exits_129() -> TestResult {
    let dir = tempfile::tempdir()?;
    let script = dir.path().join("script.json");
    let words: Vec<String> = (0..200).map(|i| format!("word{i} ")).collect();
    std::fs::write(
        &script,
        json!({"turns": [{"chunks": words, "delay_ms": 50}]}).to_string(),
    )?;
    let model = format!("scripted:{}", script.display());
    let (mut child, _lines) = spawn(dir.path(), &["--model", &model, "run", "talk"])?;
    let mut stdout = child.stdout.take().ok_or("no stdout")?;
    let mut seen = Vec::new();
    let mut buf = [0u8; 256];
    while !String::from_utf8_lossy(&seen).contains("word3 ") {
        let n = stdout.read(&mut buf)?;
        if n == 0 {
            break;
        }
        seen.extend_from_slice(&buf[..n]);
    }
    signal(&child, libc::SIGHUP)?;
    stdout.read_to_end(&mut seen)?;
    let (code, _) = finish(child)?;
    assert_eq!(code, Some(129));
    let shown = String::from_utf8_lossy(&seen).into_owned();
    assert!(shown.contains("word3"), "{shown}");
    assert!(
        !shown.contains("word199"),
        "the stream was not stopped: {shown}"
    );
    assert!(
        exported(dir.path())?.contains("word3"),
        "the streamed text was lost"
    );
    Ok(())
}
