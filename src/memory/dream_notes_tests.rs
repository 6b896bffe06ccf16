//! Tests of `dream_notes.rs`: the cursor, versions, undo, and the paragraphs recall finds.

use super::*;
use crate::memory::piece_index::Source;
use crate::memory::recall::RecallScope;
use crate::memory::test_support::{new_entry, new_session};

type TestResult = Result<(), Box<dyn std::error::Error>>;

fn notes(memory: &str, user: &str) -> DreamNotes {
    DreamNotes {
        memory: memory.into(),
        user: user.into(),
    }
}

fn db_with_entries(count: i64) -> Result<Db, StoreError> {
    let mut db = Db::open_in_memory()?;
    db.create_session(new_session("s1", "/w"))?;
    for n in 0..count {
        db.archive_messages(new_entry("s1", &format!("t{n}"), "text", (n, n)))?;
    }
    Ok(db)
}

#[test]
fn dream_pending_counts_the_entries_after_the_cursor() -> TestResult {
    let mut db = db_with_entries(7)?;
    assert_eq!((db.dream_cursor()?, db.dream_pending()?), (0, 7));
    let batch = db.dream_entries(5)?;
    assert_eq!(
        batch.iter().map(|e| e.entry.id).collect::<Vec<_>>(),
        [1, 2, 3, 4, 5]
    );
    assert_eq!(batch[0].workspace.as_deref(), Some("/w"));
    db.save_notes(&notes("m", "u"), NotesOrigin::Dream, Some(5))?;
    assert_eq!((db.dream_cursor()?, db.dream_pending()?), (5, 2));
    assert_eq!(db.dream_entries(30)?.len(), 2);
    // A hand edit keeps the cursor where it is.
    db.save_notes(&notes("m2", "u"), NotesOrigin::Hand, None)?;
    assert_eq!(db.dream_cursor()?, 5);
    assert_eq!(db.current_notes()?.map(|v| v.cursor), Some(5));
    Ok(())
}

#[test]
fn dream_notes_undo_restores_the_previous_version_and_keeps_history() -> TestResult {
    let mut db = db_with_entries(2)?;
    let start = db.dream_notes_version()?;
    let first = db.save_notes(
        &notes("first memory", "first user"),
        NotesOrigin::Dream,
        Some(1),
    )?;
    let second = db.save_notes(&notes("second memory", "u"), NotesOrigin::Dream, Some(2))?;
    assert!(db.dream_notes_version()? > start);
    let before_undo = db.dream_notes_version()?;
    let restored = db.undo_notes()?.ok_or("nothing restored")?;
    assert_eq!(
        (restored.id, restored.notes.memory.as_str()),
        (first, "first memory")
    );
    assert!(db.dream_notes_version()? > before_undo);
    assert_eq!(db.current_notes()?.map(|v| v.id), Some(first));
    assert_eq!(
        db.dream_cursor()?,
        1,
        "what the undone dream read is dreamed again"
    );
    assert_eq!(db.dream_pending()?, 1);
    let history = db.notes_history()?;
    assert_eq!(
        history.iter().map(|v| (v.id, v.undone)).collect::<Vec<_>>(),
        [(second, true), (first, false)]
    );
    assert_eq!(db.undo_notes()?, None);
    assert_eq!(db.dream_cursor()?, 0);
    assert!(matches!(db.undo_notes(), Err(StoreError::NotFound { .. })));
    Ok(())
}

#[test]
fn dream_note_paragraphs_of_the_current_version_are_recalled() -> TestResult {
    let mut db = db_with_entries(1)?;
    db.save_notes(
        &notes(
            "## Build\n\n- the staging database listens on 6543",
            "- likes terse answers",
        ),
        NotesOrigin::Dream,
        Some(1),
    )?;
    let hits = db.recall(
        "staging database port",
        None,
        &RecallScope::workspace("/x"),
        5,
    )?;
    let hit = hits.first().ok_or("no hit")?;
    assert_eq!(hit.source, Source::Dream);
    assert_eq!(hit.topic, "dream note (MEMORY.md)");
    assert_eq!(hit.summary, "- the staging database listens on 6543");
    db.save_notes(
        &notes("- nothing about ports", "- likes terse answers"),
        NotesOrigin::Dream,
        Some(1),
    )?;
    let hits = db.recall("staging", None, &RecallScope::everywhere(), 5)?;
    assert!(hits.iter().all(|h| h.source != Source::Dream), "{hits:?}");
    let terse = db.recall("terse answers", None, &RecallScope::everywhere(), 5)?;
    assert_eq!(
        terse.first().map(|h| h.topic.as_str()),
        Some("dream note (USER.md)")
    );
    // Pieces for meaning search are asked for, stored, and go with their paragraph.
    assert_eq!(db.count_unembedded("m")?, 1 + 2);
    let nothing = db.recall("nothing about ports", None, &RecallScope::everywhere(), 1)?;
    let key = (Source::Dream, nothing.first().ok_or("no hit")?.id);
    db.store_pieces("m", key, &[vec![1.0, 0.0]])?;
    assert_eq!(db.count_unembedded("m")?, 1 + 1);
    db.undo_notes()?;
    let left: i64 = db.conn.query_row(
        "SELECT count(*) FROM memory_pieces WHERE source = 'dream'",
        [],
        |r| r.get(0),
    )?;
    assert_eq!(left, 0);
    Ok(())
}

#[test]
fn dream_experiences_span_every_scope_oldest_first() -> TestResult {
    let mut db = Db::open_in_memory()?;
    db.remember("global fact", &super::super::types::Scope::Global, "user")?;
    db.remember(
        "project fact",
        &super::super::types::Scope::Project("/p".into()),
        "user",
    )?;
    let found = db.dream_experiences(10)?;
    assert_eq!(
        found.iter().map(|e| e.text.as_str()).collect::<Vec<_>>(),
        ["global fact", "project fact"]
    );
    assert_eq!(db.dream_experiences(1)?[0].text, "project fact");
    Ok(())
}

#[test]
fn a_dream_note_paragraph_kept_unchanged_keeps_its_row_and_pieces() -> TestResult {
    let mut db = db_with_entries(1)?;
    let ids = |db: &Db| -> Result<Vec<(i64, String)>, StoreError> {
        let mut stmt = db
            .conn
            .prepare("SELECT id, text FROM dream_paragraphs ORDER BY id")?;
        let rows = stmt
            .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))?
            .collect::<Result<Vec<_>, _>>()?;
        Ok(rows)
    };
    db.save_notes(
        &notes("- kept\n\n- dropped", "- kept"),
        NotesOrigin::Dream,
        Some(1),
    )?;
    let before = ids(&db)?;
    assert_eq!(before.len(), 3);
    let kept = before[0].0;
    db.store_pieces("m", (Source::Dream, kept), &[vec![1.0, 0.0]])?;
    db.save_notes(
        &notes("- kept\n\n- added", "- kept"),
        NotesOrigin::Dream,
        Some(1),
    )?;
    let after = ids(&db)?;
    let texts: Vec<&str> = after.iter().map(|(_, t)| t.as_str()).collect();
    assert_eq!(texts, ["- kept", "- kept", "- added"]);
    assert_eq!(after[0].0, kept);
    assert_eq!(
        db.count_unembedded("m")?,
        1 + 2,
        "only the new paragraphs need vectors"
    );
    Ok(())
}
