//! Core benchmarks for issue 2, printed as figures (`cargo bench --bench core`):
//! start-up time, SSE decoding throughput, agent-loop overhead per step, peak RSS of a run.

use std::io::Write;
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use mnemo::agent::{Session, SessionSettings};
use mnemo::config::Config;
use mnemo::llm::WireDecoder;
use mnemo::llm::anthropic::AnthropicDecoder;
use mnemo::llm::openai::OpenAiDecoder;
use mnemo::llm::scripted::{Script, ScriptToolCall, ScriptTurn};
use mnemo::llm::sse::SseParser;
use mnemo::memory::Store;
use mnemo::protocol::{Event, Op};
use mnemo::tools::{ToolContext, ToolError, ToolRegistry, TypedTool};
use schemars::JsonSchema;
use serde::Deserialize;

mod scripted;

const BIN: &str = env!("CARGO_BIN_EXE_mnemo");

fn main() {
    println!("mnemo core benchmarks");
    instruction_loading();
    run_peak_rss();
    version_wall_time();
    sse_throughput("anthropic", &anthropic_stream(10 << 20), || {
        Box::new(AnthropicDecoder::new())
    });
    sse_throughput("openai", &openai_stream(10 << 20), || {
        Box::new(OpenAiDecoder::new())
    });
    agent_step_overhead(Persistence::Memory);
    agent_step_overhead(Persistence::File);
    compaction_bookkeeping();
}

/// What reading AGENTS.md and CLAUDE.md through the workspace guard adds to start-up (before
/// the first frame): the median of the guarded reads against plain `read_to_string`, for two
/// 4 KiB files, and for a hostile pair (a FIFO and a link to /dev/zero) that is refused.
fn instruction_loading() {
    use mnemo::sandbox::Confinement;
    use mnemo::sandbox::workspace_read::read_text;
    use std::path::Path;
    const ROUNDS: usize = 2000;
    let median = |mut times: Vec<Duration>| {
        times.sort();
        times[times.len() / 2]
    };
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let ws = dir.path().join("ws");
    let hostile = dir.path().join("hostile");
    for path in [&ws, &hostile] {
        std::fs::create_dir_all(path).unwrap_or_else(|e| panic!("{e}"));
    }
    let text = "- Run `make check` before every commit.\n".repeat(100);
    for name in ["AGENTS.md", "CLAUDE.md"] {
        std::fs::write(ws.join(name), &text).unwrap_or_else(|e| panic!("{e}"));
    }
    let fifo = std::ffi::CString::new(hostile.join("AGENTS.md").to_string_lossy().as_bytes())
        .unwrap_or_else(|e| panic!("{e}"));
    // SAFETY: mkfifo reads a valid NUL-terminated path.
    unsafe { libc::mkfifo(fifo.as_ptr(), 0o600) };
    std::os::unix::fs::symlink("/dev/zero", hostile.join("CLAUDE.md"))
        .unwrap_or_else(|e| panic!("{e}"));
    let confinement = Confinement::default();
    let guarded = |root: &Path| {
        let start = Instant::now();
        for name in ["AGENTS.md", "CLAUDE.md"] {
            let _ = std::hint::black_box(read_text(root, Path::new(name), &confinement, 256 << 10));
        }
        start.elapsed()
    };
    let plain: Vec<Duration> = (0..ROUNDS)
        .map(|_| {
            let start = Instant::now();
            for name in ["AGENTS.md", "CLAUDE.md"] {
                let _ = std::hint::black_box(std::fs::read_to_string(ws.join(name)));
            }
            start.elapsed()
        })
        .collect();
    let plain = median(plain);
    let safe = median((0..ROUNDS).map(|_| guarded(&ws)).collect());
    let refused = median((0..ROUNDS).map(|_| guarded(&hostile)).collect());
    println!(
        "  guarded instruction loading (AGENTS.md + CLAUDE.md, 4 KiB each): plain read \
         {:.1} µs, guarded {:.1} µs, +{:.1} µs at start-up (target < 1000 µs); a FIFO and \
         /dev/zero refused in {:.1} µs",
        plain.as_secs_f64() * 1e6,
        safe.as_secs_f64() * 1e6,
        (safe.saturating_sub(plain)).as_secs_f64() * 1e6,
        refused.as_secs_f64() * 1e6
    );
}

