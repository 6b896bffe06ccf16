//! `mnemo skills`: see the skills of this workspace with their uses, check learned ones
//! still work (`metadata.verify`, run in the sandbox like the shell tool's commands), pin
//! them against ageing and archive them.

use std::io::Write;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use tokio_util::sync::CancellationToken;

use super::{CommandError, column_width, local_time};
use crate::host::Loaded;
use crate::memory::skills::{SkillOrigin, SkillStats};
use crate::sandbox::{ApprovalMode, Confinement, SandboxPolicy};
use crate::skills::{Skill, SkillSet};
use crate::tools::approvals::Approvals;
use crate::tools::process::{self, SandboxSlot};
use crate::tools::{ToolContext, ToolError};

/// Lines of a failed check's output shown.
const TAIL_LINES: usize = 10;

fn unknown(name: &str) -> CommandError {
    CommandError::Usage(format!(
        "there is no skill named `{name}` (`mnemo skills list` shows them)"
    ))
}

/// mnemo's config directory, which holds the person's skills and the archive.
fn config_dir(loaded: &Loaded) -> Result<PathBuf, CommandError> {
    loaded.dirs.config.clone().ok_or_else(|| {
        CommandError::Usage(
            "no config directory could be found for the skills; set MNEMO_CONFIG_DIR".into(),
        )
    })
}

/// The skills on disk and the stored stats.
fn load(loaded: &Loaded) -> Result<(SkillSet, Vec<SkillStats>), CommandError> {
    let skills = crate::skills::discover(&loaded.workspace, &config_dir(loaded)?);
    let stats = loaded.store()?.call_blocking(|db| db.skill_stats())?;
    Ok((skills, stats))
}

fn stats_of<'a>(stats: &'a [SkillStats], name: &str) -> Option<&'a SkillStats> {
    stats.iter().find(|s| s.name == name)
}

/// A skill without stats was found on disk, not written by mnemo.
fn origin(stats: Option<&SkillStats>) -> SkillOrigin {
    stats.map_or(SkillOrigin::Person, |s| s.origin)
}

/// `ok`, or the marks that apply, joined by commas.
fn state(stats: Option<&SkillStats>) -> String {
    let Some(stats) = stats else {
        return "ok".into();
    };
    let marks: Vec<&str> = [
        (stats.pinned, "pinned"),
        (stats.suspect, "suspect"),
        (stats.stale, "stale"),
    ]
    .into_iter()
    .filter_map(|(set, mark)| set.then_some(mark))
    .collect();
    match marks.is_empty() {
        true => "ok".into(),
        false => marks.join(","),
    }
}

/// Every skill, one line each; skills that could not be read are named on `err`.
pub fn list(
    loaded: &Loaded,
    out: &mut impl Write,
    err: &mut impl Write,
) -> Result<(), CommandError> {
    let (skills, stats) = load(loaded)?;
    for warning in skills.warnings() {
        writeln!(err, "warning: skipped {warning}")?;
    }
    if skills.is_empty() {
        writeln!(out, "No skills yet.")?;
        return Ok(());
    }
    let width = column_width(skills.iter().map(|s| s.name.as_str()), "NAME");
    writeln!(
        out,
        "{:<width$}  {:<7}  {:<8}  {:>4}  {:<16}  STATE",
        "NAME", "SOURCE", "ORIGIN", "USES", "LAST USED"
    )?;
    for skill in skills.iter() {
        let stats = stats_of(&stats, &skill.name);
        writeln!(
            out,
            "{:<width$}  {:<7}  {:<8}  {:>4}  {:<16}  {}",
            skill.name,
            skill.source.as_str(),
            origin(stats).as_str(),
            stats.map_or(0, |s| s.loads),
            stats
                .and_then(|s| s.last_used)
                .map_or("never".into(), local_time),
            state(stats),
        )?;
    }
    Ok(())
}

