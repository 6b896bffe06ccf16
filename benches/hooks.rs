//! Hooks benchmark for the hooks item of issue 34 (`cargo bench --bench hooks`): what a hook
//! that does nothing (`exit 0`) adds to a tool call, as the tool path pays it: the PreToolUse
//! hooks' run (matching, the input's JSON, `sh -c`, reading its answer), against a session with
//! no hooks. Median of 200 runs each, alternated, after a warm-up.

use std::error::Error;
use std::time::{Duration, Instant};

use mnemo::hooks::{HookCommand, HookEvent, Hooks, HooksConfig, MatcherGroup};
use mnemo::protocol::ApprovalMode;
use serde_json::{Map, Value, json};

type BenchResult<T = ()> = Result<T, Box<dyn Error>>;

const RUNS: usize = 200;
const WARM_UP: usize = 10;
const TARGET_MS: f64 = 5.0;

fn hooks(workspace: &std::path::Path, configured: bool) -> Hooks {
    let mut config = HooksConfig::new();
    if configured {
        let group = MatcherGroup {
            matcher: Some("Bash".into()),
            hooks: vec![HookCommand {
                kind: "command".into(),
                command: "exit 0".into(),
                timeout: None,
            }],
        };
        config.insert("PreToolUse".into(), vec![group]);
    }
    Hooks::build(workspace.to_path_buf(), &[("bench".into(), config)]).0
}

async fn one_call(hooks: &Hooks) -> Duration {
    let started = Instant::now();
    if hooks.has(HookEvent::PreToolUse) {
        let mut fields = Map::new();
        fields.insert("tool_name".into(), "Bash".into());
        fields.insert("tool_input".into(), json!({"command": "cargo test"}));
        fields.insert("tool_use_id".into(), Value::String("call-1".into()));
        let outcome = hooks
            .run(
                HookEvent::PreToolUse,
                &["shell", "Bash"],
                "bench",
                ApprovalMode::Auto,
                fields,
            )
            .await;
        assert!(outcome.permission.is_none() && outcome.notes.is_empty());
    }
    started.elapsed()
}

fn median(mut times: Vec<Duration>) -> f64 {
    times.sort();
    times[times.len() / 2].as_secs_f64() * 1000.0
}

fn main() -> BenchResult {
    println!("mnemo hooks benchmarks");
    let dir = tempfile::tempdir()?;
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    let (none, one) = (hooks(dir.path(), false), hooks(dir.path(), true));
    let (mut bare, mut hooked) = (Vec::new(), Vec::new());
    runtime.block_on(async {
        for _ in 0..WARM_UP {
            one_call(&one).await;
        }
        for _ in 0..RUNS {
            bare.push(one_call(&none).await);
            hooked.push(one_call(&one).await);
        }
    });
    let added = median(hooked) - median(bare);
    let verdict = if added < TARGET_MS { "ok" } else { "OVER" };
    println!(
        "a PreToolUse hook that does nothing adds {added:.2} ms to a tool call (median of {RUNS}; \
         target < {TARGET_MS} ms): {verdict}"
    );
    Ok(())
}
