//! Writes `assets/startup-order.txt`, the functions a release `mnemo` runs when it starts, one
//! shot (a short and a long reply) and in the TUI; build.rs hands the list to the linker so those functions sit together
//! and a start faults in a few megabytes of code instead of most of the binary (see
//! docs/building.md). It needs valgrind and a release binary built as `cargo install` builds
//! it (`cargo build --release --locked`):
//!
//! `MNEMO_WRITE_ORDER=1 cargo bench --bench startup_order`
//!
//! Without `MNEMO_WRITE_ORDER` it only says so, so that `cargo bench` stays a measurement.

#[path = "../tests/suite/common/mod.rs"]
mod common;
mod tui_pty;

use std::collections::{BTreeSet, HashMap};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use common::{Reply, TestServer};
use portable_pty::CommandBuilder;
use tui_pty::{Pty, Result};

const ORDER: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/assets/startup-order.txt");

fn main() -> Result<()> {
    if std::env::var_os("MNEMO_WRITE_ORDER").is_none() {
        println!("startup_order: set MNEMO_WRITE_ORDER=1 to rewrite {ORDER} (needs valgrind)");
        return Ok(());
    }
    let binary = std::env::var_os("MNEMO_ORDER_BIN")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("target/release/mnemo"));
    let runtime = tokio::runtime::Runtime::new()?;
    let dir = tempfile::tempdir()?;
    let mut profiles = Vec::new();
    let mut run = |name: &str, args: &[String]| -> Result<()> {
        let out = dir.path().join(format!("{name}.callgrind"));
        let status = valgrind(&binary, &out, dir.path())
            .args(args)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()?;
        if !status.success() {
            return Err(format!("{name}: mnemo ended with {status}").into());
        }
        profiles.push(out);
        Ok(())
    };
    run("version", &["--version".into()])?;
    let openai = runtime.block_on(TestServer::start(vec![
        Reply::sse(&common::openai_text(
            "Hello there."
        ));
        4
    ]))?;
    run("run-openai", &openai_flags(&openai, &["run", "hi"]))?;
    // A long reply streamed at once: the journal's full batches and the larger buffers.
    let words: Vec<String> = (0..2000).map(|i| format!("word{i} ")).collect();
    let words: Vec<&str> = words.iter().map(String::as_str).collect();
    let long = runtime.block_on(TestServer::start(vec![Reply::sse(&common::openai_pieces(
        &words,
    ))]))?;
    // Through models named in a config file, as people run it: the config's own paths.
    std::fs::create_dir_all(dir.path().join("config"))?;
    std::fs::write(
        dir.path().join("config/config.toml"),
        format!(
            "default_model = \"long\"\n\
             [models.long]\nprovider = \"openai\"\nbase_url = \"{url}/v1\"\nmodel = \"m\"\n\
             api_key_env = \"\"\n\
             [models.spare]\nprovider = \"openai\"\nbase_url = \"{url}/v1\"\nmodel = \"n\"\n\
             api_key_env = \"\"\n",
            url = long.base_url
        ),
    )?;
    run("run-long", &["run".into(), "hi".into()])?;
    let anthropic = runtime.block_on(TestServer::start(vec![
        Reply::sse(&anthropic_tool_call()),
        Reply::sse(&anthropic_text("The file says hello.")),
        Reply::sse(&anthropic_text("Notes")),
    ]))?;
    std::fs::write(dir.path().join("notes.txt"), "hello\n")?;
    run("run-anthropic", &anthropic_flags(&anthropic))?;
    let tui = runtime.block_on(TestServer::start(vec![
        Reply::sse(&common::openai_pieces(
            &["Hello ", "from ", "the ", "TUI."]
        ));
        4
    ]))?;
    let out = dir.path().join("tui.callgrind");
    tui_session(&binary, &out, dir.path(), &openai_flags(&tui, &[]))?;
    profiles.push(out);
    let mut names = BTreeSet::new();
    for profile in &profiles {
        names.extend(functions_in(profile, &binary)?);
    }
    let mut text = names.into_iter().collect::<Vec<_>>().join("\n");
    text.push('\n');
    std::fs::write(ORDER, text)?;
    println!("startup_order: wrote {ORDER}");
    Ok(())
}

fn valgrind(binary: &Path, out: &Path, dir: &Path) -> Command {
    let mut command = Command::new("valgrind");
    command
        .args(["--tool=callgrind", "--demangle=no"])
        .arg(format!("--callgrind-out-file={}", out.display()))
        .arg(binary)
        .current_dir(dir)
        .env("MNEMO_CONFIG_DIR", dir.join("config"))
        .env("MNEMO_DATA_DIR", dir.join("data"))
        .env("ANTHROPIC_API_KEY", "order-key");
    command
}

