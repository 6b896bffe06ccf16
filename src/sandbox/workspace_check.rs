//! Workspaces too broad to hand to the agent. The workspace is where commands and file tools
//! may write, so started from `/` or the home directory (or a directory above it) mnemo would
//! let the agent write almost anywhere the person can. Such a workspace needs the person's
//! explicit yes; mnemo's own directories can never be one.

use std::path::{Path, PathBuf};

/// Why a workspace is too broad.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Broad {
    /// The root of the file system.
    Root,
    /// The home directory, or a directory that holds it.
    Home(PathBuf),
    /// Inside mnemo's own config or data directory: never allowed.
    OwnDir(PathBuf),
}

impl Broad {
    /// Whether the person may still choose to work there.
    pub fn can_confirm(&self) -> bool {
        !matches!(self, Broad::OwnDir(_))
    }

    pub fn describe(&self, workspace: &Path) -> String {
        match self {
            Broad::Root => format!(
                "the workspace {} is the root of the file system: the agent could write \
                 anywhere you can",
                workspace.display()
            ),
            Broad::Home(home) if home == workspace => format!(
                "the workspace {} is your home directory: the agent could write to all your \
                 files and settings",
                workspace.display()
            ),
            Broad::Home(home) => format!(
                "the workspace {} holds your home directory {}: the agent could write to all \
                 your files",
                workspace.display(),
                home.display()
            ),
            Broad::OwnDir(dir) => format!(
                "the workspace {} lies in mnemo's own directory {}, which the agent must \
                 never write; start mnemo in a project directory",
                workspace.display(),
                dir.display()
            ),
        }
    }
}

/// Whether `workspace` (canonical) is too broad, given the home directory and mnemo's own
/// directories.
pub fn check(workspace: &Path, home: Option<&Path>, own_dirs: &[PathBuf]) -> Option<Broad> {
    let real = |path: &Path| std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf());
    if let Some(dir) = own_dirs
        .iter()
        .map(|d| real(d))
        .find(|d| workspace.starts_with(d))
    {
        return Some(Broad::OwnDir(dir));
    }
    if workspace.parent().is_none() {
        return Some(Broad::Root);
    }
    let home = real(home?);
    home.starts_with(workspace).then_some(Broad::Home(home))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn root_home_and_its_parents_are_broad_projects_are_not() {
        let home = Path::new("/home/ada");
        let own = [PathBuf::from("/home/ada/.local/share/mnemo")];
        let check = |ws: &str| check(Path::new(ws), Some(home), &own);
        assert_eq!(check("/"), Some(Broad::Root));
        assert_eq!(check("/home/ada"), Some(Broad::Home(home.into())));
        assert_eq!(check("/home"), Some(Broad::Home(home.into())));
        assert_eq!(check("/home/ada/src/app"), None);
        assert_eq!(check("/srv/app"), None);
        let own_dir = check("/home/ada/.local/share/mnemo/x");
        assert!(own_dir.as_ref().is_some_and(|b| !b.can_confirm()));
        assert!(Broad::Root.can_confirm());
    }
}
