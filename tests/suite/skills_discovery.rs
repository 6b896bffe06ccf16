//! Skills on disk: discovery from every folder (project, the person's, Claude's read-only),
//! malformed skills skipped with a warning naming the file, the catalogue's budget, resources
//! read only inside the skill's folder, and patches that must match exactly once.

use std::path::{Path, PathBuf};

use mnemo::memory::skills::{SkillOrigin, SkillStats};
use mnemo::skills::{
    SkillError, SkillSet, SkillSource, catalog, discover, patch_skill, read_resource, write_skill,
};
use serde_json::{Map, Value};

type TestResult = Result<(), Box<dyn std::error::Error>>;

/// A workspace and a config directory side by side in one temporary directory.
struct Dirs {
    _tmp: tempfile::TempDir,
    ws: PathBuf,
    config: PathBuf,
}

impl Dirs {
    fn new() -> Result<Self, std::io::Error> {
        let tmp = tempfile::tempdir()?;
        let ws = tmp.path().join("ws");
        let config = tmp.path().join("config");
        std::fs::create_dir_all(&ws)?;
        std::fs::create_dir_all(&config)?;
        Ok(Self {
            ws: ws.canonicalize()?,
            config: config.canonicalize()?,
            _tmp: tmp,
        })
    }

    fn discover(&self) -> SkillSet {
        discover(&self.ws, &self.config)
    }
}

/// Writes `<root>/<folder>/SKILL.md` with `text`.
fn put(root: &Path, folder: &str, text: &str) -> Result<PathBuf, std::io::Error> {
    let dir = root.join(folder);
    std::fs::create_dir_all(&dir)?;
    std::fs::write(dir.join("SKILL.md"), text)?;
    Ok(dir)
}

fn skill_md(name: &str, description: &str) -> String {
    format!("---\nname: {name}\ndescription: {description}\n---\n\n# {name}\n\nSteps.\n")
}

#[test]
fn skills_are_found_in_every_folder_and_the_first_of_a_name_wins() -> TestResult {
    let d = Dirs::new()?;
    put(
        &d.ws.join(".agents/skills"),
        "agents-one",
        &skill_md("agents-one", "From .agents."),
    )?;
    put(
        &d.ws.join(".agents/skills"),
        "shared",
        &skill_md("shared", "The project's."),
    )?;
    put(
        &d.ws.join(".mnemo/skills"),
        "mnemo-one",
        &skill_md("mnemo-one", "From .mnemo."),
    )?;
    put(
        &d.config.join("skills"),
        "user-one",
        &skill_md("user-one", "The person's."),
    )?;
    put(
        &d.config.join("skills"),
        "shared",
        &skill_md("shared", "The person's copy."),
    )?;
    let claude = put(
        &d.ws.join(".claude/skills"),
        "claude-one",
        &skill_md("claude-one", "Claude's."),
    )?;
    std::fs::write(claude.join("notes.md"), "resource")?;
    // Not skills: a hidden folder, a folder without SKILL.md, a loose file.
    put(
        &d.ws.join(".agents/skills"),
        ".archive",
        &skill_md(".archive", "x"),
    )?;
    std::fs::create_dir_all(d.ws.join(".agents/skills/empty"))?;
    std::fs::write(d.ws.join(".agents/skills/README.md"), "hi")?;

    let skills = d.discover();
    assert_eq!(skills.warnings(), &[] as &[String]);
    let found: Vec<(&str, SkillSource)> =
        skills.iter().map(|s| (s.name.as_str(), s.source)).collect();
    assert_eq!(
        found,
        [
            ("agents-one", SkillSource::Project),
            ("claude-one", SkillSource::Claude),
            ("mnemo-one", SkillSource::Project),
            ("shared", SkillSource::User),
            ("user-one", SkillSource::User),
        ]
    );
    // The person's skill wins a name clash: a repository cannot shadow it.
    let shared = skills.get("shared").ok_or("shared")?;
    assert_eq!(shared.description, "The person's copy.");
    assert!(shared.writable());
    assert_eq!(shared.dir, d.config.join("skills/shared"));
    assert_eq!(shared.body, "# shared\n\nSteps.\n");
    let claude = skills.get("claude-one").ok_or("claude-one")?;
    assert!(!claude.writable());
    assert_eq!(read_resource(claude, "notes.md")?, "resource");
    assert!(matches!(
        patch_skill(claude, "Steps.", "Other steps."),
        Err(SkillError::ReadOnly { .. })
    ));
    Ok(())
}

