//! Tests of `archive.rs`, including the FTS triggers (checked with MATCH queries).

use serde_json::json;

use super::*;
use crate::llm::Role;
use crate::memory::test_support::{new_entry, new_session};

type TestResult = Result<(), Box<dyn std::error::Error>>;

fn db_with_session() -> Result<Db, StoreError> {
    let mut db = Db::open_in_memory()?;
    db.create_session(new_session("s1", "/w"))?;
    Ok(db)
}

/// Archive ids whose index entry matches `expression`, straight from FTS5.
fn fts_ids(db: &Db, expression: &str) -> Result<Vec<i64>, StoreError> {
    let mut stmt = db
        .conn
        .prepare("SELECT rowid FROM archive_fts WHERE archive_fts MATCH ?1 ORDER BY rowid")?;
    let ids = stmt
        .query_map([expression], |row| row.get(0))?
        .collect::<Result<Vec<_>, _>>()?;
    Ok(ids)
}

/// FTS5's own check that the index matches the content table.
fn assert_index_consistent(db: &Db) -> Result<(), StoreError> {
    db.conn.execute(
        "INSERT INTO archive_fts(archive_fts, rank) VALUES ('integrity-check', 1)",
        [],
    )?;
    Ok(())
}

#[test]
fn an_entry_round_trips_with_its_messages() -> TestResult {
    let mut db = db_with_session()?;
    let mut entry = new_entry("s1", "deploy", "deploy to staging", (1, 4));
    entry
        .messages
        .push(Message::assistant(vec![ContentBlock::Text {
            text: "done".to_owned(),
        }]));
    entry.importance = 0.75;
    let id = db.archive_messages(entry.clone())?;
    let stored = db.archive_entry(id)?;
    assert_eq!(stored.messages, entry.messages);
    assert_eq!(stored.messages[1].role, Role::Assistant);
    assert_eq!(
        (stored.topic.as_str(), stored.summary.as_str()),
        ("deploy", "summary of deploy")
    );
    assert_eq!(stored.session_id.as_deref(), Some("s1"));
    assert_eq!((stored.first_seq, stored.last_seq), (1, 4));
    assert_eq!((stored.importance, stored.token_count), (0.75, 10));
    assert_eq!(db.archive_count()?, 1);
    assert!(matches!(
        db.archive_entry(id + 1),
        Err(StoreError::NotFound { .. })
    ));
    Ok(())
}

#[test]
fn a_failed_archive_changes_nothing() -> TestResult {
    let mut db = db_with_session()?;
    let m = Message::user_text("x");
    db.append_messages("s1", &[(1, &m, 1)])?;
    let result = db.archive_messages(new_entry("missing-session", "t", "x", (1, 1)));
    assert!(result.is_err());
    assert_eq!(db.archive_count()?, 0);
    assert_eq!(db.count_active("s1")?, 1);
    Ok(())
}

#[test]
fn the_index_covers_topic_summary_text_tool_inputs_and_results_but_not_thinking() -> TestResult {
    let mut db = db_with_session()?;
    let mut entry = new_entry("s1", "walrus", "a user asks about quokka", (1, 2));
    entry.messages.push(Message::assistant(vec![
        ContentBlock::Thinking {
            thinking: "secretive pangolin".to_owned(),
            signature: None,
        },
        ContentBlock::ToolUse {
            id: "t".to_owned(),
            name: "fs_read".to_owned(),
            input: json!({"path": "src/narwhal.rs", "limit": 4}),
        },
    ]));
    entry.messages.push(Message {
        role: Role::User,
        content: vec![ContentBlock::ToolResult {
            tool_use_id: "t".to_owned(),
            content: "fn axolotl() {}".to_owned(),
            is_error: false,
        }],
    });
    let id = db.archive_messages(entry)?;
    for word in [
        "walrus", "summary", "quokka", "narwhal", "axolotl", "fs_read",
    ] {
        assert_eq!(fts_ids(&db, &format!("\"{word}\""))?, vec![id], "{word}");
    }
    assert!(fts_ids(&db, "pangolin")?.is_empty());
    assert!(fts_ids(&db, "path")?.is_empty());
    // Porter stemming: another form of the word matches.
    assert_eq!(fts_ids(&db, "asking")?, vec![id]);
    assert_index_consistent(&db)?;
    Ok(())
}

#[test]
fn triggers_keep_the_index_in_sync_through_update_and_delete() -> TestResult {
    let mut db = db_with_session()?;
    let first = db.archive_messages(new_entry("s1", "giraffe", "body one", (1, 1)))?;
    let second = db.archive_messages(new_entry("s1", "giraffe too", "body two", (2, 2)))?;
    assert_eq!(fts_ids(&db, "giraffe")?, vec![first, second]);

    db.update_archive_summary(first, "okapi", "a striped relative")?;
    assert_eq!(fts_ids(&db, "giraffe")?, vec![second]);
    assert_eq!(fts_ids(&db, "okapi")?, vec![first]);
    assert_eq!(fts_ids(&db, "striped")?, vec![first]);
    assert_eq!(fts_ids(&db, "body")?, vec![first, second]);
    assert_eq!(db.archive_entry(first)?.topic, "okapi");

    db.delete_archive(first)?;
    assert!(fts_ids(&db, "okapi")?.is_empty());
    assert_eq!(fts_ids(&db, "body")?, vec![second]);
    assert!(matches!(
        db.delete_archive(first),
        Err(StoreError::NotFound { .. })
    ));
    assert!(matches!(
        db.update_archive_summary(first, "a", "b"),
        Err(StoreError::NotFound { .. })
    ));
    assert_index_consistent(&db)?;
    Ok(())
}

#[test]
fn archive_many_writes_every_entry_in_order() -> TestResult {
    let mut db = db_with_session()?;
    let entries = vec![
        new_entry("s1", "one", "alpha", (1, 1)),
        new_entry("s1", "two", "beta", (2, 2)),
    ];
    let ids = db.archive_many(&entries)?;
    assert_eq!(ids.len(), 2);
    assert_eq!(db.archive_entry(ids[1])?.topic, "two");
    assert_eq!(fts_ids(&db, "beta")?, vec![ids[1]]);
    Ok(())
}

#[test]
fn searchable_text_joins_text_tool_values_and_results() {
    let messages = vec![Message::assistant(vec![
        ContentBlock::Text {
            text: "hello".to_owned(),
        },
        ContentBlock::ToolUse {
            id: "1".to_owned(),
            name: "shell".to_owned(),
            input: json!({"command": "ls -la", "args": ["x", 3, true, null]}),
        },
    ])];
    assert_eq!(searchable_text(&messages), "hello\nshell\nx\n3\nls -la");
}