/// A session of 150,000 estimated tokens is resumed, then compacted with the compressor
/// failing at once, so the figure is mnemo's own work: planning, the mechanical summary,
/// importance, the archive transaction and the working-set update.
fn compaction_bookkeeping() {
    use mnemo::llm::Message;
    use mnemo::memory::types::NewSession;
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let db_path = dir.path().join("bench.db");
    let workspace = dir.path().canonicalize().unwrap_or_else(|e| panic!("{e}"));
    let mut db = mnemo::memory::Db::open(&db_path).unwrap_or_else(|e| panic!("{e}"));
    db.create_session(NewSession {
        id: "bench".into(),
        parent_id: None,
        cwd: workspace.display().to_string(),
        model: "scripted".into(),
        title: "bench".into(),
    })
    .unwrap_or_else(|e| panic!("{e}"));
    let body =
        "The parser change touched src/parse.rs and the tests; fixed the edge case. ".repeat(13);
    let messages: Vec<Message> = (0..600)
        .map(|i| {
            if i % 2 == 0 {
                Message::user_text(format!("request {i}: {body}"))
            } else {
                Message::assistant(vec![mnemo::llm::ContentBlock::Text {
                    text: format!("answer {i}: {body}"),
                }])
            }
        })
        .collect();
    let rows: Vec<(i64, &Message, u32)> = messages
        .iter()
        .enumerate()
        .map(|(i, m)| (i as i64, m, mnemo::llm::tokens::estimate_message(m)))
        .collect();
    let total: u64 = rows.iter().map(|r| u64::from(r.2)).sum();
    let history: Vec<Arc<Message>> = messages.iter().cloned().map(Arc::new).collect();
    let tokens: Vec<u32> = rows.iter().map(|r| r.2).collect();
    let plan_start = Instant::now();
    let starts: Vec<bool> = (0..history.len()).map(|i| i % 2 == 0).collect();
    let keep = mnemo::agent::compaction_plan::Keep {
        target: total / 4,
        hard: total / 2,
        min_tail: 10,
    };
    let plan = mnemo::agent::compaction_plan::plan(&history, &tokens, &starts, keep)
        .unwrap_or_else(|| panic!("nothing to compact"));
    let dropped: Vec<Message> = messages[1..plan.tail_start].to_vec();
    let summary = mnemo::memory::mechanical_summary(&dropped);
    let importance = mnemo::memory::importance(&dropped);
    let planned = plan_start.elapsed();
    assert!(summary.0.is_some() && importance > 0.0);
    db.append_messages("bench", &rows)
        .unwrap_or_else(|e| panic!("{e}"));
    drop(db);

    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap_or_else(|e| panic!("{e}"));
    let elapsed = runtime.block_on(async {
        let store = Store::open(&db_path).unwrap_or_else(|e| panic!("{e}"));
        let failing: Script = serde_json::from_value(serde_json::json!({"turns": [
            {"error": {"kind": "bad_request", "message": "no compressor in benchmarks"}}
        ]}))
        .unwrap_or_else(|e| panic!("{e}"));
        let chain = scripted::chain(failing, 1_000_000);
        let settings = SessionSettings {
            max_active_messages: 1000,
            ..SessionSettings::from_config(workspace, "bench".into(), &Config::default())
        };
        let session = Session::resume(settings, chain, ToolRegistry::new(), store, "bench")
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        let mut handle = mnemo::agent::spawn(session);
        let start = Instant::now();
        let sent = handle.ops.send(Op::Compact).await;
        assert!(sent.is_ok());
        while let Some(event) = handle.events.recv().await {
            if matches!(event, Event::Compacted { .. }) {
                break;
            }
        }
        start.elapsed()
    });
    println!(
        "  compaction bookkeeping of a {total}-token history (600 messages, no model time): plan + summary + importance {:.1} ms (target < 20 ms); with the archive transaction and its full-text indexing, end to end {:.1} ms",
        ms(planned),
        ms(elapsed)
    );
}

fn version_wall_time() {
    let mut times: Vec<Duration> = (0..50)
        .map(|_| {
            let start = Instant::now();
            let status = Command::new(BIN)
                .arg("--version")
                .stdout(Stdio::null())
                .status();
            assert!(status.is_ok_and(|s| s.success()));
            start.elapsed()
        })
        .collect();
    times.sort();
    println!(
        "  mnemo --version wall time: median {:.2} ms, p90 {:.2} ms (target < 5 ms)",
        ms(times[times.len() / 2]),
        ms(times[times.len() * 9 / 10])
    );
}

