//! Heartbeat files: Markdown with YAML frontmatter (when, where, which model, where the report
//! goes) and a body that is the prompt, usually a checklist. They live in the user's
//! `<config dir>/heartbeat/` and in a workspace's `.mnemo/heartbeat/`; the workspace ones
//! arrive with the repository (or a command planted them), so they run only while the person's
//! trust covers them as they are now, and they are read through the workspace guard (never
//! behind a symlinked `.mnemo`). A bad file is reported on its own and never stops the others.

use std::path::{Path, PathBuf};

use chrono::{DateTime, Utc};
use serde::Deserialize;

use super::cron::CronLine;
use super::delivery::Channel;
use super::job::{HEARTBEAT_OK, Job, Source};
use super::plan::{Rule, Timing};
use super::timing::{ActiveHours, Zone, parse_duration};
use crate::config::Dirs;
use crate::config::heartbeat_files::{DIR, WorkspaceFile, digest, workspace_files};
use crate::config::trust;

#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{}: {message}", path.display())]
pub struct HeartbeatError {
    pub path: PathBuf,
    pub message: String,
}

/// Where a heartbeat file was found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Origin {
    /// The user's config dir: the file must name its workspace.
    User,
    /// This workspace's `.mnemo/heartbeat/`: it runs there.
    Workspace(PathBuf),
}

#[derive(Debug, Clone, PartialEq)]
pub struct Heartbeat {
    pub name: String,
    pub path: PathBuf,
    pub enabled: bool,
    pub timing: Timing,
    pub workspace: PathBuf,
    pub model: Option<String>,
    pub deliver: Vec<Channel>,
    /// The body of the file.
    pub checklist: String,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Frontmatter {
    name: Option<String>,
    /// `interval:` is the same (Memoo's heartbeat files say so).
    #[serde(alias = "interval")]
    every: Option<String>,
    cron: Option<String>,
    enabled: Option<bool>,
    workspace: Option<PathBuf>,
    model: Option<String>,
    active_hours: Option<String>,
    timezone: Option<String>,
    deliver: Option<OneOrMany>,
}

#[derive(Deserialize)]
#[serde(untagged)]
enum OneOrMany {
    One(String),
    Many(Vec<String>),
}

/// Reads one heartbeat file's text.
pub fn parse(path: &Path, text: &str, origin: &Origin) -> Result<Heartbeat, String> {
    let (yaml, body) = split_frontmatter(text)?;
    let front: Frontmatter =
        serde_yaml_ng::from_str(yaml).map_err(|e| format!("frontmatter: {e}"))?;
    let zone = match &front.timezone {
        Some(name) => Zone::parse(name)?,
        None => Zone::Local,
    };
    let rule = match (&front.every, &front.cron) {
        (Some(every), None) => Rule::Every {
            every: parse_duration(every)?,
            first: None,
        },
        (None, Some(line)) => Rule::Cron(
            CronLine::parse(line).map_err(|e| format!("cron `{line}` is not valid: {e}"))?,
        ),
        (Some(_), Some(_)) => return Err("give either `every` or `cron`, not both".into()),
        (None, None) => return Err("say when it runs: `every: 30m` or `cron: 0 9 * * 1-5`".into()),
    };
    let hours = front
        .active_hours
        .as_deref()
        .map(ActiveHours::parse)
        .transpose()?;
    let deliver = match front.deliver {
        None => vec![Channel::Log],
        Some(OneOrMany::One(name)) => vec![Channel::parse(&name)?],
        Some(OneOrMany::Many(names)) => names
            .iter()
            .map(|n| Channel::parse(n))
            .collect::<Result<_, _>>()?,
    };
    let checklist = body.trim().to_string();
    if checklist.is_empty() {
        return Err("the body (the prompt the heartbeat runs) is empty".into());
    }
    let name = match front.name {
        Some(name) if !name.trim().is_empty() => name.trim().to_string(),
        _ => file_stem(path),
    };
    Ok(Heartbeat {
        name,
        path: path.to_path_buf(),
        enabled: front.enabled.unwrap_or(true),
        timing: Timing { rule, hours, zone },
        workspace: workspace(front.workspace, origin)?,
        model: front.model,
        deliver,
        checklist,
    })
}

fn split_frontmatter(text: &str) -> Result<(&str, &str), String> {
    let missing = || "no YAML frontmatter: start the file with a `---` line".to_string();
    let text = text.trim_start_matches('\u{feff}');
    let rest = text
        .strip_prefix("---\n")
        .or_else(|| text.strip_prefix("---\r\n"))
        .ok_or_else(missing)?;
    let mut offset = 0;
    for line in rest.split_inclusive('\n') {
        if line.trim_end() == "---" {
            return Ok((&rest[..offset], &rest[offset + line.len()..]));
        }
        offset += line.len();
    }
    Err("the frontmatter has no closing `---` line".into())
}

fn file_stem(path: &Path) -> String {
    path.file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default()
}

/// The workspace the heartbeat runs in: a user file must name one; a workspace file runs in
/// its own workspace and may not point elsewhere.
fn workspace(named: Option<PathBuf>, origin: &Origin) -> Result<PathBuf, String> {
    let named = named.map(expand_home);
    let resolve = |path: &Path| {
        path.canonicalize()
            .map_err(|e| format!("workspace {}: {e}", path.display()))
    };
    match (origin, named) {
        (Origin::User, Some(path)) => resolve(&path),
        (Origin::User, None) => Err("say which `workspace` the heartbeat runs in".into()),
        (Origin::Workspace(own), None) => Ok(own.clone()),
        (Origin::Workspace(own), Some(path)) if resolve(&path)? == *own => Ok(own.clone()),
        (Origin::Workspace(_), Some(path)) => Err(format!(
            "a workspace's heartbeat runs in that workspace, not in {}",
            path.display()
        )),
    }
}

fn expand_home(path: PathBuf) -> PathBuf {
    match (path.strip_prefix("~"), std::env::var_os("HOME")) {
        (Ok(rest), Some(home)) => PathBuf::from(home).join(rest),
        _ => path,
    }
}

impl Heartbeat {
    /// The key of its run record: its file.
    pub fn key(&self) -> String {
        format!("heartbeat:{}", self.path.display())
    }

