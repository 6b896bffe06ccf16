//! Tests of `schedules.rs`: schedules, run claims, kept runs and per-workspace limits.

use super::*;

type TestResult = Result<(), Box<dyn std::error::Error>>;

#[test]
fn schedules_are_stored_listed_and_removed_with_their_run_record() -> TestResult {
    let mut db = Db::open_in_memory()?;
    let new = |when| NewSchedule {
        session_id: None,
        workspace: "/w".into(),
        when,
        prompt: "check the build".into(),
        deliver: Vec::new(),
        rights: MakerRights::default(),
    };
    let cron = db.create_schedule(&new(StoredWhen::Cron("0 9 * * *".into())))?;
    let every = StoredWhen::Every {
        secs: 7200,
        first: 5,
    };
    let interval = db.create_schedule(&new(every.clone()))?;
    let once = db.create_schedule(&new(StoredWhen::Once(42)))?;
    let listed = db.list_schedules()?;
    let whens: Vec<_> = listed.iter().map(|s| s.when.clone()).collect();
    assert_eq!(
        whens,
        [
            StoredWhen::Cron("0 9 * * *".into()),
            every,
            StoredWhen::Once(42)
        ]
    );
    let key = schedule_job_key(interval.id);
    assert!(db.claim_job_run(&key, Some(interval.id), (None, None), 100, 4242)?);
    let run = db.job_runs()?;
    assert_eq!(
        (run[0].last_run, run[0].running),
        (Some(100), Some((100, 4242)))
    );
    db.job_finished(&key, "completed", Some("s1"))?;
    let run = db.job_runs()?;
    assert_eq!(run[0].running, None);
    assert_eq!(run[0].last_status.as_deref(), Some("completed"));
    assert!(db.delete_schedule(interval.id)?);
    assert!(!db.delete_schedule(interval.id)?);
    assert!(db.job_runs()?.is_empty());
    assert_eq!(db.list_schedules()?.len(), 2);
    assert!(matches!(
        db.schedule(once.id + 1),
        Err(StoreError::NotFound { .. })
    ));
    assert_eq!(db.schedule(cron.id)?.prompt, "check the build");
    Ok(())
}

#[test]
fn a_job_keeps_its_newest_runs_and_the_older_ones_go_with_their_messages() -> TestResult {
    use crate::memory::test_support::{new_entry, new_session};
    let mut db = Db::open_in_memory()?;
    let said = crate::llm::Message::user_text("check the disk");
    db.create_session(new_session("mine", "/w"))?;
    db.append_messages("mine", &[(1, &said, 3)])?;
    for run in 1..=5 {
        let id = format!("run{run}");
        db.create_session(new_session(&id, "/w"))?;
        db.append_messages(&id, &[(1, &said, 3), (2, &said, 3)])?;
        db.archive_messages(new_entry(&id, "disk", "disk at 91 percent", (1, 2)))?;
        db.job_finished("heartbeat:disk", "reported", Some(&id))?;
    }
    let count = |db: &Db, sql: &str| -> Result<i64, rusqlite::Error> {
        db.conn.query_row(sql, [], |row| row.get(0))
    };
    assert_eq!(count(&db, "SELECT count(*) FROM messages")?, 11);
    let people: Vec<String> = db
        .people_sessions(None, 50)?
        .into_iter()
        .map(|s| s.id)
        .collect();
    assert_eq!(people, ["mine"], "runs stay out of people's lists");
    assert_eq!(db.list_sessions(None, 50)?.len(), 6);

    // Someone went on with the first run: it is theirs now.
    db.conn.execute(
        "UPDATE sessions SET updated_at = updated_at + 60000 WHERE id = 'run1'",
        [],
    )?;
    assert_eq!(db.prune_job_runs("heartbeat:disk", 2)?, 2);
    let mut left: Vec<String> = db
        .list_sessions(None, 50)?
        .into_iter()
        .map(|s| s.id)
        .collect();
    left.sort();
    assert_eq!(left, ["mine", "run1", "run4", "run5"]);
    let people: Vec<String> = db
        .people_sessions(None, 50)?
        .into_iter()
        .map(|s| s.id)
        .collect();
    assert_eq!(people, ["run1", "mine"]);
    assert_eq!(count(&db, "SELECT count(*) FROM messages")?, 7);
    let indexed = "SELECT count(*) FROM archive_fts WHERE archive_fts MATCH 'percent'";
    assert_eq!(count(&db, indexed)?, 3);
    assert_eq!(db.prune_job_runs("heartbeat:disk", 2)?, 0);
    assert_eq!(db.prune_job_runs("heartbeat:other", 1)?, 0);
    Ok(())
}

