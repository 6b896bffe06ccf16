//! A skill is learned from a check, not from the model's word: `skill_write` saves a skill only
//! when its verify command, run by mnemo in the sandbox, exits 0 (recorded with the skill) or
//! the person says yes; otherwise it waits as a draft `mnemo skills accept` can save.

use crate::cli_support;

use cli_support::{Workspace, text};
use serde_json::json;

fn write_skill(ws: &Workspace, name: &str, verify: Option<&str>) -> String {
    let mut args = json!({
        "name": name,
        "description": "Check the release archive",
        "body": "1. Build the archive\n2. Check its sums\n",
    });
    if let Some(verify) = verify {
        args["verify"] = json!(verify);
    }
    let model = ws.script(json!({"turns": [
        {"tool_calls": [{"name": "skill_write", "arguments": args}]},
        {"text": "done"}
    ]}));
    let out = ws.mnemo(
        &["--model", &model, "run", "--json", "keep it as a skill"],
        None,
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    text(&out.stdout)
}

fn skill_file(ws: &Workspace, name: &str) -> std::path::PathBuf {
    ws.path().join(".agents/skills").join(name).join("SKILL.md")
}

#[test]
fn no_skill_is_saved_without_a_passing_check_and_drafts_wait_for_the_person() {
    let ws = Workspace::new();
    ws.write("release.tar", "the archive\n");
    ws.write(
        "sums.txt",
        "0000000000000000000000000000000000000000000000000000000000000000  release.tar\n",
    );

    // The model claims success, but the check it gives fails.
    let said = write_skill(&ws, "check-release", Some("sha256sum -c sums.txt"));
    assert!(said.contains("was not saved"), "{said}");
    assert!(
        said.contains("FAILED"),
        "the check's output is shown: {said}"
    );
    assert!(!skill_file(&ws, "check-release").exists());

    // No check at all, and nobody to say yes (`mnemo run` cannot ask).
    let said = write_skill(&ws, "no-check", None);
    assert!(said.contains("it has no verify command"), "{said}");
    assert!(!skill_file(&ws, "no-check").exists());
    assert!(
        !ws.path().join(".agents/skills").exists(),
        "no skill at all"
    );

    let drafts = text(&ws.mnemo(&["skills", "drafts"], None).stdout);
    assert!(
        drafts.contains("check-release") && drafts.contains("no-check"),
        "{drafts}"
    );

    // The person's yes saves it.
    let out = ws.mnemo(&["skills", "accept", "check-release"], None);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let saved = std::fs::read_to_string(skill_file(&ws, "check-release")).unwrap_or_default();
    assert!(saved.contains("accepted by the person"), "{saved}");
    let out = ws.mnemo(&["skills", "reject", "no-check"], None);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let drafts = text(&ws.mnemo(&["skills", "drafts"], None).stdout);
    assert!(drafts.contains("No skill drafts"), "{drafts}");
    let again = ws.mnemo(&["skills", "accept", "no-check"], None);
    assert!(!again.status.success());
    assert!(text(&again.stderr).contains("no skill draft named `no-check`"));
}

#[test]
fn a_check_that_passes_saves_the_skill_with_its_record() {
    let ws = Workspace::new();
    ws.write("release.tar", "the archive\n");
    let sums = std::process::Command::new("sha256sum")
        .arg("release.tar")
        .current_dir(ws.path())
        .output()
        .unwrap_or_else(|e| panic!("{e}"));
    ws.write("sums.txt", &text(&sums.stdout));
    let said = write_skill(&ws, "check-release", Some("sha256sum -c sums.txt"));
    assert!(said.contains("skill `check-release` written"), "{said}");
    let saved = std::fs::read_to_string(skill_file(&ws, "check-release")).unwrap_or_default();
    assert!(saved.contains("verify: sha256sum -c sums.txt"), "{saved}");
    assert!(
        saved.contains("`sha256sum -c sums.txt` exited 0 on"),
        "{saved}"
    );
}
