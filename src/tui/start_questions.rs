//! What only the person at the terminal may decide, asked before the session screen opens:
//! whether to trust a workspace whose `.mnemo/config.toml` asks for more than an untrusted one
//! gets, and whether to work in a workspace as broad as `/` or the home directory. Asked on the
//! plain terminal (line by line, default no), so the answer cannot come from anything typed
//! for the agent.

use std::io::{self, BufRead, Write};

use crate::config::{CliOverrides, Dirs, trust};
use crate::launch::{self, LaunchError, Loaded};

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
    dirs: &Dirs,
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
            trust::trust(dirs, &loaded.workspace)?;
            loaded = launch::load_config(&loaded.workspace, cli)?;
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
