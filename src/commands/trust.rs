//! `mnemo trust`: lets this workspace's `.mnemo/config.toml` lower safety or route keys, as it
//! is now; `--revoke` takes that back and `--list` shows the trusted workspaces.

use std::io::Write;
use std::path::Path;

use super::CommandError;
use crate::config::trust::{self, Trust, TrustError};
use crate::config::{ConfigSources, Dirs};

impl From<TrustError> for CommandError {
    fn from(error: TrustError) -> Self {
        CommandError::Usage(error.to_string())
    }
}

/// Trusts `workspace`, saying what its file asks for that now takes effect.
pub fn trust(
    dirs: &Dirs,
    workspace: &Path,
    sources: &ConfigSources,
    out: &mut impl Write,
) -> Result<(), CommandError> {
    match trust::trust(dirs, workspace)? {
        Trust::NoConfig => writeln!(
            out,
            "trusted {} (it has no .mnemo/config.toml yet; one added later must be trusted \
             again)",
            workspace.display()
        )?,
        _ => {
            writeln!(
                out,
                "trusted {} with its .mnemo/config.toml",
                workspace.display()
            )?;
            for setting in &sources.ignored {
                writeln!(out, "  now applies: {setting}")?;
            }
            writeln!(
                out,
                "a later change to the file needs `mnemo trust` again; `mnemo trust --revoke` \
                 undoes this"
            )?;
        }
    }
    Ok(())
}

pub fn revoke(dirs: &Dirs, workspace: &Path, out: &mut impl Write) -> Result<(), CommandError> {
    match trust::revoke(dirs, workspace)? {
        true => writeln!(out, "{} is no longer trusted", workspace.display())?,
        false => writeln!(out, "{} was not trusted", workspace.display())?,
    }
    Ok(())
}

pub fn list(dirs: &Dirs, out: &mut impl Write) -> Result<(), CommandError> {
    let trusted = trust::list(dirs)?;
    if trusted.is_empty() {
        writeln!(out, "no workspace is trusted")?;
    }
    for (path, when) in trusted {
        writeln!(out, "{}  (since {when})", path.display())?;
    }
    Ok(())
}
