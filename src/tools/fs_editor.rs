//! The file tools' way to the editor's buffers, when the front end offers them: the tool has
//! checked the path (workspace guard, hidden secrets, symlinks) and, for a write, had it
//! approved; only then does the canonical path go to the editor. A read the editor cannot
//! answer falls back to the disk; a write it cannot do fails, so nothing is written twice.

use std::path::Path;

use super::front_end::{self, Unanswered};
use super::{ToolContext, ToolError};
use crate::protocol::{FrontEndReply, FrontEndRequest};

/// The text the editor has for `path` (checked and canonical), unsaved changes included;
/// `None` when it offers no reading or cannot say, so the file on disk is what there is.
pub async fn text(path: &Path, ctx: &ToolContext) -> Result<Option<String>, ToolError> {
    let front_end = ctx.approvals.front_end();
    if !front_end.offered().read_files {
        return Ok(None);
    }
    let request = FrontEndRequest::ReadTextFile {
        path: path.display().to_string(),
    };
    match front_end.ask(ctx, request, front_end::FILE_WAIT).await {
        Ok(FrontEndReply::Text { content }) => Ok(Some(content)),
        Ok(_) | Err(Unanswered::Silent(_)) => Ok(None),
        Err(Unanswered::Cancelled) => Err(ToolError::Cancelled),
    }
}

/// Whether the editor writes the session's files.
pub fn writes(ctx: &ToolContext) -> bool {
    ctx.approvals.front_end().offered().write_files
}

/// Has the editor write `content` to `path` (checked, canonical and approved).
pub async fn write(
    path: &Path,
    shown: &str,
    content: &str,
    ctx: &ToolContext,
) -> Result<(), ToolError> {
    let request = FrontEndRequest::WriteTextFile {
        path: path.display().to_string(),
        content: content.to_string(),
    };
    let failed = |why: String| ToolError::Path {
        path: shown.to_string(),
        message: format!("the editor did not write it ({why}); the file is unchanged by mnemo"),
    };
    let front_end = ctx.approvals.front_end();
    match front_end.ask(ctx, request, front_end::FILE_WAIT).await {
        Ok(FrontEndReply::Written) => Ok(()),
        Ok(FrontEndReply::Failed { message }) => Err(failed(message)),
        Ok(other) => Err(failed(format!("it answered {other:?}"))),
        Err(Unanswered::Silent(why)) => Err(failed(why)),
        Err(Unanswered::Cancelled) => Err(ToolError::Cancelled),
    }
}