/// An Anthropic stream of text and tool calls whose arguments arrive in many small pieces.
fn anthropic_stream(target: usize) -> Vec<u8> {
    let mut out = String::from(
        "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_01\",\"type\":\"message\",\"role\":\"assistant\",\"model\":\"claude-sonnet-4-5\",\"content\":[],\"stop_reason\":null,\"usage\":{\"input_tokens\":10,\"output_tokens\":1}}}\n\n",
    );
    let mut index = 0;
    while out.len() < target {
        out.push_str(&format!("event: content_block_start\ndata: {{\"type\":\"content_block_start\",\"index\":{index},\"content_block\":{{\"type\":\"tool_use\",\"id\":\"toolu_{index:06}\",\"name\":\"write_file\",\"input\":{{}}}}}}\n\n"));
        out.push_str(&format!("event: content_block_delta\ndata: {{\"type\":\"content_block_delta\",\"index\":{index},\"delta\":{{\"type\":\"input_json_delta\",\"partial_json\":\"{{\\\"path\\\": \\\"src/lib.rs\\\", \\\"content\\\": \\\"\"}}}}\n\n"));
        for _ in 0..200 {
            out.push_str(&format!("event: content_block_delta\ndata: {{\"type\":\"content_block_delta\",\"index\":{index},\"delta\":{{\"type\":\"input_json_delta\",\"partial_json\":\"fn main() {{ println!(\\\\\\\"hi\\\\\\\"); }}\\\\n\"}}}}\n\n"));
        }
        out.push_str(&format!("event: content_block_delta\ndata: {{\"type\":\"content_block_delta\",\"index\":{index},\"delta\":{{\"type\":\"input_json_delta\",\"partial_json\":\"\\\"}}\"}}}}\n\n"));
        out.push_str(&format!("event: content_block_stop\ndata: {{\"type\":\"content_block_stop\",\"index\":{index}}}\n\n"));
        index += 1;
    }
    out.push_str("event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"tool_use\",\"stop_sequence\":null},\"usage\":{\"output_tokens\":100}}\n\n");
    out.push_str("event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n");
    out.into_bytes()
}

fn openai_stream(target: usize) -> Vec<u8> {
    let mut out = String::new();
    let mut index = 0;
    while out.len() < target {
        out.push_str(&format!("data: {{\"id\":\"chatcmpl-1\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"gpt-5.1\",\"choices\":[{{\"index\":0,\"delta\":{{\"tool_calls\":[{{\"index\":{index},\"id\":\"call_{index}\",\"type\":\"function\",\"function\":{{\"name\":\"write_file\",\"arguments\":\"\"}}}}]}},\"finish_reason\":null}}]}}\n\n"));
        out.push_str(&format!("data: {{\"id\":\"chatcmpl-1\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"gpt-5.1\",\"choices\":[{{\"index\":0,\"delta\":{{\"tool_calls\":[{{\"index\":{index},\"function\":{{\"arguments\":\"{{\\\"path\\\": \\\"a.rs\\\", \\\"content\\\": \\\"\"}}}}]}},\"finish_reason\":null}}]}}\n\n"));
        for _ in 0..200 {
            out.push_str(&format!("data: {{\"id\":\"chatcmpl-1\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"gpt-5.1\",\"choices\":[{{\"index\":0,\"delta\":{{\"tool_calls\":[{{\"index\":{index},\"function\":{{\"arguments\":\"let x = 1;\\\\n\"}}}}]}},\"finish_reason\":null}}]}}\n\n"));
        }
        out.push_str(&format!("data: {{\"id\":\"chatcmpl-1\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"gpt-5.1\",\"choices\":[{{\"index\":0,\"delta\":{{\"tool_calls\":[{{\"index\":{index},\"function\":{{\"arguments\":\"\\\"}}\"}}}}]}},\"finish_reason\":null}}]}}\n\n"));
        index += 1;
    }
    out.push_str("data: {\"id\":\"chatcmpl-1\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"gpt-5.1\",\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"tool_calls\"}]}\n\n");
    out.push_str("data: {\"id\":\"chatcmpl-1\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"gpt-5.1\",\"choices\":[],\"usage\":{\"prompt_tokens\":10,\"completion_tokens\":100,\"total_tokens\":110}}\n\n");
    out.push_str("data: [DONE]\n\n");
    out.into_bytes()
}

fn sse_throughput(name: &str, body: &[u8], decoder: impl Fn() -> Box<dyn WireDecoder>) {
    let mut best = Duration::MAX;
    let mut calls = 0;
    for _ in 0..5 {
        let mut dec = decoder();
        let mut parser = SseParser::new();
        let mut out = Vec::new();
        let start = Instant::now();
        for chunk in body.chunks(16 * 1024) {
            let fed = parser.feed(chunk, &mut |e| dec.on_event(e, &mut out));
            assert!(fed.is_ok(), "{fed:?}");
        }
        let done = parser.finish(&mut |e| dec.on_event(e, &mut out));
        assert!(done.is_ok());
        let response = dec.finish().unwrap_or_else(|e| panic!("{e}"));
        best = best.min(start.elapsed());
        calls = response.message.tool_calls().count();
        assert!(response.message.tool_calls().all(|c| c.input.is_object()));
    }
    let mb = body.len() as f64 / (1024.0 * 1024.0);
    println!(
        "  SSE decode + tool-argument assembly ({name}, {mb:.1} MB, {calls} calls): {:.0} MB/s (target > 200 MB/s)",
        mb / best.as_secs_f64()
    );
}

