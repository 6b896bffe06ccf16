//! Kill `mnemo run` with SIGKILL mid-task at several points: the database stays intact, every
//! message the run reported as complete is stored, and `--resume` continues the session.

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};

use mnemo::memory::Db;
use mnemo::protocol::Event;
use serde_json::json;

type TestResult = Result<(), Box<dyn std::error::Error>>;

fn mnemo(ws: &Path, db: &Path, args: &[&str]) -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_mnemo"));
    cmd.arg("--db")
        .arg(db)
        .args(args)
        .current_dir(ws)
        .env("MNEMO_CONFIG_DIR", ws.join(".cfg"))
        .env("MNEMO_DATA_DIR", ws.join(".data"))
        .stdin(Stdio::null())
        .stderr(Stdio::null());
    cmd
}

/// A long task: each step streams a little text, then runs a shell command.
fn long_script(ws: &Path) -> Result<String, std::io::Error> {
    let turns: Vec<_> = (0..40)
        .map(|i| {
            json!({"chunks": [format!("step {i} "), "working"], "delay_ms": 15,
                   "tool_calls": [{"name": "shell", "arguments": {"command": format!("sleep 0.02; echo {i}")}}]})
        })
        .collect();
    let path = ws.join("long.json");
    std::fs::write(&path, json!({ "turns": turns }).to_string())?;
    Ok(format!("scripted:{}", path.display()))
}

/// Reads `--json` events until `kills_after` assistant messages were reported, then kills.
fn run_and_kill(mut child: Child, kills_after: usize) -> Result<usize, Box<dyn std::error::Error>> {
    let stdout = child.stdout.take().ok_or("no stdout")?;
    let mut seen = 0;
    for line in BufReader::new(stdout).lines() {
        let event: Event = serde_json::from_str(&line?)?;
        if matches!(event, Event::AssistantMessage { .. }) {
            seen += 1;
            if seen == kills_after {
                break;
            }
        }
    }
    child.kill()?;
    child.wait()?;
    Ok(seen)
}

#[test]
fn sigkill_at_any_point_loses_no_completed_message_and_resume_continues() -> TestResult {
    for kills_after in [1, 4, 9] {
        let dir = tempfile::tempdir()?;
        let ws = dir.path();
        let db_path = ws.join("mnemo.db");
        let model = long_script(ws)?;
        let child = mnemo(
            ws,
            &db_path,
            &["--model", &model, "run", "--json", "do the long task"],
        )
        .stdout(Stdio::piped())
        .spawn()?;
        let reported = run_and_kill(child, kills_after)?;
        assert_eq!(reported, kills_after);

        let conn = rusqlite::Connection::open(&db_path)?;
        let check: String = conn.query_row("PRAGMA integrity_check", [], |r| r.get(0))?;
        assert_eq!(check, "ok");
        drop(conn);

        let db = Db::open(&db_path)?;
        let sessions = db.list_sessions(None, 10)?;
        assert_eq!(sessions.len(), 1);
        let id = sessions[0].id.clone();
        let stored = db.all_messages(&id)?;
        let assistant = stored
            .iter()
            .filter(|m| m.message.role == mnemo::llm::Role::Assistant)
            .count();
        assert!(
            assistant >= reported,
            "{assistant} stored < {reported} reported"
        );
        assert_eq!(stored[0].message.text(), "do the long task");
        for (i, m) in stored.iter().enumerate() {
            assert_eq!(m.seq, i as i64, "sequence numbers have no gaps");
        }
        drop(db);

        let finish = ws.join("finish.json");
        std::fs::write(
            &finish,
            json!({"turns": [{"text": "Picked up where I left off."}]}).to_string(),
        )?;
        let out = mnemo(
            ws,
            &db_path,
            &[
                "--model",
                &format!("scripted:{}", finish.display()),
                "run",
                "--resume",
                &id,
                "continue",
            ],
        )
        .stdout(Stdio::piped())
        .output()?;
        assert!(
            out.status.success(),
            "resume failed after kill at {kills_after}"
        );
        assert_eq!(
            String::from_utf8_lossy(&out.stdout).trim(),
            "Picked up where I left off."
        );
        let db = Db::open(&db_path)?;
        let after = db.all_messages(&id)?;
        assert!(after.len() >= stored.len() + 2);
        assert_eq!(
            after.last().map(|m| m.message.text()),
            Some("Picked up where I left off.".into())
        );
    }
    Ok(())
}
