//! The tools' side of rewind: a file is kept just before its first change in a turn, and a
//! shell command is named before it runs. Keeping never stops the tool: when it fails, the
//! call's live output says the file cannot be rewound.

use std::path::Path;

use super::ToolContext;
use crate::sandbox::path_guard;

/// Keeps `path` (real, checked, inside the workspace) as it is now, for turn `ctx.turn`.
pub async fn keep_before_write(ctx: &ToolContext, path: &Path) {
    let Some(keeper) = ctx.rewind.clone() else {
        return;
    };
    let relative = path_guard::relative(&ctx.workspace, path).to_path_buf();
    let (workspace, turn) = (ctx.workspace.clone(), ctx.turn);
    let shown = relative.display().to_string();
    let kept = tokio::task::spawn_blocking(move || keeper.keep(turn, &workspace, &relative)).await;
    let failure = match kept {
        Ok(Ok(())) => return,
        Ok(Err(e)) => e.to_string(),
        Err(e) => e.to_string(),
    };
    ctx.emit_output(format!(
        "note: {shown} was not kept for rewinding ({failure}); a rewind cannot restore it\n"
    ))
    .await;
}

/// Names the shell command `command` for the turn's rewind report.
pub async fn note_command(ctx: &ToolContext, command: &str) {
    let Some(keeper) = ctx.rewind.clone() else {
        return;
    };
    let (turn, command) = (ctx.turn, command.to_string());
    let _ = tokio::task::spawn_blocking(move || keeper.command(turn, &command)).await;
}
