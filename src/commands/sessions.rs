//! `mnemo sessions`: list, remove, rename and export stored sessions.

use std::io::Write;

use serde_json::json;

use super::{CommandError, local_time};
use crate::host::Loaded;
use crate::llm::transcript::to_markdown;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ExportFormat {
    Markdown,
    Json,
}

/// Which sessions `mnemo sessions` lists.
#[derive(Debug, Clone, Copy, Default)]
pub struct Shown {
    /// Every directory's, not only the workspace's.
    pub all: bool,
    /// Each with its sub-agent sessions indented below it.
    pub tree: bool,
    /// Heartbeat and schedule runs too.
    pub runs: bool,
}

/// Lists sessions of the workspace (or all), newest first.
pub fn list(
    loaded: &Loaded,
    shown: Shown,
    limit: usize,
    out: &mut impl Write,
) -> Result<(), CommandError> {
    let Shown { all, tree, runs } = shown;
    let cwd = (!all).then(|| loaded.workspace_str());
    let rows = loaded.store()?.call_blocking(move |db| {
        let mut rows = Vec::new();
        let listed = match runs {
            true => db.list_sessions(cwd.as_deref(), limit)?,
            false => db.people_sessions(cwd.as_deref(), limit)?,
        };
        for row in listed {
            let below = match tree {
                true => db.descendants(&row.id)?,
                false => Vec::new(),
            };
            rows.push((0, row));
            rows.extend(below);
        }
        Ok(rows)
    })?;
    if rows.is_empty() {
        writeln!(
            out,
            "no sessions yet{}",
            if all {
                ""
            } else {
                " in this directory (--all lists every directory)"
            }
        )?;
        return Ok(());
    }
    // The model column is as wide as its longest name: a cut name may name another model.
    let model_width = super::column_width(rows.iter().map(|(_, r)| r.model.as_str()), "MODEL");
    writeln!(
        out,
        "{:<8}  {:<16}  {:>5}  {:<model_width$}  TITLE",
        "ID", "UPDATED", "MSGS", "MODEL"
    )?;
    for (depth, row) in rows {
        let title = match &row.subtitle {
            Some(sub) => format!("{} — {sub}", row.title),
            None => row.title.clone(),
        };
        let branch = match depth {
            0 => String::new(),
            depth => format!("{}└ ", "  ".repeat(depth as usize - 1)),
        };
        writeln!(
            out,
            "{:<8}  {:<16}  {:>5}  {:<model_width$}  {branch}{}",
            row.id.chars().take(8).collect::<String>(),
            local_time(row.updated_at),
            row.message_count,
            row.model,
            if title.is_empty() {
                "(untitled)"
            } else {
                &title
            },
        )?;
        if all && depth == 0 {
            writeln!(out, "{:<8}  {}", "", row.cwd)?;
        }
    }
    Ok(())
}

pub fn remove(loaded: &Loaded, id: &str, out: &mut impl Write) -> Result<(), CommandError> {
    let wanted = id.to_string();
    let removed = loaded.store()?.call_blocking(move |db| {
        let row = db.session(&wanted)?;
        db.delete_session(&row.id)?;
        Ok(row)
    })?;
    if let Some(root) = loaded.rewind_root() {
        crate::rewind::forget_session(&root, &removed.id)?;
    }
    writeln!(out, "removed session {} ({})", removed.id, removed.title)?;
    Ok(())
}

pub fn rename(
    loaded: &Loaded,
    id: &str,
    title: &str,
    out: &mut impl Write,
) -> Result<(), CommandError> {
    let (wanted, title) = (id.to_string(), title.trim().to_string());
    if title.is_empty() {
        return Err(CommandError::Usage("the new title is empty".into()));
    }
    let row = loaded.store()?.call_blocking(move |db| {
        let row = db.session(&wanted)?;
        db.rename_session(&row.id, &title)?;
        db.session(&row.id)
    })?;
    writeln!(out, "session {} is now titled: {}", row.id, row.title)?;
    Ok(())
}

/// `mnemo sessions fork ID`: a copy to go on with while the original is open elsewhere.
pub fn fork(loaded: &Loaded, id: &str, out: &mut impl Write) -> Result<(), CommandError> {
    let wanted = id.to_string();
    let new_id = uuid::Uuid::new_v4().to_string();
    let row = loaded.store()?.call_blocking(move |db| {
        let original = db.session(&wanted)?;
        db.fork_session(&original.id, &new_id)
    })?;
    writeln!(
        out,
        "forked into session {} ({}); continue it with `mnemo --resume {}`",
        row.id, row.title, row.id
    )?;
    Ok(())
}

/// Writes the whole session, archived messages included, as Markdown or JSON.
pub fn export(
    loaded: &Loaded,
    id: &str,
    format: ExportFormat,
    out: &mut impl Write,
) -> Result<(), CommandError> {
    let wanted = id.to_string();
    let (row, messages) = loaded.store()?.call_blocking(move |db| {
        let row = db.session(&wanted)?;
        let messages = db.all_messages(&row.id)?;
        Ok((row, messages))
    })?;
    match format {
        ExportFormat::Markdown => {
            writeln!(
                out,
                "# {}\n",
                if row.title.is_empty() {
                    "(untitled)"
                } else {
                    &row.title
                }
            )?;
            writeln!(
                out,
                "Session `{}` in `{}` with {}, started {}.\n",
                row.id,
                row.cwd,
                row.model,
                local_time(row.created_at)
            )?;
            let plain: Vec<_> = messages.into_iter().map(|m| m.message).collect();
            write!(out, "{}", to_markdown(&plain))?;
        }
        ExportFormat::Json => {
            let messages: Vec<_> = messages
                .iter()
                .map(|m| {
                    json!({
                        "seq": m.seq,
                        "role": m.message.role,
                        "content": m.message.content,
                        "tokens": m.tokens,
                        "active": m.active,
                        "created_at": m.created_at,
                    })
                })
                .collect();
            let doc = json!({ "session": row, "messages": messages });
            serde_json::to_writer_pretty(&mut *out, &doc).map_err(std::io::Error::other)?;
            writeln!(out)?;
        }
    }
    Ok(())
}
