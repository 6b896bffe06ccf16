//! The system prompt: the constitution, the person's own instructions (`AGENTS.md` in mnemo's
//! config directory), the project's (its root's `AGENTS.md`, or `CLAUDE.md` where there is
//! none) and facts about the environment. Built once per session so the prefix stays
//! cacheable; instruction files of subdirectories come later, as messages
//! (`nested_context`).

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::Stdio;

use super::nested_context::{MAX_INSTRUCTIONS_BYTES, level_instructions};
use crate::sandbox::Confinement;

const CONSTITUTION: &str = include_str!("../../assets/constitution.md");
/// At most this much of the person's own instruction file is read.
const USER_READ_LIMIT: usize = 256 * 1024;

/// The system prompt of a session in `workspace`, and what the person should be told about
/// instruction files that were not read (a link out of the workspace, a FIFO, a hidden path).
/// `config_dir` is mnemo's config directory, which may hold the person's own `AGENTS.md`.
pub async fn system_prompt(
    workspace: &Path,
    confinement: &Confinement,
    config_dir: Option<&Path>,
) -> (String, Vec<String>) {
    let mut prompt = String::from(CONSTITUTION);
    let (instructions, notices) = instructions(workspace, confinement, config_dir).await;
    prompt.push_str(&instructions);
    prompt.push_str("\n# Environment\n\n");
    prompt.push_str(&format!("- Working directory: {}\n", workspace.display()));
    prompt.push_str(&format!(
        "- Operating system: {} ({})\n",
        std::env::consts::OS,
        std::env::consts::ARCH
    ));
    prompt.push_str(&format!(
        "- Today's date: {}\n",
        chrono::Local::now().format("%Y-%m-%d")
    ));
    prompt.push_str(&format!("- Git: {}\n", git_summary(workspace).await));
    (prompt, notices)
}

/// The person's and the project's instruction files, off the async threads; the project's
/// through the workspace guard.
async fn instructions(
    workspace: &Path,
    confinement: &Confinement,
    config_dir: Option<&Path>,
) -> (String, Vec<String>) {
    let workspace: PathBuf = workspace.to_path_buf();
    let confinement = confinement.clone();
    let user_file = config_dir.map(|dir| dir.join("AGENTS.md"));
    let read = move || {
        let mut section = String::new();
        let mut notices = Vec::new();
        if let Some(path) = user_file {
            match read_user_file(&path) {
                Ok(Some(text)) => section.push_str(&format!(
                    "\n# The person's own instructions (from {})\n\n{text}\n",
                    path.display()
                )),
                Ok(None) => {}
                Err(e) => notices.push(format!("{}: {e}; not read", path.display())),
            }
        }
        let (found, skipped) = level_instructions(&workspace, Path::new(""), &confinement);
        notices.extend(skipped);
        if let Some(file) = found {
            section.push_str(&format!(
                "\n# Project instructions from {}\n\n{}\n",
                file.name, file.text
            ));
        }
        (section, notices)
    };
    tokio::task::spawn_blocking(read).await.unwrap_or_else(|_| {
        (
            String::new(),
            vec!["reading AGENTS.md and CLAUDE.md failed".into()],
        )
    })
}

/// The person's own instruction file, cut like the project's; `Ok(None)` when there is none.
fn read_user_file(path: &Path) -> std::io::Result<Option<String>> {
    let meta = match std::fs::metadata(path) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        other => other?,
    };
    if !meta.is_file() {
        return Err(std::io::Error::other("not a regular file"));
    }
    let mut bytes = Vec::new();
    std::fs::File::open(path)?
        .take(USER_READ_LIMIT as u64)
        .read_to_end(&mut bytes)?;
    let text = String::from_utf8_lossy(&bytes);
    Ok(Some(crate::text::head_tail(
        text.trim(),
        MAX_INSTRUCTIONS_BYTES,
    )))
}

/// One line about the repository: branch and how many files changed, or that there is none.
async fn git_summary(workspace: &Path) -> String {
    let output = tokio::process::Command::new("git")
        .args(["status", "--porcelain=v1", "--branch"])
        .current_dir(workspace)
        .stdin(Stdio::null())
        .stderr(Stdio::null())
        .output()
        .await;
    let Ok(output) = output else {
        return "git is not available".into();
    };
    if !output.status.success() {
        return "not a git repository".into();
    }
    let text = String::from_utf8_lossy(&output.stdout);
    let mut lines = text.lines();
    let branch = lines
        .next()
        .and_then(|l| l.strip_prefix("## "))
        .map(|b| b.split("...").next().unwrap_or(b).to_string())
        .unwrap_or_else(|| "unknown branch".into());
    let changed = lines.count();
    match changed {
        0 => format!("a git repository on {branch}, working tree clean"),
        n => format!("a git repository on {branch}, {n} changed or untracked files"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn project_instructions_and_environment_facts_are_included() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        std::fs::write(dir.path().join("AGENTS.md"), "Always run `make check`.")
            .unwrap_or_else(|e| panic!("{e}"));
        let (prompt, notices) = system_prompt(dir.path(), &Confinement::default(), None).await;
        assert!(notices.is_empty(), "{notices:?}");
        assert!(prompt.starts_with("You are mnemo"));
        assert!(prompt.contains("Project instructions from AGENTS.md"));
        assert!(prompt.contains("Always run `make check`."));
        assert!(!prompt.contains("CLAUDE.md"));
        assert!(prompt.contains(&dir.path().display().to_string()));
        assert!(prompt.contains("not a git repository"));
    }

    #[tokio::test]
    async fn claude_md_stands_in_only_where_no_agents_md_is_and_the_person_comes_first() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let (ws, config) = (dir.path().join("ws"), dir.path().join("cfg"));
        for path in [&ws, &config] {
            std::fs::create_dir(path).unwrap_or_else(|e| panic!("{e}"));
        }
        std::fs::write(ws.join("CLAUDE.md"), "CLAUDE-RULE").unwrap_or_else(|e| panic!("{e}"));
        std::fs::write(config.join("AGENTS.md"), "PERSON-RULE").unwrap_or_else(|e| panic!("{e}"));
        let confinement = Confinement::default();
        let (prompt, _) = system_prompt(&ws, &confinement, Some(&config)).await;
        let person = prompt.find("PERSON-RULE");
        let project = prompt.find("Project instructions from CLAUDE.md\n\nCLAUDE-RULE");
        assert!(
            person.is_some() && project.is_some() && person < project,
            "{prompt}"
        );
        std::fs::write(ws.join("AGENTS.md"), "AGENTS-RULE").unwrap_or_else(|e| panic!("{e}"));
        let (prompt, _) = system_prompt(&ws, &confinement, None).await;
        assert!(prompt.contains("AGENTS-RULE"));
        assert!(!prompt.contains("CLAUDE-RULE") && !prompt.contains("PERSON-RULE"));
    }
}
