//! `mnemo memory`: search the archive, list, add or remove experiences, and the dream notes.

use std::io::Write;
use std::path::PathBuf;

mod download;
mod notes;

use super::{CommandError, local_time};
use crate::gateway::search::{SearchAsk, ask_daemon};
use crate::host::Loaded;
use crate::memory::embed::{INSTALL_HINT, backfill, local_model_dir};
use crate::memory::recall::RecallScope;
use crate::memory::types::Scope;
use crate::memory::{local_embed, search_archive};
use crate::tools::memory::format_hits;
pub use notes::{NotesAction, notes};

/// `mnemo memory search`: answered by the daemon of this data directory when one runs (its
/// model is loaded already, which takes longer here than the whole search), else in-process;
/// the same hits and the same output either way.
pub async fn search(
    loaded: &Loaded,
    query: &str,
    limit: usize,
    this_workspace: bool,
    out: &mut impl Write,
) -> Result<(), CommandError> {
    let embedder = loaded.embedder();
    let workspace = this_workspace.then(|| loaded.workspace_str());
    let asked = match (&embedder, loaded.dirs.data.as_deref()) {
        // Without a model there is nothing to load, and nothing to gain from asking.
        (Some(embedder), Some(data)) => {
            let ask = SearchAsk {
                query: query.to_string(),
                limit,
                workspace: workspace.clone(),
                database: loaded.db_path.as_ref().map(|p| p.display().to_string()),
                model: Some(embedder.model_id()),
                except_session: None,
            };
            ask_daemon(data, &ask).await
        }
        _ => None,
    };
    let found = match asked {
        Some(found) => found,
        None => {
            let scope = RecallScope::within(workspace);
            let store = loaded.store()?;
            search_archive(&store, embedder.as_deref(), query, scope, limit).await?
        }
    };
    if let Some(why) = &found.keyword_only {
        writeln!(out, "({why}; keyword results only)")?;
    }
    let hits = found.hits;
    if hits.is_empty() {
        writeln!(out, "nothing remembered matches `{query}`")?;
    } else {
        write!(out, "{}", format_hits(&hits))?;
    }
    Ok(())
}

/// `mnemo memory reindex`: embeds everything without vectors of the current model, with a
/// progress bar on `err`.
pub async fn reindex(loaded: &Loaded, err: &mut impl Write) -> Result<(), CommandError> {
    let Some(embedder) = loaded.embedder() else {
        return Err(CommandError::Usage(format!(
            "nothing to reindex with: {INSTALL_HINT}"
        )));
    };
    let store = loaded.store()?;
    let mut shown = String::new();
    let embedded = backfill::embed_pending(&store, &embedder, |done, total| {
        let bar = progress_bar(done, total);
        if bar != shown {
            let _ = write!(err, "\r{bar}");
            let _ = err.flush();
            shown = bar;
        }
    })
    .await
    .map_err(|e| CommandError::Usage(format!("reindexing stopped: {e}")))?;
    writeln!(
        err,
        "\nembedded {embedded} archive entr{} and notes with {}",
        if embedded == 1 { "y" } else { "ies" },
        embedder.model_id()
    )?;
    Ok(())
}

/// `[#########-----------]  45/100`.
fn progress_bar(done: usize, total: usize) -> String {
    const WIDTH: usize = 30;
    let filled = (done * WIDTH).checked_div(total).unwrap_or(WIDTH);
    format!(
        "[{}{}] {done:>5}/{total}",
        "#".repeat(filled),
        "-".repeat(WIDTH - filled)
    )
}

/// `mnemo memory model install [--from PATH]`.
pub async fn install_model(
    loaded: &Loaded,
    from: Option<PathBuf>,
    out: &mut impl Write,
) -> Result<(), CommandError> {
    let data = loaded.dirs.data.clone().ok_or_else(|| {
        CommandError::Usage("no data directory is known; set MNEMO_DATA_DIR".into())
    })?;
    let dest = local_model_dir(&data);
    let source = match from {
        Some(path) => path,
        None => download::fetch(&data.join("models"))
            .await
            .map_err(CommandError::Usage)?,
    };
    let target = dest.clone();
    let installed =
        tokio::task::spawn_blocking(move || local_embed::install_from(&source, &target))
            .await
            .map_err(|e| CommandError::Usage(e.to_string()))?
            .map_err(|e| CommandError::Usage(e.to_string()))?;
    for (name, size) in &installed {
        writeln!(out, "  {name} ({:.1} MB)", *size as f64 / 1e6)?;
    }
    writeln!(
        out,
        "installed {} into {}; recall by meaning is on (`mnemo memory reindex` embeds what \
         was archived before)",
        local_embed::MODEL_NAME,
        dest.display()
    )?;
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
