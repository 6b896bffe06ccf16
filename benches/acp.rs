//! `mnemo acp` for an editor (`cargo bench --bench acp`): time from `initialize` to the first
//! `session/update` chunk of a scripted reply (initialize, session/new and session/prompt
//! included), and the memory of an idle `mnemo acp` (after initialize, and after one reply).

use std::error::Error;
use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

type BenchResult<T = ()> = Result<T, Box<dyn Error>>;

const RUNS: usize = 10;
const WAIT: Duration = Duration::from_secs(20);

struct Agent {
    child: Child,
    stdin: ChildStdin,
    lines: mpsc::Receiver<Value>,
}

impl Agent {
    fn start(dir: &Path) -> BenchResult<Self> {
        let script = json!({"turns": [{"chunks": ["Hello", " from", " mnemo."]}]});
        let script_path = dir.join("script.json");
        std::fs::write(&script_path, script.to_string())?;
        let mut child = Command::new(env!("CARGO_BIN_EXE_mnemo"))
            .arg("--model")
            .arg(format!("scripted:{}", script_path.display()))
            .arg("acp")
            .current_dir(dir)
            .env("MNEMO_CONFIG_DIR", dir.join("cfg"))
            .env("MNEMO_DATA_DIR", dir.join("data"))
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()?;
        let stdin = child.stdin.take().ok_or("no stdin")?;
        let stdout = child.stdout.take().ok_or("no stdout")?;
        let (send, lines) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                if let Ok(value) = serde_json::from_str::<Value>(&line)
                    && send.send(value).is_err()
                {
                    break;
                }
            }
        });
        Ok(Self {
            child,
            stdin,
            lines,
        })
    }

    fn send(&mut self, message: Value) -> BenchResult {
        writeln!(self.stdin, "{message}")?;
        self.stdin.flush()?;
        Ok(())
    }

    /// The first message from the agent that `wanted` accepts.
    fn until(&self, wanted: impl Fn(&Value) -> bool) -> BenchResult<Value> {
        loop {
            let value = self.lines.recv_timeout(WAIT)?;
            if wanted(&value) {
                return Ok(value);
            }
        }
    }

    fn request(&mut self, id: u64, method: &str, params: Value) -> BenchResult<Value> {
        self.send(json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}))?;
        let reply = self.until(|v| v["id"] == json!(id) && v.get("method").is_none())?;
        Ok(reply["result"].clone())
    }

    fn status_kib(&self, key: &str) -> BenchResult<u64> {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.child.id()))?;
        let line = status
            .lines()
            .find(|l| l.starts_with(key))
            .ok_or(format!("no {key}"))?;
        Ok(line.split_whitespace().nth(1).ok_or("bad line")?.parse()?)
    }

    fn stop(mut self) -> BenchResult {
        drop(self.stdin);
        self.child.wait()?;
        Ok(())
    }
}

/// Initialize, a new session and a prompt, to its first chunk: the time taken, and the
/// agent (the turn still ending).
fn first_chunk(dir: &Path) -> BenchResult<(Duration, Agent)> {
    let mut agent = Agent::start(dir)?;
    let started = Instant::now();
    agent.request(1, "initialize", json!({"protocolVersion": 1}))?;
    let session = agent.request(2, "session/new", json!({"cwd": dir, "mcpServers": []}))?;
    let id = session["sessionId"].clone();
    agent.send(
        json!({"jsonrpc": "2.0", "id": 3, "method": "session/prompt",
        "params": {"sessionId": id, "prompt": [{"type": "text", "text": "hi"}]}}),
    )?;
    agent.until(|v| {
        v["method"] == json!("session/update")
            && v["params"]["update"]["sessionUpdate"] == json!("agent_message_chunk")
    })?;
    let took = started.elapsed();
    agent.until(|v| v["id"] == json!(3))?;
    Ok((took, agent))
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

fn main() -> BenchResult {
    let mut times = Vec::new();
    for _ in 0..RUNS {
        let dir = tempfile::tempdir()?;
        let (took, agent) = first_chunk(dir.path())?;
        times.push(took);
        agent.stop()?;
    }
    times.sort();
    println!(
        "initialize to the first session/update chunk (initialize, session/new, session/prompt): median {:.1} ms, min {:.1} ms, max {:.1} ms over {RUNS} runs",
        ms(times[RUNS / 2]),
        ms(times[0]),
        ms(times[RUNS - 1])
    );

    let dir = tempfile::tempdir()?;
    let mut idle = Agent::start(dir.path())?;
    idle.request(1, "initialize", json!({"protocolVersion": 1}))?;
    std::thread::sleep(Duration::from_secs(1));
    let mib = |agent: &Agent, key: &str| agent.status_kib(key).map(|kib| kib as f64 / 1024.0);
    println!(
        "idle `mnemo acp` after initialize: resident {:.1} MiB, peak {:.1} MiB",
        mib(&idle, "VmRSS:")?,
        mib(&idle, "VmHWM:")?
    );
    idle.stop()?;

    let dir = tempfile::tempdir()?;
    let (_, after) = first_chunk(dir.path())?;
    std::thread::sleep(Duration::from_secs(1));
    println!(
        "idle `mnemo acp` after one session and reply: resident {:.1} MiB, peak {:.1} MiB",
        mib(&after, "VmRSS:")?,
        mib(&after, "VmHWM:")?
    );
    after.stop()?;
    Ok(())
}
