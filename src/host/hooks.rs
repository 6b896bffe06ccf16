//! Which hooks a session runs: the person's own `[hooks]` (of their config file, or of a
//! trusted workspace's `.mnemo/config.toml`: an untrusted one's are dropped with its other
//! settings) and those of the workspace's `.claude/settings.json`, only while the person
//! trusted the workspace with that file exactly as it is (`mnemo trust` records its SHA-256).

use std::path::Path;

use crate::config::{Dirs, trust};
use crate::hooks::{Hooks, HooksConfig, parse_claude_settings, read_claude_settings};

/// The session's hooks, and a note for the person for each one that does not run.
pub fn load(
    configured: &HooksConfig,
    dirs: &Dirs,
    workspace: &Path,
    distrust_workspace: bool,
    key_vars: &[String],
) -> (Hooks, Vec<String>) {
    let mut sources = Vec::new();
    let mut notes = Vec::new();
    if !configured.is_empty() {
        sources.push(("[hooks] of config.toml".to_string(), configured.clone()));
    }
    match read_claude_settings(workspace) {
        Ok(None) => {}
        Err(why) => notes.push(format!("hooks not read: {why}")),
        Ok(Some((path, text))) => match parse_claude_settings(&text) {
            Err(why) => notes.push(format!("hooks not read: {why}")),
            Ok(hooks) if hooks.is_empty() => {}
            Ok(hooks) => {
                let config = trust::workspace_config(workspace).map(|(_, f)| f);
                let settings = trust::fingerprint(text.as_bytes());
                let trusted = !distrust_workspace
                    && trust::covers_claude_settings(dirs, workspace, config.as_deref(), &settings);
                match trusted {
                    true => sources.push((path.display().to_string(), hooks)),
                    false => notes.push(format!(
                        "the hooks of {} do not run: the workspace is not trusted with this \
                         file as it is now. Review them, then run `mnemo trust`",
                        path.display()
                    )),
                }
            }
        },
    }
    let (hooks, more) = Hooks::build(workspace.to_path_buf(), &sources);
    notes.extend(more);
    (hooks.withhold(key_vars), notes)
}
