use super::*;

type TestResult = Result<(), Box<dyn std::error::Error>>;

fn stats_of(db: &Db, name: &str) -> Result<SkillStats, StoreError> {
    db.skill_stats()?
        .into_iter()
        .find(|s| s.name == name)
        .ok_or(StoreError::NotFound {
            what: "skill",
            key: name.to_owned(),
        })
}

#[test]
fn a_learned_skill_records_where_it_was_written_and_a_patch_keeps_its_origin() -> TestResult {
    let mut db = Db::open_in_memory()?;
    db.skill_written("deploy", SkillOrigin::Learned, Some("s1"), Some(3))?;
    let first = stats_of(&db, "deploy")?;
    assert_eq!(
        (first.origin, first.session_id.as_deref(), first.turn),
        (SkillOrigin::Learned, Some("s1"), Some(3))
    );
    assert_eq!(
        (first.loads, first.last_used, first.suspect),
        (0, None, false)
    );
    db.skill_written("deploy", SkillOrigin::Person, Some("s2"), Some(7))?;
    let patched = stats_of(&db, "deploy")?;
    assert_eq!(
        (patched.origin, patched.session_id.as_deref(), patched.turn),
        (SkillOrigin::Learned, Some("s2"), Some(7))
    );
    assert_eq!(patched.created_at, first.created_at);
    Ok(())
}

#[test]
fn loading_counts_and_an_unknown_skill_becomes_a_person_s() -> TestResult {
    let mut db = Db::open_in_memory()?;
    db.skill_loaded("handmade")?;
    db.skill_loaded("handmade")?;
    let stats = stats_of(&db, "handmade")?;
    assert_eq!((stats.origin, stats.loads), (SkillOrigin::Person, 2));
    assert!(stats.last_used.is_some());
    Ok(())
}

#[test]
fn two_failed_uses_make_a_learned_skill_suspect_and_a_success_clears_it() -> TestResult {
    let mut db = Db::open_in_memory()?;
    db.skill_written("flaky", SkillOrigin::Learned, None, None)?;
    db.skill_loaded("flaky")?;
    db.skill_outcome("flaky", false)?;
    assert!(
        !stats_of(&db, "flaky")?.suspect,
        "one failure is not enough"
    );
    db.skill_outcome("flaky", false)?;
    let stats = stats_of(&db, "flaky")?;
    assert!(stats.suspect);
    assert_eq!((stats.successes, stats.failures), (0, 2));
    db.skill_outcome("flaky", true)?;
    assert!(!stats_of(&db, "flaky")?.suspect);
    db.skill_outcome("flaky", false)?;
    assert!(!stats_of(&db, "flaky")?.suspect, "the streak starts again");
    db.skill_outcome("flaky", false)?;
    assert!(stats_of(&db, "flaky")?.suspect);
    // A patch answers the failures.
    db.skill_written("flaky", SkillOrigin::Learned, Some("s9"), Some(1))?;
    assert!(!stats_of(&db, "flaky")?.suspect);
    Ok(())
}

#[test]
fn a_person_s_skill_is_never_suspect() -> TestResult {
    let mut db = Db::open_in_memory()?;
    db.skill_loaded("mine")?;
    db.skill_outcome("mine", false)?;
    db.skill_outcome("mine", false)?;
    assert!(!stats_of(&db, "mine")?.suspect);
    assert!(matches!(
        db.skill_outcome("unknown", true),
        Err(StoreError::NotFound { .. })
    ));
    Ok(())
}

#[test]
fn stale_is_set_and_cleared_by_a_load_or_a_pin() -> TestResult {
    let mut db = Db::open_in_memory()?;
    db.skill_written("old", SkillOrigin::Learned, None, None)?;
    db.set_skill_stale("old", true)?;
    assert!(stats_of(&db, "old")?.stale);
    db.skill_loaded("old")?;
    assert!(!stats_of(&db, "old")?.stale);
    db.set_skill_stale("old", true)?;
    assert!(db.pin_skill("old", true)?);
    let pinned = stats_of(&db, "old")?;
    assert!(pinned.pinned && !pinned.stale);
    assert!(db.pin_skill("old", false)?);
    assert!(!stats_of(&db, "old")?.pinned);
    assert!(!db.pin_skill("nothing", true)?);
    db.forget_skill("old")?;
    assert!(db.skill_stats()?.is_empty());
    Ok(())
}

#[test]
fn the_index_follows_the_skills_on_disk_and_finds_similar_ones() -> TestResult {
    let mut db = Db::open_in_memory()?;
    let skills = |list: &[(&str, &str)]| -> Vec<(String, String)> {
        list.iter()
            .map(|(n, d)| (n.to_string(), d.to_string()))
            .collect()
    };
    db.index_skills(&skills(&[
        (
            "deploy-staging",
            "Deploy the web app to staging with docker compose",
        ),
        ("rotate-logs", "Compress and rotate nginx logs"),
        ("release-notes", "Write release notes from git history"),
    ]))?;
    assert_eq!(
        db.similar_skills("deploy the app to production", 5)?,
        ["deploy-staging"]
    );
    assert_eq!(db.similar_skills("nginx logs", 5)?, ["rotate-logs"]);
    // Changed and removed skills leave the index; nothing is indexed twice.
    db.index_skills(&skills(&[
        ("deploy-staging", "Ship containers to the staging cluster"),
        ("release-notes", "Write release notes from git history"),
    ]))?;
    db.index_skills(&skills(&[
        ("deploy-staging", "Ship containers to the staging cluster"),
        ("release-notes", "Write release notes from git history"),
    ]))?;
    assert_eq!(db.similar_skills("nginx logs", 5)?, Vec::<String>::new());
    assert_eq!(
        db.similar_skills("docker compose web", 5)?,
        Vec::<String>::new()
    );
    assert_eq!(
        db.similar_skills("staging containers", 5)?,
        ["deploy-staging"]
    );
    let rows: i64 = db
        .conn
        .query_row("SELECT count(*) FROM skills_fts", [], |r| r.get(0))?;
    assert_eq!(rows, 2);
    db.forget_skill("release-notes")?;
    assert_eq!(db.similar_skills("release notes", 5)?, Vec::<String>::new());
    Ok(())
}

#[test]
fn hostile_text_never_breaks_the_search() -> TestResult {
    let mut db = Db::open_in_memory()?;
    db.index_skills(&[("a-b".into(), "NEAR text".into())])?;
    for hostile in ["", "\"", "NEAR(a b", "a* OR -b:c ^d", "()", "AND OR NOT"] {
        db.similar_skills(hostile, 3)?;
    }
    assert_eq!(db.similar_skills("near", 0)?, Vec::<String>::new());
    Ok(())
}