    /// The job that runs this heartbeat; one that never ran counts its cron line from `since`.
    pub fn job(&self, since: DateTime<Utc>) -> Job {
        let prompt = format!(
            "This is the heartbeat `{name}`, run by mnemo serve while nobody watches: nobody \
             can answer approval questions, so anything that needs approval is denied. Work \
             through the checklist below. If there is nothing to report, reply with exactly \
             {HEARTBEAT_OK} and nothing else; otherwise reply with a short report.\n\n{list}",
            name = self.name,
            list = self.checklist
        );
        Job {
            key: self.key(),
            label: format!("heartbeat {}", self.name),
            source: Source::Heartbeat(self.path.clone()),
            timing: self.timing.clone(),
            since,
            workspace: self.workspace.clone(),
            model: self.model.clone(),
            prompt,
            deliver: self.deliver.clone(),
            rights: None,
        }
    }
}

/// Every heartbeat file found, parsed or not.
#[derive(Debug, Default)]
pub struct Heartbeats {
    pub found: Vec<Heartbeat>,
    pub errors: Vec<HeartbeatError>,
    /// Workspaces with heartbeat files that do not run because the person has not trusted
    /// the workspace (`mnemo trust`).
    pub untrusted: Vec<PathBuf>,
}

/// Reads the user's heartbeats and those of every trusted workspace and of `workspaces`
/// (canonical paths; untrusted ones are only reported).
pub fn load(dirs: &Dirs, workspaces: &[PathBuf]) -> Heartbeats {
    let mut all = Heartbeats::default();
    if let Some(config) = &dirs.config {
        read_dir(&config.join(DIR), &Origin::User, &mut all);
    }
    let mut places: Vec<PathBuf> = trust::list(dirs)
        .map(|list| list.into_iter().map(|(path, _)| path).collect())
        .unwrap_or_default();
    places.extend(workspaces.iter().cloned());
    places.sort();
    places.dedup();
    for workspace in places {
        let files = match workspace_files(&workspace) {
            Ok(None) => continue,
            Ok(Some(files)) => files,
            Err(error) => {
                all.errors.push(HeartbeatError {
                    path: error.path,
                    message: error.message,
                });
                continue;
            }
        };
        if !covered(dirs, &workspace, &files) {
            all.untrusted.push(workspace);
            continue;
        }
        let origin = Origin::Workspace(workspace);
        for (path, text) in files {
            match text.and_then(|text| parse(&path, &text, &origin)) {
                Ok(heartbeat) => all.found.push(heartbeat),
                Err(message) => all.errors.push(HeartbeatError { path, message }),
            }
        }
    }
    all
}

/// Whether the person trusted `workspace` with its config file and heartbeat files as they
/// are now. A heartbeat planted since (by a command, a pull) takes the trust away.
pub fn is_trusted(dirs: &Dirs, workspace: &Path) -> bool {
    match workspace_files(workspace) {
        Ok(files) => covered(dirs, workspace, &files.unwrap_or_default()),
        Err(_) => false,
    }
}

fn covered(dirs: &Dirs, workspace: &Path, files: &[WorkspaceFile]) -> bool {
    let config = trust::workspace_config(workspace).map(|(_, f)| f);
    trust::covers(dirs, workspace, config.as_deref(), &digest(files))
}

fn read_dir(dir: &Path, origin: &Origin, all: &mut Heartbeats) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    let mut paths: Vec<PathBuf> = entries
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == "md"))
        .collect();
    paths.sort();
    for path in paths {
        let parsed = std::fs::read_to_string(&path)
            .map_err(|e| e.to_string())
            .and_then(|text| parse(&path, &text, origin));
        match parsed {
            Ok(heartbeat) => all.found.push(heartbeat),
            Err(message) => all.errors.push(HeartbeatError { path, message }),
        }
    }
}

#[cfg(test)]
#[path = "heartbeat_tests.rs"]
mod tests;