struct Noop;

#[derive(Deserialize, JsonSchema)]
struct NoopArgs {
    /// Anything.
    #[allow(dead_code)]
    n: u64,
}

impl TypedTool for Noop {
    type Args = NoopArgs;
    const NAME: &'static str = "noop";
    const DESCRIPTION: &'static str = "Does nothing.";
    const MUTATES: bool = false;

    async fn run(&self, _args: NoopArgs, _ctx: &ToolContext) -> Result<String, ToolError> {
        Ok("ok".into())
    }
}

#[derive(Clone, Copy, PartialEq, Debug)]
enum Persistence {
    /// An in-memory database: the loop's own cost.
    Memory,
    /// A database file in the temp dir: what a user's session pays per step, durability
    /// included (two committed transactions per step).
    File,
}

fn agent_step_overhead(persistence: Persistence) {
    const TURNS: usize = 100;
    const STEPS: usize = 10;
    let mut turns = Vec::new();
    for t in 0..TURNS {
        for s in 0..STEPS - 1 {
            turns.push(ScriptTurn {
                tool_calls: vec![ScriptToolCall {
                    name: "noop".into(),
                    arguments: serde_json::json!({ "n": t * STEPS + s }),
                    ..Default::default()
                }],
                ..Default::default()
            });
        }
        turns.push(ScriptTurn {
            text: Some("done".into()),
            ..Default::default()
        });
    }
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap_or_else(|e| panic!("{e}"));
    let elapsed = runtime.block_on(async {
        let dir = std::env::temp_dir();
        let mut tools = ToolRegistry::new();
        tools.register(Noop);
        let settings = SessionSettings {
            max_steps: 1000,
            ..SessionSettings::from_config(dir, "bench".into(), &Config::default())
        };
        let db = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let store = match persistence {
            Persistence::Memory => Store::open_in_memory(),
            Persistence::File => Store::open(&db.path().join("bench.db")),
        }
        .unwrap_or_else(|e| panic!("{e}"));
        let chain = scripted::chain(
            Script {
                turns,
                ..Script::default()
            },
            100_000,
        );
        let session = Session::create(settings, chain, tools, store, None)
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        let mut handle = mnemo::agent::spawn(session);
        let start = Instant::now();
        for t in 0..TURNS {
            let sent = handle.ops.send(Op::user_input(format!("turn {t}"))).await;
            assert!(sent.is_ok());
            while let Some(event) = handle.events.recv().await {
                if matches!(event, Event::TurnFinished { .. }) {
                    break;
                }
            }
        }
        start.elapsed()
    });
    println!(
        "  agent-loop overhead per step (scripted provider, no-op tool, {persistence:?} store, every message persisted, {} steps, {} messages): {:.1} µs (target < 200 µs)",
        TURNS * STEPS,
        TURNS * (STEPS * 2),
        elapsed.as_secs_f64() * 1e6 / (TURNS * STEPS) as f64
    );
}

#[expect(
    clippy::zombie_processes,
    reason = "the child is reaped by wait4, which also reads its rusage"
)]
fn run_peak_rss() {
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    std::fs::write(dir.path().join("notes.txt"), "hello\n").unwrap_or_else(|e| panic!("{e}"));
    let script = serde_json::json!({"turns": [
        {"tool_calls": [{"name": "read_file", "arguments": {"path": "notes.txt"}}]},
        {"text": "The file says hello."}
    ]});
    let script_path = dir.path().join("script.json");
    std::fs::write(&script_path, script.to_string()).unwrap_or_else(|e| panic!("{e}"));
    let child = Command::new(BIN)
        .args(["run", "--model"])
        .arg(format!("scripted:{}", script_path.display()))
        .arg("read notes.txt")
        .current_dir(dir.path())
        .env("MNEMO_CONFIG_DIR", dir.path().join("cfg"))
        .env("MNEMO_DATA_DIR", dir.path().join("data"))
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap_or_else(|e| panic!("{e}"));
    let pid = libc::pid_t::try_from(child.id()).unwrap_or_else(|e| panic!("{e}"));
    // SAFETY: wait4 only writes the exit status and the child's resource usage into the
    // locals we pass; the child is ours and not waited for elsewhere.
    let (status, usage) = unsafe {
        let mut status = 0;
        let mut usage: libc::rusage = std::mem::zeroed();
        libc::wait4(pid, &mut status, 0, &mut usage);
        (status, usage)
    };
    assert!(libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0);
    println!(
        "  peak RSS of `mnemo run` on a short scripted task: {:.1} MB (target < 20 MB)",
        usage.ru_maxrss as f64 / 1024.0
    );
    let _ = std::io::stdout().flush();
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}