#[test]
fn a_run_is_claimed_once_and_never_for_a_schedule_that_is_gone() -> TestResult {
    let mut db = Db::open_in_memory()?;
    let once = db.create_schedule(&NewSchedule {
        session_id: None,
        workspace: "/w".into(),
        when: StoredWhen::Once(42),
        prompt: "once".into(),
        deliver: Vec::new(),
        rights: MakerRights::default(),
    })?;
    let key = schedule_job_key(once.id);
    // Two daemons loaded the same record; the first claim wins, the second finds it changed.
    assert!(db.claim_job_run(&key, Some(once.id), (None, None), 100, 1)?);
    assert!(!db.claim_job_run(&key, Some(once.id), (None, None), 100, 2)?);
    db.job_finished(&key, "reported", None)?;
    assert!(db.delete_schedule(once.id)?);
    // A daemon that saw it before it ran and was removed cannot run it again.
    assert!(!db.claim_job_run(&key, Some(once.id), (None, None), 200, 2)?);
    assert!(db.job_runs()?.is_empty());
    // A heartbeat (no schedule) is claimed against what was seen of its record.
    assert!(db.claim_job_run("heartbeat:x", None, (None, None), 300, 1)?);
    db.job_finished("heartbeat:x", "quiet", None)?;
    assert!(db.claim_job_run("heartbeat:x", None, (Some(300), None), 400, 2)?);
    assert!(!db.claim_job_run("heartbeat:x", None, (Some(300), None), 400, 3)?);
    Ok(())
}

#[test]
fn schedules_are_counted_per_workspace_and_old_rows_get_the_least_rights() -> TestResult {
    let mut db = Db::open_in_memory()?;
    let new = |workspace: &str| NewSchedule {
        session_id: None,
        workspace: workspace.into(),
        when: StoredWhen::Once(42),
        prompt: "p".into(),
        deliver: Vec::new(),
        rights: MakerRights {
            approval: ApprovalMode::Ask,
            sandbox: SandboxPolicy::WorkspaceWrite,
            network: true,
            trusted: true,
        },
    };
    let kept = db.create_schedule_within(&new("/a"), 2)?;
    assert_eq!(kept.map(|row| row.rights), Some(new("/a").rights));
    assert!(db.create_schedule_within(&new("/a"), 2)?.is_some());
    assert!(db.create_schedule_within(&new("/a"), 2)?.is_none());
    assert!(db.create_schedule_within(&new("/b"), 2)?.is_some());
    assert_eq!(db.schedules_in("/a")?.len(), 2);
    db.conn.execute_batch(
        "INSERT INTO schedules(created_at, workspace, at, prompt) VALUES (1, '/c', 5, 'old')",
    )?;
    let old = db.schedules_in("/c")?;
    assert_eq!(old[0].rights, MakerRights::default());
    assert_eq!(old[0].rights.approval, ApprovalMode::ReadOnly);
    Ok(())
}

#[test]
fn a_session_knows_whether_it_made_a_schedule() -> TestResult {
    let mut db = Db::open_in_memory()?;
    db.create_session(crate::memory::test_support::new_session("s1", "/w"))?;
    assert!(!db.session_has_schedules("s1")?);
    let row = db.create_schedule(&NewSchedule {
        session_id: Some("s1".into()),
        workspace: "/w".into(),
        when: StoredWhen::Once(1),
        prompt: "stretch".into(),
        deliver: Vec::new(),
        rights: MakerRights::default(),
    })?;
    assert!(db.session_has_schedules("s1")?);
    assert!(!db.session_has_schedules("s2")?);
    db.delete_schedule(row.id)?;
    assert!(!db.session_has_schedules("s1")?);
    Ok(())
}