/// The frontmatter, folder, stats and body of one skill.
pub fn show(loaded: &Loaded, name: &str, out: &mut impl Write) -> Result<(), CommandError> {
    let (skills, stats) = load(loaded)?;
    let skill = skills.get(name).ok_or_else(|| unknown(name))?;
    let stats = stats_of(&stats, name);
    let read_only = if skill.writable() { "" } else { ", read-only" };
    writeln!(
        out,
        "{} — {} skill{read_only}\n",
        skill.name,
        skill.source.as_str()
    )?;
    writeln!(out, "{}\n", skill.description.trim_end())?;
    let mut fields: Vec<(String, String)> =
        vec![("path".into(), skill.file().display().to_string())];
    let optional = [
        ("license", skill.license.clone()),
        ("compatibility", skill.compatibility.clone()),
        (
            "allowed tools",
            (!skill.allowed_tools.is_empty()).then(|| skill.allowed_tools.join(" ")),
        ),
    ];
    fields.extend(
        optional
            .into_iter()
            .filter_map(|(label, value)| Some((label.to_owned(), value?))),
    );
    fields.extend(skill.metadata.iter().map(|(key, value)| {
        let value = value
            .as_str()
            .map_or_else(|| value.to_string(), str::to_owned);
        (format!("metadata.{key}"), value)
    }));
    fields.extend(stats_fields(stats));
    for (label, value) in fields {
        writeln!(out, "{:<14} {value}", format!("{label}:"))?;
    }
    writeln!(out, "\n{}", skill.body.trim_end())?;
    Ok(())
}

/// Who wrote the skill, its uses and its state, as labelled values.
fn stats_fields(stats: Option<&SkillStats>) -> Vec<(String, String)> {
    let mut written = origin(stats).as_str().to_owned();
    if let Some(session) = stats.and_then(|s| s.session_id.as_deref()) {
        written.push_str(&format!(" (session {session}"));
        if let Some(turn) = stats.and_then(|s| s.turn) {
            written.push_str(&format!(", turn {turn}"));
        }
        written.push(')');
    }
    let mut fields = vec![("origin".to_owned(), written)];
    match stats {
        None => fields.push(("uses".into(), "never loaded".into())),
        Some(stats) => {
            let last = stats
                .last_used
                .map_or("never".into(), |at| format!("last {}", local_time(at)));
            fields.push((
                "uses".into(),
                format!(
                    "{} ({last}); turns {} ok, {} failed",
                    stats.loads, stats.successes, stats.failures
                ),
            ));
            fields.push(("created".into(), local_time(stats.created_at)));
        }
    }
    fields.push(("state".into(), state(stats)));
    fields
}

