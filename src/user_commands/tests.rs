use std::path::Path;

use super::*;
use crate::sandbox::Confinement;

#[test]
fn arguments_and_numbered_words_are_filled_in() {
    let body = "Review $1 against $2. Everything: $ARGUMENTS. Cost: $5 stays $x";
    assert_eq!(
        expand_body(body, r#"src/a.rs "the old one" extra"#),
        r#"Review src/a.rs against the old one. Everything: src/a.rs "the old one" extra. Cost:  stays $x"#
    );
}

#[test]
fn a_body_without_placeholders_gets_the_arguments_appended() {
    assert_eq!(
        expand_body("Run the tests.", "fast"),
        "Run the tests.\n\nARGUMENTS: fast"
    );
    assert_eq!(expand_body("Run the tests.", ""), "Run the tests.");
}

fn write(dir: &Path, relative: &str, text: &str) {
    let path = dir.join(relative);
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent).unwrap_or_else(|e| panic!("{e}"));
    }
    std::fs::write(path, text).unwrap_or_else(|e| panic!("{e}"));
}

fn loaded(ws: &Path, config: &Path, trusted: bool) -> UserCommands {
    load(
        ws,
        &Confinement::default(),
        Some(config),
        trusted,
        &["help"],
    )
}

#[test]
fn frontmatter_gives_description_tools_and_model_and_the_workspace_wins() {
    let (ws, config) = (
        tempfile::tempdir().unwrap_or_else(|e| panic!("{e}")),
        tempfile::tempdir().unwrap_or_else(|e| panic!("{e}")),
    );
    let ws = ws.path().canonicalize().unwrap_or_else(|e| panic!("{e}"));
    write(
        &ws,
        ".claude/commands/review.md",
        "---\ndescription: Review a file\nallowed-tools: Read, Grep\nmodel: fast\n---\nReview $1.\n",
    );
    write(&ws, ".mnemo/commands/deploy.md", "Deploy to $ARGUMENTS.\n");
    write(config.path(), "commands/deploy.md", "my own deploy");
    write(config.path(), "commands/help.md", "not mine to replace");
    write(
        config.path(),
        "commands/broken.md",
        "---\ndescription: [unclosed\n---\nbody",
    );
    let commands = loaded(&ws, config.path(), true);
    let review = commands
        .find("review")
        .unwrap_or_else(|| panic!("{commands:?}"));
    assert_eq!(review.description, "Review a file");
    assert_eq!(review.allowed_tools, vec!["Read", "Grep"]);
    assert_eq!(review.model.as_deref(), Some("fast"));
    assert_eq!(review.source, Source::Claude);
    let deploy = commands
        .find("deploy")
        .unwrap_or_else(|| panic!("{commands:?}"));
    assert_eq!(
        deploy.source,
        Source::Workspace,
        "the workspace's command wins"
    );
    assert!(commands.find("help").is_none());
    assert!(
        commands
            .notices
            .iter()
            .any(|n| n.contains("/help is mnemo's own")),
        "{:?}",
        commands.notices
    );
    assert!(
        commands
            .notices
            .iter()
            .any(|n| n.contains("not valid YAML")),
        "{:?}",
        commands.notices
    );
    match commands.expand("/review src/main.rs") {
        Expansion::Command { prompt, .. } => assert_eq!(prompt, "Review src/main.rs."),
        other => panic!("{other:?}"),
    }
    assert_eq!(commands.expand("/usr/bin/env"), Expansion::Plain);
}

#[test]
fn an_untrusted_workspaces_commands_are_named_not_loaded() {
    let (ws, config) = (
        tempfile::tempdir().unwrap_or_else(|e| panic!("{e}")),
        tempfile::tempdir().unwrap_or_else(|e| panic!("{e}")),
    );
    let ws = ws.path().canonicalize().unwrap_or_else(|e| panic!("{e}"));
    write(&ws, ".mnemo/commands/wipe.md", "Delete everything.");
    write(config.path(), "commands/mine.md", "Mine: $ARGUMENTS");
    let commands = loaded(&ws, config.path(), false);
    assert!(commands.find("wipe").is_none());
    assert_eq!(
        commands.expand("/wipe now"),
        Expansion::Untrusted("wipe".into())
    );
    assert!(
        matches!(commands.expand("/mine x"), Expansion::Command { .. }),
        "the person's own still work"
    );
}

#[test]
fn a_workspace_command_linked_out_of_the_workspace_is_not_read() {
    let (ws, outside, config) = (
        tempfile::tempdir().unwrap_or_else(|e| panic!("{e}")),
        tempfile::tempdir().unwrap_or_else(|e| panic!("{e}")),
        tempfile::tempdir().unwrap_or_else(|e| panic!("{e}")),
    );
    let ws = ws.path().canonicalize().unwrap_or_else(|e| panic!("{e}"));
    write(outside.path(), "secret.md", "secret text");
    std::fs::create_dir_all(ws.join(".claude/commands")).unwrap_or_else(|e| panic!("{e}"));
    std::os::unix::fs::symlink(
        outside.path().join("secret.md"),
        ws.join(".claude/commands/leak.md"),
    )
    .unwrap_or_else(|e| panic!("{e}"));
    let commands = loaded(&ws, config.path(), true);
    assert!(commands.find("leak").is_none());
    assert!(
        commands
            .notices
            .iter()
            .any(|n| n.contains("out of the workspace")),
        "{:?}",
        commands.notices
    );
}
