//! Tests of `messages.rs`.

use serde_json::json;

use super::*;
use crate::memory::test_support::{new_entry, new_session};

type TestResult = Result<(), Box<dyn std::error::Error>>;

fn db_with_session() -> Result<Db, StoreError> {
    let mut db = Db::open_in_memory()?;
    db.create_session(new_session("s1", "/w"))?;
    Ok(db)
}

#[test]
fn appended_messages_come_back_in_order_with_all_blocks() -> TestResult {
    let mut db = db_with_session()?;
    let user = Message::user_text("list files");
    let assistant = Message::assistant(vec![
        ContentBlock::Thinking {
            thinking: "hmm".to_owned(),
            signature: Some("sig".to_owned()),
        },
        ContentBlock::ToolUse {
            id: "t1".to_owned(),
            name: "shell".to_owned(),
            input: json!({"command": "ls"}),
        },
    ]);
    db.append_messages("s1", &[(2, &assistant, 9)])?;
    db.append_messages("s1", &[(1, &user, 3)])?;
    let stored = db.active_messages("s1")?;
    assert_eq!(stored.len(), 2);
    assert_eq!(
        (stored[0].seq, &stored[0].message, stored[0].tokens),
        (1, &user, 3)
    );
    assert_eq!((stored[1].seq, &stored[1].message), (2, &assistant));
    assert!(stored.iter().all(|m| m.active));
    assert_eq!(db.max_seq("s1")?, Some(2));
    assert_eq!(db.max_seq("other")?, None);
    assert_eq!(db.count_active("s1")?, 2);
    Ok(())
}

#[test]
fn appending_bumps_the_session_and_refuses_unknown_sessions_and_duplicates() -> TestResult {
    let mut db = db_with_session()?;
    let before = db.session("s1")?.updated_at;
    std::thread::sleep(std::time::Duration::from_millis(3));
    let m = Message::user_text("x");
    db.append_messages("s1", &[(1, &m, 1)])?;
    assert!(db.session("s1")?.updated_at > before);
    assert!(matches!(
        db.append_messages("nope", &[(1, &m, 1)]),
        Err(StoreError::NotFound { .. })
    ));
    // A duplicate seq fails the whole batch.
    assert!(db.append_messages("s1", &[(2, &m, 1), (1, &m, 1)]).is_err());
    assert_eq!(db.max_seq("s1")?, Some(1));
    Ok(())
}

#[test]
fn archived_messages_leave_the_working_set_but_stay_in_the_session() -> TestResult {
    let mut db = db_with_session()?;
    let m = Message::user_text("x");
    let batch: Vec<(i64, &Message, u32)> = (1..=6).map(|seq| (seq, &m, 1)).collect();
    db.append_messages("s1", &batch)?;
    db.archive_messages(new_entry("s1", "first half", "x", (1, 3)))?;
    let active: Vec<i64> = db.active_messages("s1")?.iter().map(|m| m.seq).collect();
    assert_eq!(active, vec![4, 5, 6]);
    assert_eq!(db.count_active("s1")?, 3);
    let all = db.all_messages("s1")?;
    assert_eq!(all.len(), 6);
    assert!(!all[0].active && all[5].active);
    assert_eq!(db.session("s1")?.message_count, 6);
    Ok(())
}

#[test]
fn turns_are_recorded_and_totalled_and_dead_ones_marked_killed() -> TestResult {
    let mut db = db_with_session()?;
    db.begin_turn("s1", 1, 100)?;
    let usage = Usage {
        input_tokens: 10,
        output_tokens: 5,
        cache_read_tokens: 2,
        cache_write_tokens: 1,
    };
    let record = TurnRecord {
        session_id: "s1".to_owned(),
        turn: 1,
        status: TurnStatus::Completed,
        started_at: 100,
        finished_at: 200,
        usage,
        cost_usd: 0.25,
        report: Some(json!({"topic": "setup"})),
    };
    db.finish_turn(&record)?;
    db.finish_turn(&TurnRecord {
        turn: 2,
        status: TurnStatus::Interrupted,
        ..record.clone()
    })?;
    db.begin_turn("s1", 3, 300)?;
    let totals = db.session_totals("s1")?;
    assert_eq!(totals.turns, 2);
    assert_eq!(totals.usage.input_tokens, 20);
    assert_eq!(totals.usage.cache_write_tokens, 2);
    assert!((totals.cost_usd - 0.5).abs() < 1e-12);

    assert_eq!(db.mark_running_turns_killed("s1")?, 1);
    assert_eq!(db.mark_running_turns_killed("s1")?, 0);
    assert_eq!(db.session_totals("s1")?.turns, 3);
    let status: String = db.conn.query_row(
        "SELECT status FROM turns WHERE session_id = 's1' AND turn = 3",
        [],
        |r| r.get(0),
    )?;
    assert_eq!(status, TURN_KILLED);
    Ok(())
}