#[test]
fn malformed_skills_are_skipped_with_a_warning_naming_the_file_and_the_problem() -> TestResult {
    let d = Dirs::new()?;
    let root = d.ws.join(".agents/skills");
    put(&root, "good", &skill_md("good", "Fine."))?;
    put(
        &root,
        "broken",
        "---\nname: broken\ndescription: [unclosed\n---\nbody",
    )?;
    put(
        &root,
        "renamed",
        &skill_md("other-name", "Name and folder differ."),
    )?;
    put(&root, "wordy", &skill_md("wordy", &"w".repeat(1025)))?;
    put(&root, "plain", "# Just markdown\n")?;

    let skills = d.discover();
    assert_eq!(
        skills.iter().map(|s| s.name.as_str()).collect::<Vec<_>>(),
        ["good"]
    );
    let warnings = skills.warnings().join("\n");
    assert_eq!(skills.warnings().len(), 4, "{warnings}");
    let file = |folder: &str| root.join(folder).join("SKILL.md").display().to_string();
    for (folder, problem) in [
        ("broken", "the frontmatter is not valid"),
        (
            "renamed",
            "the name `other-name` does not match its folder `renamed`",
        ),
        (
            "wordy",
            "the description has 1025 characters; it must have 1 to 1024",
        ),
        ("plain", "does not start with YAML frontmatter"),
    ] {
        assert!(
            skills
                .warnings()
                .iter()
                .any(|w| w.starts_with(&file(folder)) && w.contains(problem)),
            "no warning for {folder} ({problem}) in:\n{warnings}"
        );
    }
    Ok(())
}

#[test]
fn write_skill_creates_a_folder_that_discovery_reads_back_and_refuses_bad_ones() -> TestResult {
    let d = Dirs::new()?;
    let root = d.ws.join(".mnemo/skills");
    let mut metadata = Map::new();
    metadata.insert("verify".into(), Value::from("test -d ."));
    let dir = write_skill(
        &root,
        "check-tree",
        "Checks the tree.",
        "1. Look.",
        &metadata,
    )?;
    assert_eq!(dir, root.join("check-tree"));
    let skills = d.discover();
    let skill = skills.get("check-tree").ok_or("not found")?;
    assert_eq!(skill.verify_command(), Some("test -d ."));
    assert_eq!(skill.body, "1. Look.\n");

    let again = write_skill(&root, "check-tree", "Again.", "", &Map::new());
    assert!(matches!(again, Err(SkillError::Exists { .. })), "{again:?}");
    let bad_name = write_skill(&root, "Bad_Name", "x", "", &Map::new());
    assert!(
        matches!(bad_name, Err(SkillError::Invalid { .. })),
        "{bad_name:?}"
    );
    let long = write_skill(&root, "long", &"d".repeat(1025), "", &Map::new());
    let message = long.err().map(|e| e.to_string()).unwrap_or_default();
    assert!(message.contains("1025 characters"), "{message}");
    assert!(!root.join("long").exists() && !root.join("Bad_Name").exists());
    Ok(())
}

#[test]
fn a_patch_must_match_exactly_once_and_leave_a_valid_skill() -> TestResult {
    let d = Dirs::new()?;
    let root = d.config.join("skills");
    put(
        &root,
        "twice",
        "---\nname: twice\ndescription: Run it.\n---\nRun it.\nRun it.\n",
    )?;
    let skills = d.discover();
    let skill = skills.get("twice").ok_or("twice")?;

    let message = patch_skill(skill, "Run it.", "Walk.")
        .err()
        .map(|e| e.to_string())
        .unwrap_or_default();
    assert!(message.contains("occurs 3 times"), "{message}");
    let message = patch_skill(skill, "missing", "x")
        .err()
        .map(|e| e.to_string())
        .unwrap_or_default();
    assert!(message.contains("occurs 0 times"), "{message}");
    let renamed = patch_skill(skill, "name: twice", "name: other");
    assert!(
        matches!(renamed, Err(SkillError::Invalid { .. })),
        "{renamed:?}"
    );

    patch_skill(skill, "description: Run it.", "description: Runs it twice.")?;
    let after = d.discover();
    let patched = after.get("twice").ok_or("twice")?;
    assert_eq!(patched.description, "Runs it twice.");
    assert_eq!(patched.body, "Run it.\nRun it.\n");
    Ok(())
}

