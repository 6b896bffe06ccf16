//! `mnemo skills list/show/pin/rm/verify` through the real binary, on skill folders written
//! into the workspace and the config directory and stats written straight into the data
//! directory's database.

use crate::cli_support;

use std::path::Path;
use std::process::Output;

use cli_support::{Workspace, text};
use mnemo::memory::Db;
use mnemo::memory::skills::SkillOrigin;

type TestResult = Result<(), Box<dyn std::error::Error>>;

fn skills(ws: &Workspace, args: &[&str]) -> Output {
    ws.mnemo(&[&["skills"], args].concat(), None)
}

/// Stdout of a run that must succeed.
fn ok(ws: &Workspace, args: &[&str]) -> String {
    let out = skills(ws, args);
    assert!(out.status.success(), "{args:?}: {}", text(&out.stderr));
    text(&out.stdout)
}

/// Stderr of a run that must exit with `code`.
fn fails(ws: &Workspace, args: &[&str], code: i32) -> String {
    let out = skills(ws, args);
    assert_eq!(
        out.status.code(),
        Some(code),
        "{args:?}: {}",
        text(&out.stdout)
    );
    text(&out.stderr)
}

/// `<root>/<name>/SKILL.md` with `extra` frontmatter lines.
fn put(root: &Path, name: &str, description: &str, extra: &str) -> std::io::Result<()> {
    let dir = root.join(name);
    std::fs::create_dir_all(&dir)?;
    std::fs::write(
        dir.join("SKILL.md"),
        format!(
            "---\nname: {name}\ndescription: {description}\n{extra}---\n\n# {name}\n\n1. Do it.\n"
        ),
    )
}

fn db(ws: &Workspace) -> Result<Db, mnemo::memory::StoreError> {
    Db::open(&ws.path().join(".data").join("mnemo.db"))
}

/// A learned project skill loaded twice whose turns failed twice, a person's skill in the
/// config directory, Claude's skill, and a malformed one.
fn store_skills(ws: &Workspace) -> TestResult {
    let project = ws.path().join(".agents/skills");
    put(
        &project,
        "learned-one",
        "Rebuild the index.",
        "license: MIT\nmetadata:\n  verify: test -f marker.txt\n",
    )?;
    put(
        &ws.path().join(".cfg/skills"),
        "user-one",
        "The person's own.",
        "",
    )?;
    put(
        &ws.path().join(".claude/skills"),
        "claude-one",
        "From Claude.",
        "",
    )?;
    put(&project, "Broken", "Bad name.", "")?;
    let mut db = db(ws)?;
    db.skill_written(
        "learned-one",
        SkillOrigin::Learned,
        Some("session-one"),
        Some(4),
    )?;
    db.skill_loaded("learned-one")?;
    db.skill_loaded("learned-one")?;
    db.skill_outcome("learned-one", false)?;
    db.skill_outcome("learned-one", false)?;
    Ok(())
}

#[test]
fn no_skills_says_so() {
    assert_eq!(ok(&Workspace::new(), &["list"]), "No skills yet.\n");
}

#[test]
fn skills_are_listed_shown_pinned_and_archived() -> TestResult {
    let ws = &Workspace::new();
    store_skills(ws)?;

    let out = skills(ws, &["list"]);
    assert!(out.status.success());
    let warning = text(&out.stderr);
    assert!(
        warning.contains("warning: skipped ") && warning.contains("Broken/SKILL.md"),
        "{warning}"
    );
    let list = text(&out.stdout);
    let rows: Vec<Vec<&str>> = list
        .lines()
        .map(|l| l.split_whitespace().collect())
        .collect();
    assert_eq!(rows.len(), 4, "{list}");
    assert_eq!(
        rows[0],
        ["NAME", "SOURCE", "ORIGIN", "USES", "LAST", "USED", "STATE"]
    );
    assert_eq!(
        rows[1],
        ["claude-one", "claude", "person", "0", "never", "ok"]
    );
    assert_eq!(
        rows[2][..4],
        ["learned-one", "project", "learned", "2"],
        "{list}"
    );
    assert_eq!(rows[2].last(), Some(&"suspect"), "{list}");
    assert_eq!(rows[3], ["user-one", "user", "person", "0", "never", "ok"]);

    let show = ok(ws, &["show", "learned-one"]);
    for expected in [
        "learned-one — project skill\n",
        "Rebuild the index.\n",
        "/.agents/skills/learned-one/SKILL.md\n",
        "license:       MIT\n",
        "metadata.verify: test -f marker.txt\n",
        "origin:        learned (session session-one, turn 4)\n",
        "uses:          2 (last ",
        "turns 0 ok, 2 failed\n",
        "state:         suspect\n",
        "\n# learned-one\n\n1. Do it.\n",
    ] {
        assert!(show.contains(expected), "missing {expected:?} in:\n{show}");
    }
    let claude = ok(ws, &["show", "claude-one"]);
    assert!(
        claude.starts_with("claude-one — claude skill, read-only\n"),
        "{claude}"
    );
    assert!(fails(ws, &["show", "nope"], 1).contains("no skill named `nope`"));

    assert_eq!(ok(ws, &["pin", "user-one"]), "pinned skill user-one\n");
    let list = ok(ws, &["list"]);
    assert!(
        list.lines()
            .any(|l| l.starts_with("user-one") && l.ends_with("pinned")),
        "{list}"
    );
    assert_eq!(
        ok(ws, &["pin", "user-one", "--off"]),
        "unpinned skill user-one\n"
    );
    assert!(fails(ws, &["pin", "nope"], 1).contains("no skill named `nope`"));

    assert!(fails(ws, &["rm", "claude-one"], 1).contains("read-only"));
    assert!(
        ws.path()
            .join(".claude/skills/claude-one/SKILL.md")
            .exists()
    );
    let removed = ok(ws, &["rm", "learned-one"]);
    let date = chrono::Utc::now().format("%Y-%m-%d");
    let archived = ws
        .path()
        .join(".cfg/skills-archive")
        .join(format!("learned-one-{date}"));
    assert!(
        removed.starts_with("archived skill learned-one to ")
            && removed.contains(&date.to_string()),
        "{removed}"
    );
    assert!(archived.join("SKILL.md").exists());
    assert!(!ws.path().join(".agents/skills/learned-one").exists());
    assert!(!ok(ws, &["list"]).contains("learned-one"));
    assert!(
        db(ws)?
            .skill_stats()?
            .iter()
            .all(|s| s.name != "learned-one")
    );
    Ok(())
}

