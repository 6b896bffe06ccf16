use super::*;
use crate::skills::{discover, write_skill};

type TestResult = Result<(), Box<dyn std::error::Error>>;

const NOW: i64 = 1_750_000_000_000;

fn days_ago(days: i64) -> i64 {
    NOW - days * DAY_MS
}

fn stats(name: &str, origin: SkillOrigin, last_used: Option<i64>, created_at: i64) -> SkillStats {
    SkillStats {
        loads: u64::from(last_used.is_some()),
        last_used,
        ..SkillStats::new(name, origin, created_at)
    }
}

/// A config dir with user skills of these names; returns it with the discovered set.
fn user_skills(
    names: &[&str],
) -> Result<(tempfile::TempDir, SkillSet), Box<dyn std::error::Error>> {
    let dir = tempfile::tempdir()?;
    let config = dir.path().join("config");
    for name in names {
        write_skill(
            &config.join("skills"),
            name,
            "A skill.",
            "Steps.",
            &Default::default(),
        )?;
    }
    let skills = discover(&dir.path().join("ws"), &config);
    Ok((dir, skills))
}

#[test]
fn learned_skills_turn_stale_after_30_days_and_are_archived_after_90() -> TestResult {
    let (dir, skills) = user_skills(&["fresh", "idle", "gone", "never-used"])?;
    let config = dir.path().join("config");
    let stats = vec![
        stats(
            "fresh",
            SkillOrigin::Learned,
            Some(days_ago(29)),
            days_ago(200),
        ),
        stats(
            "idle",
            SkillOrigin::Learned,
            Some(days_ago(31)),
            days_ago(200),
        ),
        stats(
            "gone",
            SkillOrigin::Learned,
            Some(days_ago(91)),
            days_ago(200),
        ),
        stats("never-used", SkillOrigin::Learned, None, days_ago(45)),
    ];
    let report = age(&skills, &stats, &config, NOW);
    assert_eq!(report.stale, ["idle", "never-used"]);
    assert_eq!(report.warnings, Vec::<String>::new());
    let expected = config.join("skills-archive").join("gone-2025-06-15");
    assert_eq!(
        report.archived,
        [Archived {
            name: "gone".into(),
            to: expected.clone()
        }]
    );
    assert!(expected.join("SKILL.md").is_file());
    assert!(!config.join("skills/gone").exists());
    let notice = report.notice().unwrap_or_default();
    assert!(
        notice.contains("idle, never-used") && notice.contains("archived: gone"),
        "{notice}"
    );

    let mut after = stats;
    report.apply(&mut after);
    let stale: Vec<(&str, bool)> = after.iter().map(|s| (s.name.as_str(), s.stale)).collect();
    assert_eq!(
        stale,
        [("fresh", false), ("idle", true), ("never-used", true)]
    );
    // Already marked: not reported again.
    assert_eq!(
        age(
            &discover(&dir.path().join("ws"), &config),
            &after,
            &config,
            NOW
        ),
        AgeReport::default()
    );
    Ok(())
}

#[test]
fn people_s_imported_and_pinned_skills_never_age() -> TestResult {
    let (dir, skills) = user_skills(&["mine", "theirs", "kept"])?;
    let config = dir.path().join("config");
    let old = Some(days_ago(400));
    let mut kept = stats("kept", SkillOrigin::Learned, old, days_ago(500));
    kept.pinned = true;
    let stats = vec![
        stats("mine", SkillOrigin::Person, old, days_ago(500)),
        stats("theirs", SkillOrigin::Imported, old, days_ago(500)),
        kept,
    ];
    let report = age(&skills, &stats, &config, NOW);
    assert!(report.is_empty(), "{report:?}");
    assert_eq!(report.notice(), None);
    assert_eq!(discover(&dir.path().join("ws"), &config).len(), 3);
    Ok(())
}

#[test]
fn a_second_archive_of_the_same_name_and_day_gets_a_number() -> TestResult {
    let dir = tempfile::tempdir()?;
    let config = dir.path().join("config");
    let mut places = Vec::new();
    for _ in 0..2 {
        write_skill(
            &config.join("skills"),
            "twice",
            "A skill.",
            "Steps.",
            &Default::default(),
        )?;
        let skills = discover(dir.path(), &config);
        let skill = skills.get("twice").ok_or("not found")?;
        places.push(archive(skill, &config, NOW)?);
    }
    let archive = config.join("skills-archive");
    assert_eq!(
        places,
        [
            archive.join("twice-2025-06-15"),
            archive.join("twice-2025-06-15-2")
        ]
    );
    Ok(())
}

#[test]
fn a_copied_tree_keeps_files_folders_and_links_unfollowed() -> TestResult {
    let dir = tempfile::tempdir()?;
    let from = dir.path().join("from");
    std::fs::create_dir_all(from.join("scripts"))?;
    std::fs::write(from.join("SKILL.md"), "x")?;
    std::fs::write(from.join("scripts/run.sh"), "echo")?;
    std::os::unix::fs::symlink("/etc/passwd", from.join("link"))?;
    let to = dir.path().join("to");
    copy_tree(&from, &to)?;
    assert_eq!(std::fs::read_to_string(to.join("scripts/run.sh"))?, "echo");
    assert_eq!(
        std::fs::read_link(to.join("link"))?,
        Path::new("/etc/passwd")
    );
    Ok(())
}

#[test]
fn a_repository_skill_never_ages_even_when_a_learned_one_had_its_name() -> TestResult {
    let dir = tempfile::tempdir()?;
    let ws = dir.path().join("ws");
    let config = dir.path().join("config");
    for (root, name) in [
        (".agents/skills", "tracked-agents"),
        (".mnemo/skills", "tracked-mnemo"),
    ] {
        write_skill(
            &ws.join(root),
            name,
            "A skill.",
            "Steps.",
            &Default::default(),
        )?;
    }
    let skills = discover(&ws, &config);
    assert_eq!(skills.len(), 2);
    let stats: Vec<SkillStats> = skills
        .iter()
        .map(|s| stats(&s.name, SkillOrigin::Learned, None, days_ago(400)))
        .collect();
    let report = age(&skills, &stats, &config, NOW);
    assert!(
        report.archived.is_empty() && report.stale.is_empty(),
        "{report:?}"
    );
    for skill in skills.iter() {
        assert!(skill.file().exists(), "{} was moved", skill.dir.display());
    }
    Ok(())
}
