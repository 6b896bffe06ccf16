//! The system prompt: the constitution, the project's own instructions (AGENTS.md, CLAUDE.md)
//! and facts about the environment. Built once per session so the prefix stays cacheable.

use std::path::Path;
use std::process::Stdio;

const CONSTITUTION: &str = include_str!("../../assets/constitution.md");
/// Project instruction files are cut here so a huge file cannot crowd out the conversation.
const MAX_INSTRUCTIONS_BYTES: usize = 32 * 1024;

pub async fn system_prompt(workspace: &Path) -> String {
    let mut prompt = String::from(CONSTITUTION);
    for name in ["AGENTS.md", "CLAUDE.md"] {
        if let Ok(text) = tokio::fs::read_to_string(workspace.join(name)).await {
            let text = crate::tools::truncate::head_tail(text.trim(), MAX_INSTRUCTIONS_BYTES);
            prompt.push_str(&format!("\n# Project instructions from {name}\n\n{text}\n"));
        }
    }
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
    prompt
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
        let prompt = system_prompt(dir.path()).await;
        assert!(prompt.starts_with("You are mnemo"));
        assert!(prompt.contains("Project instructions from AGENTS.md"));
        assert!(prompt.contains("Always run `make check`."));
        assert!(!prompt.contains("CLAUDE.md"));
        assert!(prompt.contains(&dir.path().display().to_string()));
        assert!(prompt.contains("not a git repository"));
    }
}