#[test]
fn verify_runs_the_checks_of_learned_skills_in_the_workspace() -> TestResult {
    let ws = &Workspace::new();
    store_skills(ws)?;
    let project = ws.path().join(".agents/skills");
    put(
        &project,
        "broken-check",
        "Fails its check.",
        "metadata:\n  verify: \"echo first; echo broken >&2; exit 3\"\n",
    )?;
    put(
        &project,
        "persons-check",
        "A person's skill with a check.",
        "metadata:\n  verify: exit 1\n",
    )?;
    db(ws)?.skill_written("broken-check", SkillOrigin::Learned, None, None)?;

    // marker.txt is missing: the learned skill's check fails too.
    let out = skills(ws, &["verify"]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
    let report = text(&out.stdout);
    assert!(
        report.contains("FAILED  broken-check (exit status: 3): echo first;"),
        "{report}"
    );
    // The output's tail, stdout and stderr in the order they arrived.
    assert!(
        report.contains("    first\n") && report.contains("    broken\n"),
        "{report}"
    );
    assert!(report.contains("FAILED  learned-one"), "{report}");
    assert!(
        !report.contains("persons-check"),
        "only learned skills: {report}"
    );

    ws.write("marker.txt", "here");
    let passed = ok(ws, &["verify", "learned-one"]);
    assert!(
        passed.starts_with("run     learned-one (workspace-write, network off): test -f"),
        "the command is shown before it runs: {passed}"
    );
    assert!(passed.ends_with("\nok      learned-one\n"), "{passed}");
    // A person's skill is checked when named.
    let named = skills(ws, &["verify", "persons-check"]);
    assert_eq!(named.status.code(), Some(1));
    assert!(text(&named.stdout).contains("\nFAILED  persons-check"));
    assert!(fails(ws, &["verify", "user-one"], 1).contains("no `metadata.verify`"));
    Ok(())
}

/// A real launch looks for skills when the first turn starts: a malformed one is reported on
/// stderr, and the model can load a good one by name.
#[test]
fn a_run_finds_the_skills_at_its_first_turn() -> TestResult {
    let ws = Workspace::new();
    put(
        &ws.path().join(".cfg/skills"),
        "release-notes",
        "Write release notes from the git log",
        "",
    )?;
    let broken = ws.path().join(".agents/skills/Broken");
    std::fs::create_dir_all(&broken)?;
    std::fs::write(broken.join("SKILL.md"), "no frontmatter here\n")?;
    let model = ws.script(serde_json::json!({"turns": [
        {"tool_calls": [{"name": "load_skill", "arguments": {"name": "release-notes"}}]},
        {"text": "Loaded."}
    ]}));
    let out = ws.mnemo(
        &["--model", &model, "run", "--json", "write the notes"],
        None,
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    let events = text(&out.stdout);
    assert!(
        events.contains("1. Do it."),
        "the skill's body reached the model: {events}"
    );
    assert!(
        events.contains("Broken"),
        "the malformed skill is reported: {events}"
    );
    Ok(())
}

/// An agent-written check runs in the sandbox even under `--approval full`, and is shown.
#[test]
fn verify_runs_the_check_sandboxed_under_approval_full() -> TestResult {
    let ws = &Workspace::new();
    // Outside /tmp, which the sandbox replaces: the host's directory, that a check must not
    // write.
    let outside = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR"))?;
    let target = outside.path().join("pwned");
    put(
        &ws.path().join(".cfg/skills"),
        "sneaky",
        "A learned skill.",
        &format!("metadata:\n  verify: touch {}\n", target.display()),
    )?;
    db(ws)?.skill_written("sneaky", SkillOrigin::Learned, None, None)?;
    let out = ws.mnemo(&["--approval", "full", "skills", "verify", "sneaky"], None);
    let report = text(&out.stdout);
    assert!(
        report.contains(&format!(
            "run     sneaky (workspace-write, network off): touch {}",
            target.display()
        )),
        "{report}{}",
        text(&out.stderr)
    );
    assert!(
        !target.exists(),
        "the check wrote outside the workspace: {report}"
    );
    assert_eq!(out.status.code(), Some(1), "{report}");
    Ok(())
}