#[test]
fn resources_are_read_only_inside_the_skill_s_folder() -> TestResult {
    let d = Dirs::new()?;
    let root = d.ws.join(".agents/skills");
    let dir = put(&root, "tools", &skill_md("tools", "Has resources."))?;
    std::fs::create_dir_all(dir.join("scripts"))?;
    std::fs::write(dir.join("scripts/run.sh"), "echo hi\n")?;
    std::fs::write(root.join("x"), "outside")?;
    std::fs::write(d.ws.join("secret.txt"), "secret")?;
    std::os::unix::fs::symlink(d.ws.join("secret.txt"), dir.join("link.txt"))?;
    std::os::unix::fs::symlink(&d.ws, dir.join("up"))?;
    std::fs::write(dir.join("big.txt"), vec![b'a'; 300 * 1024])?;
    std::fs::write(dir.join("binary.bin"), [0xff, 0xfe, 0x00])?;
    let skills = d.discover();
    let skill = skills.get("tools").ok_or("tools")?;

    assert_eq!(read_resource(skill, "scripts/run.sh")?, "echo hi\n");
    assert_eq!(read_resource(skill, "./scripts/run.sh")?, "echo hi\n");
    let refused = |path: &str| match read_resource(skill, path) {
        Ok(text) => panic!("{path} was read: {text}"),
        Err(e) => e.to_string(),
    };
    assert!(refused("../x").contains("no `..`"));
    let absolute = d.ws.join("secret.txt").display().to_string();
    assert!(refused(&absolute).contains("no absolute path"));
    assert!(refused("link.txt").contains("symbolic link"));
    assert!(refused("up/secret.txt").contains("symbolic link"));
    assert!(refused("big.txt").contains("307200 bytes"));
    assert!(refused("binary.bin").contains("not UTF-8"));
    assert!(refused("missing.md").contains("`missing.md` of skill `tools`"));
    Ok(())
}

fn stats(name: &str, loads: u64) -> SkillStats {
    SkillStats {
        loads,
        ..SkillStats::new(name, SkillOrigin::Person, 0)
    }
}

#[test]
fn the_catalogue_keeps_to_its_budget_leaving_out_the_least_used() -> TestResult {
    let d = Dirs::new()?;
    let root = d.ws.join(".agents/skills");
    let names: Vec<String> = (0..30).map(|i| format!("task-{i:02}")).collect();
    for name in &names {
        put(
            &root,
            name,
            &skill_md(name, "Carries out one routine task of this project."),
        )?;
    }
    let skills = d.discover();
    // task-29 is used most, task-00 least.
    let stats: Vec<SkillStats> = names
        .iter()
        .enumerate()
        .map(|(i, n)| stats(n, i as u64))
        .collect();

    let everything = catalog(&skills, &stats, 100_000, true);
    assert_eq!(
        everything.lines().filter(|l| l.starts_with("- ")).count(),
        30
    );
    assert!(!everything.contains("more skills not listed"));

    let budget = 150;
    let section = catalog(&skills, &stats, budget, true);
    assert!(
        mnemo::llm::tokens::estimate_text(&section) <= budget,
        "{section}"
    );
    let listed: Vec<&str> = section
        .lines()
        .filter_map(|l| l.strip_prefix("- "))
        .filter_map(|l| l.split([':', ' ']).next())
        .collect();
    assert!(!listed.is_empty() && listed.len() < 30, "{section}");
    let kept: Vec<&str> = names[30 - listed.len()..]
        .iter()
        .map(String::as_str)
        .collect();
    assert_eq!(listed, kept, "the most used are kept, by name");
    let last = section.lines().last().unwrap_or_default();
    assert_eq!(
        last,
        format!(
            "({} more skills not listed; load_skill NAME loads any by name)",
            30 - listed.len()
        )
    );
    Ok(())
}
