//! The scripted session the prompt-cache tests and bench run through the real binary: a small
//! project, and 30 steps (10 reads, 10 shell commands, 5 edits, 4 greps, then the answer).

use std::path::Path;
use std::process::{Command, Output, Stdio};

use serde_json::json;

use super::{Answer, CacheServer, Exchange, Script, Wire};

/// Steps of the plain session, the answer included.
pub const STEPS: usize = 30;

/// The answer to step `step` of the plain session.
pub fn plain_step(step: usize) -> Answer {
    match step {
        0..10 => Answer::tool("read_file", json!({"path": format!("src/part{step}.rs")})),
        10..20 => Answer::tool(
            "shell",
            json!({"command": format!("wc -l src/part{}.rs", step - 10)}),
        ),
        20..25 => Answer::tool(
            "edit_file",
            json!({"path": format!("src/part{}.rs", step - 20),
                "old_string": "fn value", "new_string": "pub fn value"}),
        ),
        25..29 => Answer::tool("grep", json!({"pattern": format!("part{}", step - 25)})),
        _ => Answer::Text("The parts are read, counted and made public.".into()),
    }
}

/// Where a growing session does its extra step.
pub const GROWTH_STEP: usize = 13;

/// What a session learns midway, in one extra step.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Growth {
    Nothing,
    /// The working checkpoint is set (it then rides at the end of every request).
    Checkpoint,
    /// A capability is made (a new tool).
    Capability,
}

impl Growth {
    pub const ALL: [Growth; 3] = [Growth::Nothing, Growth::Checkpoint, Growth::Capability];

    /// The step that makes the growth.
    fn answer(self) -> Option<Answer> {
        match self {
            Growth::Nothing => None,
            Growth::Checkpoint => Some(Answer::tool(
                "update_working_checkpoint",
                json!({"key_info": "Task: make every part's value public. Done: parts 0-3 \
                    read; next: count lines, then edit each part."}),
            )),
            Growth::Capability => Some(Answer::tool(
                "capability_create",
                json!({"name": "count-lines", "description": "Count the lines of a text",
                    "input_schema": {"type": "object",
                        "properties": {"text": {"type": "string"}}, "required": ["text"]},
                    "language": "python3",
                    "code": "import json,sys\nprint(len(json.load(sys.stdin)['text'].splitlines()))"}),
            )),
        }
    }

    /// The plain session with this growth's step at [`GROWTH_STEP`].
    pub fn script(self) -> Script {
        let grow = self.answer();
        Box::new(move |step, _| match (&grow, step) {
            (Some(answer), GROWTH_STEP) => answer.clone(),
            (Some(_), step) if step > GROWTH_STEP => plain_step(step - 1),
            _ => plain_step(step),
        })
    }
}

/// A project with the files the plain session works on.
pub fn project() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    std::fs::create_dir_all(dir.path().join("src")).unwrap_or_else(|e| panic!("{e}"));
    for n in 0..10 {
        let body: String = (0..30)
            .map(|line| format!("// part{n}: line {line} of the module\n"))
            .collect();
        let text = format!("{body}fn value() -> u32 {{ {n} }}\n");
        std::fs::write(dir.path().join(format!("src/part{n}.rs")), text)
            .unwrap_or_else(|e| panic!("{e}"));
    }
    dir
}

/// Runs `mnemo run` in `project` against a cache-accounting server playing `script`, with its
/// own config and data directories; every request the server answered.
pub fn run(wire: Wire, project: &Path, script: Script) -> Vec<Exchange> {
    let (exchanges, output) = run_with(wire, project, script, &[]);
    assert!(
        output.status.success(),
        "mnemo run failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    exchanges
}

/// [`run`] with `flags` added after the prompt, however it ends; also how it ended.
pub fn run_with(
    wire: Wire,
    project: &Path,
    script: Script,
    flags: &[&str],
) -> (Vec<Exchange>, Output) {
    let runtime = tokio::runtime::Runtime::new().unwrap_or_else(|e| panic!("{e}"));
    let server = runtime
        .block_on(CacheServer::start(wire, script))
        .unwrap_or_else(|e| panic!("{e}"));
    let output = Command::new(env!("CARGO_BIN_EXE_mnemo"))
        .args(server.flags())
        .args([
            "--approval",
            "auto",
            "run",
            "Make every part's value public.",
        ])
        .args(flags)
        .current_dir(project)
        .env("MNEMO_CONFIG_DIR", project.join(".cfg"))
        .env("MNEMO_DATA_DIR", project.join(".data"))
        .env("LLM_KEY", "test-key")
        .env_remove("ANTHROPIC_API_KEY")
        .env_remove("OPENAI_API_KEY")
        .env_remove("MNEMO_MODEL")
        .stdin(Stdio::null())
        .output()
        .unwrap_or_else(|e| panic!("{e}"));
    let exchanges = server.exchanges();
    drop(server);
    (exchanges, output)
}
