//! Tests of `sessions.rs`.

use super::*;
use crate::llm::Message;
use crate::memory::recall::RecallScope;
use crate::memory::test_support::{new_entry, new_session};

type TestResult = Result<(), Box<dyn std::error::Error>>;

#[test]
fn a_created_session_is_found_by_id_and_by_unique_prefix() -> TestResult {
    let mut db = Db::open_in_memory()?;
    let created = db.create_session(new_session("abcdef-1", "/w"))?;
    db.create_session(new_session("abcxyz-2", "/w"))?;
    assert_eq!(created.status, NEW_SESSION_STATUS);
    assert_eq!(db.session("abcdef-1")?, created);
    assert_eq!(db.session("abcd")?.id, "abcdef-1");
    Ok(())
}

#[test]
fn prefixes_that_are_short_ambiguous_or_unknown_are_refused_with_a_reason() -> TestResult {
    let mut db = Db::open_in_memory()?;
    db.create_session(new_session("abcdef-1", "/w"))?;
    db.create_session(new_session("abcdxy-2", "/w"))?;
    let err = |r: Result<SessionRow, StoreError>| r.err().map(|e| e.to_string());
    assert_eq!(
        err(db.session("abcd")).as_deref(),
        Some("`abcd` matches 2 sessions; type more of the id")
    );
    assert!(matches!(
        db.session("abc"),
        Err(StoreError::PrefixTooShort { .. })
    ));
    assert_eq!(
        err(db.session("zzzz")).as_deref(),
        Some("no session matches `zzzz`")
    );
    Ok(())
}

#[test]
fn listing_is_newest_update_first_per_directory_with_message_counts() -> TestResult {
    let mut db = Db::open_in_memory()?;
    db.create_session(new_session("s-old", "/w"))?;
    db.create_session(new_session("s-other", "/elsewhere"))?;
    db.create_session(new_session("s-new", "/w"))?;
    std::thread::sleep(std::time::Duration::from_millis(3));
    let hello = Message::user_text("hello");
    db.append_messages("s-old", &[(1, &hello, 2), (2, &hello, 2)])?;
    let ids = |rows: Vec<SessionRow>| rows.into_iter().map(|r| r.id).collect::<Vec<_>>();
    assert_eq!(
        ids(db.list_sessions(Some("/w"), 10)?),
        vec!["s-old", "s-new"]
    );
    assert_eq!(db.list_sessions(None, 10)?.len(), 3);
    assert_eq!(db.list_sessions(None, 1)?.len(), 1);
    assert_eq!(db.list_sessions(Some("/w"), 10)?[0].message_count, 2);
    assert_eq!(
        db.latest_session("/w")?.map(|r| r.id).as_deref(),
        Some("s-old")
    );
    assert_eq!(db.latest_session("/nowhere")?, None);
    Ok(())
}

#[test]
fn children_are_listed_under_their_parent_only() -> TestResult {
    let mut db = Db::open_in_memory()?;
    db.create_session(new_session("parent", "/w"))?;
    let mut child = new_session("child", "/w");
    child.parent_id = Some("parent".to_owned());
    db.create_session(child)?;
    let children = db.child_sessions("parent")?;
    assert_eq!(children.len(), 1);
    assert_eq!(children[0].parent_id.as_deref(), Some("parent"));
    let top: Vec<String> = db
        .list_sessions(None, 10)?
        .into_iter()
        .map(|r| r.id)
        .collect();
    assert_eq!(top, vec!["parent"]);
    Ok(())
}

#[test]
fn title_subtitle_and_status_are_updated_and_unknown_ids_reported() -> TestResult {
    let mut db = Db::open_in_memory()?;
    db.create_session(new_session("s1", "/w"))?;
    db.rename_session("s1", "new title")?;
    db.set_subtitle("s1", Some("debugging"))?;
    db.set_status("s1", "idle")?;
    let row = db.session("s1")?;
    assert_eq!(
        (
            row.title.as_str(),
            row.subtitle.as_deref(),
            row.status.as_str()
        ),
        ("new title", Some("debugging"), "idle")
    );
    db.set_subtitle("s1", None)?;
    assert_eq!(db.session("s1")?.subtitle, None);
    assert!(matches!(
        db.rename_session("nope", "x"),
        Err(StoreError::NotFound { .. })
    ));
    Ok(())
}

#[test]
fn deleting_a_session_removes_its_messages_turns_archive_state_and_sub_agent_sessions() -> TestResult
{
    let mut db = Db::open_in_memory()?;
    db.create_session(new_session("gone", "/w"))?;
    db.create_session(new_session("kept", "/w"))?;
    let text = Message::user_text("zebra migration notes");
    for id in ["gone", "kept"] {
        db.append_messages(id, &[(1, &text, 3), (2, &text, 3)])?;
        db.begin_turn(id, 1, 5)?;
        db.archive_messages(new_entry(id, "zebra", "zebra migration notes", (1, 1)))?;
    }
    // A sub-agent session and its own sub-agent go with their parent.
    let mut child = new_session("child", "/w");
    child.parent_id = Some("gone".to_owned());
    db.create_session(child)?;
    let mut grandchild = new_session("grandchild", "/w");
    grandchild.parent_id = Some("child".to_owned());
    db.create_session(grandchild)?;
    db.archive_messages(new_entry("grandchild", "zebra", "zebra deep notes", (1, 1)))?;
    for id in ["gone", "grandchild", "kept"] {
        db.kv_set(&super::todo_key(id), "[]")?;
        db.kv_set(&super::summary_key(id), "a summary")?;
    }

    db.delete_session("gone")?;
    // Its state (summary, plan, instruction files had) goes too; another session's stays.
    for id in ["gone", "grandchild"] {
        assert_eq!(db.kv_get(&super::todo_key(id))?, None);
        assert_eq!(db.kv_get(&super::summary_key(id))?, None);
    }
    assert_eq!(db.kv_get(&super::todo_key("kept"))?.as_deref(), Some("[]"));
    assert!(matches!(
        db.session("gone"),
        Err(StoreError::NotFound { .. })
    ));
    assert!(db.all_messages("gone")?.is_empty());
    assert_eq!(db.archive_count()?, 1);
    let hits = db.recall("zebra", None, &RecallScope::everywhere(), 10)?;
    // The kept session's archive entry and its working message still in the working set.
    assert_eq!(hits.len(), 2, "{hits:#?}");
    assert!(hits.iter().all(|h| h.session_id.as_deref() == Some("kept")));
    let turns: i64 = db
        .conn
        .query_row("SELECT count(*) FROM turns", [], |r| r.get(0))?;
    assert_eq!(turns, 1);
    for id in ["child", "grandchild"] {
        assert!(matches!(db.session(id), Err(StoreError::NotFound { .. })));
    }
    assert_eq!(db.session("kept")?.id, "kept");
    assert!(matches!(
        db.delete_session("gone"),
        Err(StoreError::NotFound { .. })
    ));
    Ok(())
}
