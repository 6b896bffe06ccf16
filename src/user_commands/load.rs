//! Finding the command files: the workspace's through its guard (listed without following
//! links, read through `workspace_read`), the person's own from the config directory.

use std::path::{Path, PathBuf};

use serde::Deserialize;

use super::{Source, UserCommand, UserCommands};
use crate::sandbox::workspace_read::read_text;
use crate::sandbox::{Confinement, handles};

/// The most of one command file that is read.
const FILE_LIMIT: usize = 64 * 1024;
/// Commands taken from one folder.
const PER_FOLDER: usize = 200;
const DESCRIPTION_CHARS: usize = 80;

#[derive(Debug, Default, Deserialize)]
#[serde(default, rename_all = "kebab-case")]
struct Front {
    description: Option<String>,
    allowed_tools: Option<Tools>,
    model: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(untagged)]
enum Tools {
    List(Vec<String>),
    Line(String),
}

/// The commands of `workspace` (only when `trusted`; otherwise their names are noted as not
/// run) and of `config_dir`. `reserved` names are mnemo's own commands, which a file cannot
/// replace.
pub fn load(
    workspace: &Path,
    confinement: &Confinement,
    config_dir: Option<&Path>,
    trusted: bool,
    reserved: &[&str],
) -> UserCommands {
    let mut found = UserCommands::default();
    for (folder, source) in [
        (".mnemo/commands", Source::Workspace),
        (".claude/commands", Source::Claude),
    ] {
        let names = workspace_files(workspace, Path::new(folder));
        for name in names {
            let Some(command) = command_name(&name) else {
                continue;
            };
            if !trusted {
                found.untrusted.push(command);
                continue;
            }
            let relative = Path::new(folder).join(&name);
            match read_text(workspace, &relative, confinement, FILE_LIMIT) {
                Ok(Some(text)) => {
                    if text.truncated {
                        found.notices.push(format!(
                            "{}: longer than {} KB; only its start is the command",
                            relative.display(),
                            FILE_LIMIT / 1024
                        ));
                    }
                    add(
                        &mut found, &command, &text.text, source, &relative, reserved,
                    );
                }
                Ok(None) => {}
                Err(skip) => found.notices.push(skip.to_string()),
            }
        }
    }
    if let Some(dir) = config_dir.map(|d| d.join("commands")) {
        for (command, path) in person_files(&dir) {
            match read_limited(&path) {
                Ok(text) => add(&mut found, &command, &text, Source::Person, &path, reserved),
                Err(e) => found.notices.push(format!(
                    "{}: {e}; the command is not offered",
                    path.display()
                )),
            }
        }
    }
    found
}

/// `NAME` of `NAME.md`, when it is a usable command name.
fn command_name(file: &str) -> Option<String> {
    let name = file.strip_suffix(".md")?;
    let fine = !name.is_empty()
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.' | ':'));
    fine.then(|| name.to_string())
}

/// The `.md` files of `folder` beneath the workspace, listed without following links, sorted.
fn workspace_files(workspace: &Path, folder: &Path) -> Vec<String> {
    let Ok(entries) = handles::list(workspace, folder) else {
        return Vec::new();
    };
    let mut names: Vec<String> = entries
        .into_iter()
        .filter(|e| {
            matches!(
                e.kind,
                handles::EntryKind::File | handles::EntryKind::Symlink
            )
        })
        .map(|e| e.name)
        .filter(|n| n.ends_with(".md"))
        .collect();
    names.sort();
    names.truncate(PER_FOLDER);
    names
}

fn person_files(dir: &Path) -> Vec<(String, PathBuf)> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut files: Vec<(String, PathBuf)> = entries
        .filter_map(Result::ok)
        .filter_map(|e| {
            let name = command_name(&e.file_name().to_string_lossy())?;
            Some((name, e.path()))
        })
        .collect();
    files.sort();
    files.truncate(PER_FOLDER);
    files
}

fn read_limited(path: &Path) -> std::io::Result<String> {
    use std::io::Read;
    let mut bytes = Vec::new();
    std::fs::File::open(path)?
        .take(FILE_LIMIT as u64)
        .read_to_end(&mut bytes)?;
    Ok(String::from_utf8_lossy(&bytes).into_owned())
}

fn add(
    found: &mut UserCommands,
    name: &str,
    text: &str,
    source: Source,
    path: &Path,
    reserved: &[&str],
) {
    if reserved.contains(&name) {
        found.notices.push(format!(
            "{}: /{name} is mnemo's own command; rename the file to use it",
            path.display()
        ));
        return;
    }
    if found.find(name).is_some() {
        return;
    }
    let (front, body) = match split(text) {
        Some((yaml, body)) => match serde_yaml_ng::from_str::<Option<Front>>(yaml) {
            Ok(front) => (front.unwrap_or_default(), body),
            Err(e) => {
                found.notices.push(format!(
                    "{}: the frontmatter is not valid YAML ({e}); the command is not offered",
                    path.display()
                ));
                return;
            }
        },
        None => (Front::default(), text),
    };
    let description = front
        .description
        .map(|d| d.trim().to_string())
        .filter(|d| !d.is_empty())
        .unwrap_or_else(|| {
            let line = body.lines().map(str::trim).find(|l| !l.is_empty());
            line.unwrap_or("").to_string()
        });
    let allowed_tools = match front.allowed_tools {
        Some(Tools::List(tools)) => tools,
        Some(Tools::Line(line)) => line
            .split(',')
            .map(|t| t.trim().to_string())
            .filter(|t| !t.is_empty())
            .collect(),
        None => Vec::new(),
    };
    found.commands.push(UserCommand {
        name: name.to_string(),
        description: crate::text::clip(&description, DESCRIPTION_CHARS),
        body: body.trim().to_string(),
        allowed_tools,
        model: front.model.filter(|m| !m.trim().is_empty()),
        source,
    });
}

/// The frontmatter between `---` lines at the top, and the rest.
fn split(text: &str) -> Option<(&str, &str)> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let mut lines = text.split_inclusive('\n');
    if lines.next()?.trim_end() != "---" {
        return None;
    }
    let start = text.find('\n')? + 1;
    let mut at = start;
    for line in lines {
        if line.trim_end() == "---" {
            return Some((&text[start..at], &text[at + line.len()..]));
        }
        at += line.len();
    }
    None
}
