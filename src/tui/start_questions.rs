//! What only the person at the terminal may decide, asked before the session screen opens:
//! whether to trust a workspace whose `.mnemo/config.toml` asks for more than an untrusted one
//! gets, and whether to work in a workspace as broad as `/` or the home directory. Asked on the
//! plain terminal (line by line, default no), so the answer cannot come from anything typed
//! for the agent.

use std::io::{self, BufRead, Write};

use crate::config::{CliOverrides, trust};
use crate::host::{self, LaunchError, Loaded};

/// How the questions ended.
pub enum Outcome {
    /// Go on with this configuration (reloaded when the person trusted the workspace).
    Start(Box<Loaded>),
    /// The person declined to work in a broad workspace.
    Quit,
}

#[derive(Debug, thiserror::Error)]
pub enum QuestionError {
    #[error(transparent)]
    Io(#[from] io::Error),
    #[error(transparent)]
    Launch(#[from] LaunchError),
    #[error(transparent)]
    Trust(#[from] trust::TrustError),
}

/// Asks what needs asking; `cli.broad_workspace` is set when the person confirms a broad
/// workspace.
pub fn ask(
    loaded: Loaded,
    cli: &mut CliOverrides,
    input: &mut impl BufRead,
    output: &mut impl Write,
) -> Result<Outcome, QuestionError> {
    let mut loaded = loaded;
    if let Some(broad) = loaded.broad_workspace()
        && !cli.broad_workspace
    {
        writeln!(output, "mnemo: {}.", broad.describe(&loaded.workspace))?;
        if !broad.can_confirm() {
            return Ok(Outcome::Quit);
        }
        if !yes(input, output, "Let the agent work here anyway? [y/N] ")? {
            writeln!(output, "Start mnemo in a project directory instead.")?;
            return Ok(Outcome::Quit);
        }
        cli.broad_workspace = true;
    }
    if !loaded.sources.ignored.is_empty() {
        let file = loaded
            .sources
            .workspace_file
            .as_ref()
            .map_or_else(String::new, |f| f.display().to_string());
        writeln!(
            output,
            "mnemo: {file} asks for settings an untrusted workspace does not get:"
        )?;
        for setting in &loaded.sources.ignored {
            writeln!(output, "    {setting}")?;
        }
        writeln!(
            output,
            "Trusting this workspace applies them (until the file changes). Only trust a \
             repository you know."
        )?;
        if yes(input, output, "Trust this workspace? [y/N] ")? {
            let dirs = loaded.dirs.clone();
            trust::trust(&dirs, &loaded.workspace)?;
            let services = loaded.services.clone();
            loaded = host::load_config_from(&dirs, &loaded.workspace, cli)?;
            loaded.services = services;
        } else {
            writeln!(output, "Going on without them.")?;
        }
    }
    Ok(Outcome::Start(Box::new(loaded)))
}

fn yes(input: &mut impl BufRead, output: &mut impl Write, prompt: &str) -> io::Result<bool> {
    write!(output, "{prompt}")?;
    output.flush()?;
    let mut answer = String::new();
    input.read_line(&mut answer)?;
    Ok(matches!(answer.trim(), "y" | "Y" | "yes" | "Yes"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Dirs;
    use crate::sandbox::ApprovalMode;

    type TestResult = Result<(), Box<dyn std::error::Error>>;

    fn hostile_workspace() -> Result<(tempfile::TempDir, Dirs), Box<dyn std::error::Error>> {
        let root = tempfile::tempdir()?;
        let ws = root.path().join("ws");
        std::fs::create_dir_all(ws.join(".mnemo"))?;
        std::fs::write(ws.join(".mnemo/config.toml"), "approval = \"full\"\n")?;
        let dirs = Dirs {
            config: Some(root.path().join("config")),
            data: Some(root.path().join("data")),
        };
        Ok((root, dirs))
    }

    fn questions(
        answer: &str,
        root: &tempfile::TempDir,
        dirs: &Dirs,
    ) -> Result<(Outcome, String), Box<dyn std::error::Error>> {
        let mut cli = CliOverrides::default();
        let loaded = host::load_config_from(dirs, &root.path().join("ws"), &cli)?;
        let mut output = Vec::new();
        let outcome = ask(loaded, &mut cli, &mut answer.as_bytes(), &mut output)?;
        Ok((outcome, String::from_utf8(output)?))
    }

    #[test]
    fn a_workspace_asking_for_more_is_trusted_only_on_yes() -> TestResult {
        let (root, dirs) = hostile_workspace()?;
        let (outcome, shown) = questions("\n", &root, &dirs)?;
        assert!(shown.contains("approval = \"full\""), "{shown}");
        assert!(shown.contains("Trust this workspace? [y/N]"), "{shown}");
        assert!(shown.contains("Going on without them."), "{shown}");
        let Outcome::Start(loaded) = outcome else {
            panic!("the session should start")
        };
        assert_eq!(loaded.config.approval, ApprovalMode::Auto);

        let (outcome, _) = questions("y\n", &root, &dirs)?;
        let Outcome::Start(loaded) = outcome else {
            panic!("the session should start")
        };
        assert_eq!(loaded.config.approval, ApprovalMode::Full);
        // Trusted now: the next start asks nothing.
        let (_, shown) = questions("", &root, &dirs)?;
        assert_eq!(shown, "");
        Ok(())
    }
}
