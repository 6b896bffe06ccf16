//! The system prompt: the constitution, the project's own instructions (AGENTS.md, CLAUDE.md)
//! and facts about the environment. Built once per session so the prefix stays cacheable.

use std::path::{Path, PathBuf};
use std::process::Stdio;

use crate::sandbox::Confinement;
use crate::sandbox::workspace_read::read_text;

const CONSTITUTION: &str = include_str!("../../assets/constitution.md");
/// Project instruction files are cut here so a huge file cannot crowd out the conversation.
const MAX_INSTRUCTIONS_BYTES: usize = 32 * 1024;
/// At most this much of an instruction file is read; its head and tail are then kept.
const INSTRUCTIONS_READ_LIMIT: usize = 256 * 1024;
const INSTRUCTION_FILES: [&str; 2] = ["AGENTS.md", "CLAUDE.md"];

/// The system prompt of a session in `workspace`, and what the person should be told about
/// instruction files that were not read (a link out of the workspace, a FIFO, a hidden path).
pub async fn system_prompt(workspace: &Path, confinement: &Confinement) -> (String, Vec<String>) {
    let mut prompt = String::from(CONSTITUTION);
    let (instructions, notices) = instructions(workspace, confinement).await;
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

/// The project's instruction files, read through the workspace guard off the async threads.
async fn instructions(workspace: &Path, confinement: &Confinement) -> (String, Vec<String>) {
    let workspace: PathBuf = workspace.to_path_buf();
    let confinement = confinement.clone();
    let read = move || {
        let mut section = String::new();
        let mut notices = Vec::new();
        for name in INSTRUCTION_FILES {
            let found = read_text(
                &workspace,
                Path::new(name),
                &confinement,
                INSTRUCTIONS_READ_LIMIT,
            );
            match found {
                Ok(Some(file)) => {
                    let text = crate::text::head_tail(file.text.trim(), MAX_INSTRUCTIONS_BYTES);
                    section.push_str(&format!("\n# Project instructions from {name}\n\n{text}\n"));
                }
                Ok(None) => {}
                Err(skipped) => notices.push(skipped.to_string()),
            }
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
        let (prompt, notices) = system_prompt(dir.path(), &Confinement::default()).await;
        assert!(notices.is_empty(), "{notices:?}");
        assert!(prompt.starts_with("You are mnemo"));
        assert!(prompt.contains("Project instructions from AGENTS.md"));
        assert!(prompt.contains("Always run `make check`."));
        assert!(!prompt.contains("CLAUDE.md"));
        assert!(prompt.contains(&dir.path().display().to_string()));
        assert!(prompt.contains("not a git repository"));
    }
}
