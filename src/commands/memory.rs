//! `mnemo memory`: search the archive, and list, add or remove experiences.

use std::io::Write;

use super::{CommandError, local_time};
use crate::launch::Loaded;
use crate::memory::search_archive;
use crate::memory::types::Scope;
use crate::tools::memory::format_hits;

pub async fn search(
    loaded: &Loaded,
    query: &str,
    limit: usize,
    out: &mut impl Write,
) -> Result<(), CommandError> {
    let embedder = loaded.embedder();
    let found = search_archive(&loaded.store()?, embedder.as_deref(), query, limit).await?;
    if let Some(err) = &found.semantic_error {
        writeln!(
            out,
            "(semantic search unavailable: {err}; keyword results only)"
        )?;
    }
    let hits = found.hits;
    if hits.is_empty() {
        writeln!(out, "no archived conversation matches `{query}`")?;
    } else {
        write!(out, "{}", format_hits(&hits))?;
    }
    Ok(())
}

pub fn remember(
    loaded: &Loaded,
    text: &str,
    global: bool,
    out: &mut impl Write,
) -> Result<(), CommandError> {
    let text = text.trim().to_string();
    if text.is_empty() {
        return Err(CommandError::Usage(
            "nothing to remember: the text is empty".into(),
        ));
    }
    let scope = if global {
        Scope::Global
    } else {
        Scope::Project(loaded.workspace_str())
    };
    let (id, created) = loaded
        .store()?
        .call_blocking(move |db| db.remember(&text, &scope, "user"))?;
    if created {
        writeln!(out, "remembered as #{id}")?;
    } else {
        writeln!(out, "already remembered as #{id}")?;
    }
    Ok(())
}

pub fn forget(loaded: &Loaded, id: i64, out: &mut impl Write) -> Result<(), CommandError> {
    if loaded.store()?.call_blocking(move |db| db.forget(id))? {
        writeln!(out, "forgot #{id}")?;
        Ok(())
    } else {
        Err(CommandError::Usage(format!(
            "there is no experience #{id} (`mnemo memory list` shows them)"
        )))
    }
}

/// The experiences the model sees in this workspace: global ones and this project's.
pub fn list(loaded: &Loaded, out: &mut impl Write) -> Result<(), CommandError> {
    let project = loaded.workspace_str();
    let experiences = loaded
        .store()?
        .call_blocking(move |db| db.experiences(Some(&project)))?;
    if experiences.is_empty() {
        writeln!(
            out,
            "nothing remembered yet (`mnemo memory remember TEXT` adds one)"
        )?;
    }
    for exp in experiences {
        let scope = match exp.scope {
            Scope::Global => "global",
            Scope::Project(_) => "project",
        };
        writeln!(
            out,
            "#{:<5} {}  {:<7}  {}",
            exp.id,
            local_time(exp.created_at),
            scope,
            exp.text
        )?;
    }
    Ok(())
}