fn openai_flags(server: &TestServer, rest: &[&str]) -> Vec<String> {
    let base = format!("{}/v1", server.base_url);
    let mut flags = ["--provider", "openai", "--base-url", &base, "--model", "m"]
        .map(str::to_string)
        .to_vec();
    flags.extend(rest.iter().map(|s| s.to_string()));
    flags
}

fn anthropic_flags(server: &TestServer) -> Vec<String> {
    [
        "--provider",
        "anthropic",
        "--base-url",
        &server.base_url,
        "--model",
        "claude-sonnet-4-5",
        "run",
        "read notes.txt",
    ]
    .map(str::to_string)
    .to_vec()
}

fn anthropic_events(blocks: &str, stop: &str) -> String {
    format!(
        "event: message_start\ndata: {{\"type\":\"message_start\",\"message\":{{\"id\":\"m\",\
         \"type\":\"message\",\"role\":\"assistant\",\"content\":[],\"model\":\"claude\",\
         \"usage\":{{\"input_tokens\":10,\"output_tokens\":1}}}}}}\n\n{blocks}\
         event: message_delta\ndata: {{\"type\":\"message_delta\",\"delta\":{{\"stop_reason\":\
         \"{stop}\"}},\"usage\":{{\"output_tokens\":5}}}}\n\n\
         event: message_stop\ndata: {{\"type\":\"message_stop\"}}\n\n"
    )
}

fn anthropic_text(text: &str) -> String {
    anthropic_events(
        &format!(
            "event: content_block_start\ndata: {{\"type\":\"content_block_start\",\"index\":0,\
             \"content_block\":{{\"type\":\"text\",\"text\":\"\"}}}}\n\n\
             event: content_block_delta\ndata: {{\"type\":\"content_block_delta\",\"index\":0,\
             \"delta\":{{\"type\":\"text_delta\",\"text\":\"{text}\"}}}}\n\n\
             event: content_block_stop\ndata: {{\"type\":\"content_block_stop\",\"index\":0}}\n\n"
        ),
        "end_turn",
    )
}

fn anthropic_tool_call() -> String {
    anthropic_events(
        "event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\
         \"content_block\":{\"type\":\"tool_use\",\"id\":\"t1\",\"name\":\"read_file\",\
         \"input\":{}}}\n\n\
         event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\
         \"delta\":{\"type\":\"input_json_delta\",\"partial_json\":\"{\\\"path\\\":\\\"notes.txt\\\"}\"}}\n\n\
         event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":0}\n\n",
        "tool_use",
    )
}

/// The TUI in a pseudo-terminal: one message, its streamed answer, then `/quit`.
fn tui_session(binary: &Path, out: &Path, dir: &Path, flags: &[String]) -> Result<()> {
    let plain = valgrind(binary, out, dir);
    let mut command = CommandBuilder::new(plain.get_program());
    command.args(plain.get_args());
    command.args(flags);
    command.cwd(dir);
    for (key, value) in plain.get_envs() {
        if let Some(value) = value {
            command.env(key, value);
        }
    }
    let mut tui = Pty::start(command)?;
    let limit = Duration::from_secs(120);
    tui.wait_for("Enter send", limit)?;
    tui.send("hi\r")?;
    tui.wait_for("TUI.", limit)?;
    tui.send("/quit\r")?;
    if !tui.wait_exit()? {
        return Err("the TUI ended with an error".into());
    }
    Ok(())
}

/// The functions callgrind saw run inside `binary` (its names are compressed: `(id) name` the
/// first time, `(id)` after).
fn functions_in(profile: &Path, binary: &Path) -> Result<BTreeSet<String>> {
    let text = std::fs::read_to_string(profile)?;
    let ours = binary.canonicalize()?.display().to_string();
    let mut objects = HashMap::new();
    let mut names = HashMap::new();
    let mut in_ours = false;
    let mut found = BTreeSet::new();
    for line in text.lines() {
        let Some((key, value)) = line.split_once('=') else {
            continue;
        };
        let (id, name) = match value.split_once(' ') {
            Some((id, name)) => (id, Some(name)),
            None => (value, None),
        };
        match key {
            "ob" | "cob" => {
                if let Some(name) = name {
                    objects.insert(id.to_string(), name.to_string());
                }
                if key == "ob" {
                    in_ours = objects.get(id).is_some_and(|o| *o == ours);
                }
            }
            "fn" | "cfn" => {
                if let Some(name) = name {
                    names.insert(id.to_string(), name.to_string());
                }
                if key == "fn"
                    && in_ours
                    && let Some(name) = names.get(id)
                    && !name.starts_with("0x")
                {
                    // Recursion shows as `name'2`.
                    let name = match name.rsplit_once('\'') {
                        Some((base, depth)) if depth.chars().all(|c| c.is_ascii_digit()) => base,
                        _ => name,
                    };
                    found.insert(name.to_string());
                }
            }
            _ => {}
        }
    }
    Ok(found)
}