/// Runs the `metadata.verify` command of `name`, or of every learned skill that has one, in
/// the sandbox from the workspace. True when every check passed.
pub async fn verify(
    loaded: &Loaded,
    name: Option<&str>,
    out: &mut impl Write,
) -> Result<bool, CommandError> {
    let store = loaded.store()?;
    let skills = crate::skills::discover(&loaded.workspace, &config_dir(loaded)?);
    let stats = store.call(|db| db.skill_stats()).await?;
    let checks: Vec<(&Skill, &str)> = match name {
        Some(name) => {
            let skill = skills.get(name).ok_or_else(|| unknown(name))?;
            let command = skill.verify_command().ok_or_else(|| {
                CommandError::Usage(format!(
                    "skill `{name}` has no `metadata.verify` command to run"
                ))
            })?;
            vec![(skill, command)]
        }
        None => skills
            .iter()
            .filter(|s| origin(stats_of(&stats, &s.name)) == SkillOrigin::Learned)
            .filter_map(|s| Some((s, s.verify_command()?)))
            .collect(),
    };
    if checks.is_empty() {
        writeln!(out, "No learned skill has a verify command.")?;
        return Ok(true);
    }
    let config = &loaded.config;
    // A check is a command the agent wrote: it runs sandboxed whatever the approval mode.
    let mut sandbox = config.sandbox.config();
    if sandbox.policy == SandboxPolicy::FullAccess {
        sandbox.policy = SandboxPolicy::WorkspaceWrite;
    }
    let mode = match config.approval {
        ApprovalMode::ReadOnly => ApprovalMode::ReadOnly,
        _ => ApprovalMode::Auto,
    };
    let approvals = Arc::new(Approvals::confined(
        sandbox,
        mode,
        Arc::new(Confinement::from_section(&config.sandbox)),
    ));
    let timeout = Duration::from_secs(config.agent.tool_timeout_secs);
    let slot = SandboxSlot::default();
    let mut passed = true;
    for (skill, command) in checks {
        let ctx = ToolContext::new(
            loaded.workspace.clone(),
            "skills-verify",
            skill.name.clone(),
            CancellationToken::new(),
            timeout,
            None,
            approvals.clone(),
        );
        let outcome = match slot.get(&ctx, None) {
            Ok(sandbox) => {
                let within = sandbox.config().describe();
                writeln!(out, "run     {} ({within}): {command}", skill.name)?;
                out.flush()?;
                process::run(&sandbox, command, None, timeout, &ctx).await
            }
            Err(error) => Err(error),
        };
        let failure = match outcome {
            Ok(finished) if finished.status.success() => None,
            Ok(finished) => Some((
                format!("{}", finished.status),
                finished.combined + &finished.note.unwrap_or_default(),
            )),
            Err(ToolError::TimedOut { after, output }) => {
                Some((format!("timed out after {} s", after.as_secs()), output))
            }
            Err(error) => Some(("could not run".to_owned(), error.to_string())),
        };
        match failure {
            None => writeln!(out, "ok      {}", skill.name)?,
            Some((why, output)) => {
                passed = false;
                writeln!(out, "FAILED  {} ({why}): {command}", skill.name)?;
                for line in tail(&output) {
                    writeln!(out, "    {line}")?;
                }
            }
        }
    }
    Ok(passed)
}

/// The last [`TAIL_LINES`] lines of `output`.
fn tail(output: &str) -> Vec<&str> {
    let lines: Vec<&str> = output.trim_end().lines().collect();
    lines[lines.len().saturating_sub(TAIL_LINES)..].to_vec()
}

/// Pins (`pinned`: never ages) or unpins a skill.
pub fn pin(
    loaded: &Loaded,
    name: &str,
    pinned: bool,
    out: &mut impl Write,
) -> Result<(), CommandError> {
    let skills = crate::skills::discover(&loaded.workspace, &config_dir(loaded)?);
    if skills.get(name).is_none() {
        return Err(unknown(name));
    }
    let wanted = name.to_owned();
    loaded.store()?.call_blocking(move |db| {
        if !db.pin_skill(&wanted, pinned)? {
            // Found on disk, never loaded: a person's skill.
            db.skill_written(&wanted, SkillOrigin::Person, None, None)?;
            db.pin_skill(&wanted, pinned)?;
        }
        Ok(())
    })?;
    let done = if pinned { "pinned" } else { "unpinned" };
    writeln!(out, "{done} skill {name}")?;
    Ok(())
}

/// Moves a skill's folder to the archive and forgets its stats; Claude's skills are refused.
pub fn remove(loaded: &Loaded, name: &str, out: &mut impl Write) -> Result<(), CommandError> {
    let config_dir = config_dir(loaded)?;
    let skills = crate::skills::discover(&loaded.workspace, &config_dir);
    let skill = skills.get(name).ok_or_else(|| unknown(name))?;
    if !skill.writable() {
        return Err(CommandError::Usage(format!(
            "skill `{name}` is Claude's ({}) and read-only for mnemo; remove its folder \
             yourself if you mean to",
            skill.dir.display()
        )));
    }
    let now = chrono::Utc::now().timestamp_millis();
    let to = crate::skills::archive(skill, &config_dir, now)?;
    let wanted = name.to_owned();
    loaded
        .store()?
        .call_blocking(move |db| db.forget_skill(&wanted))?;
    writeln!(out, "archived skill {name} to {}", to.display())?;
    Ok(())
}
