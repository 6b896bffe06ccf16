//! Mutating file tools: `write_file` replaces a whole file, `edit_file` swaps one exact,
//! unique snippet. Both answer with a unified diff so the model and the user see exactly what
//! changed.

use std::io;
use std::path::{Path, PathBuf};

use schemars::JsonSchema;
use serde::Deserialize;

use super::diff_report::{change_report, unified};
use super::{ToolContext, ToolError, TypedTool, fs_editor, rewind_keep};
use crate::protocol::ApprovalAction;
use crate::sandbox::approval::Action;
use crate::sandbox::{handles, path_guard};

pub struct WriteFile;

#[derive(Debug, Deserialize, JsonSchema)]
pub struct WriteFileArgs {
    /// File to write, relative to the workspace root. Missing parent directories are created.
    pub path: String,
    /// The complete new content of the file.
    pub content: String,
}

impl TypedTool for WriteFile {
    type Args = WriteFileArgs;
    const NAME: &'static str = "write_file";
    const DESCRIPTION: &'static str = "Create a file or replace its whole content. To change part \
        of an existing file, prefer edit_file. Returns a diff of the change.";
    const MUTATES: bool = true;

    fn action(&self, _args: &WriteFileArgs) -> Option<Action> {
        Some(Action::Write)
    }

    async fn preview(
        &self,
        args: WriteFileArgs,
        ctx: &ToolContext,
    ) -> Result<ApprovalAction, ToolError> {
        let (path, shown) = resolve(&args.path, ctx)?;
        let old = read_text(&path, ctx).await.unwrap_or_default();
        Ok(ApprovalAction::Write {
            diff: preview_diff(shown.clone(), old, args.content).await?,
            path: shown,
        })
    }

    async fn run(&self, args: WriteFileArgs, ctx: &ToolContext) -> Result<String, ToolError> {
        let (path, shown) = resolve(&args.path, ctx)?;
        rewind_keep::keep_before_write(ctx, &path).await;
        let (content, previous) = if fs_editor::writes(ctx) {
            let previous = read_text(&path, ctx).await.ok().map(String::into_bytes);
            fs_editor::write(&path, &shown, &args.content, ctx).await?;
            (args.content, previous)
        } else {
            let relative = path_guard::relative(&ctx.workspace, &path).to_path_buf();
            let workspace = ctx.workspace.clone();
            blocking(&shown, move || {
                let previous = handles::replace(&workspace, &relative, args.content.as_bytes())?;
                Ok((args.content, previous))
            })
            .await?
        };
        let lines = content.lines().count();
        Ok(match previous.map(String::from_utf8) {
            None => format!("created {shown} ({lines} lines, {} bytes)", content.len()),
            Some(Err(_)) => format!("replaced {shown} (it was not UTF-8 text; now {lines} lines)"),
            Some(Ok(old)) if old == content => {
                format!("{shown} already had this content; nothing changed")
            }
            Some(Ok(old)) => report("wrote", shown, old, content).await?,
        })
    }
}

pub struct EditFile;

#[derive(Debug, Deserialize, JsonSchema)]
pub struct EditFileArgs {
    /// File to edit, relative to the workspace root.
    pub path: String,
    /// The exact text to replace, copied from the file with its indentation. It must occur
    /// exactly once in the file; include surrounding lines to make it unique.
    pub old_string: String,
    /// The text to put in its place.
    pub new_string: String,
}

impl TypedTool for EditFile {
    type Args = EditFileArgs;
    const NAME: &'static str = "edit_file";
    const DESCRIPTION: &'static str = "Replace one exact snippet of a file with new text. \
        old_string must match the file exactly (whitespace included) and occur exactly once. \
        Returns a diff of the change.";
    const MUTATES: bool = true;

    fn action(&self, _args: &EditFileArgs) -> Option<Action> {
        Some(Action::Write)
    }

    async fn preview(
        &self,
        args: EditFileArgs,
        ctx: &ToolContext,
    ) -> Result<ApprovalAction, ToolError> {
        let (path, shown) = resolve(&args.path, ctx)?;
        let path_error = |message: String| ToolError::Path {
            path: shown.clone(),
            message,
        };
        let old = read_text(&path, ctx).await.map_err(path_error)?;
        let new = replace_unique(&old, &args.old_string, &args.new_string).map_err(path_error)?;
        Ok(ApprovalAction::Write {
            diff: preview_diff(shown.clone(), old, new).await?,
            path: shown,
        })
    }

    async fn run(&self, args: EditFileArgs, ctx: &ToolContext) -> Result<String, ToolError> {
        let (path, shown) = resolve(&args.path, ctx)?;
        let path_error = |message: String| ToolError::Path {
            path: shown.clone(),
            message,
        };
        if args.old_string.is_empty() {
            return Err(path_error(
                "old_string is empty; give the exact text to replace, or use write_file to \
                 create a file"
                    .into(),
            ));
        }
        if args.old_string == args.new_string {
            return Err(path_error(
                "old_string and new_string are identical; nothing would change".into(),
            ));
        }
        let old = read_text(&path, ctx).await.map_err(path_error)?;
        let new = replace_unique(&old, &args.old_string, &args.new_string).map_err(path_error)?;
        rewind_keep::keep_before_write(ctx, &path).await;
        if fs_editor::writes(ctx) {
            fs_editor::write(&path, &shown, &new, ctx).await?;
            return report("edited", shown, old, new).await;
        }
        let relative = path_guard::relative(&ctx.workspace, &path).to_path_buf();
        let workspace = ctx.workspace.clone();
        let new = blocking(&shown, move || {
            handles::replace(&workspace, &relative, new.as_bytes())?;
            Ok(new)
        })
        .await?;
        report("edited", shown, old, new).await
    }
}

/// The real path to write and how it is shown, under the session's write policy.
fn resolve(requested: &str, ctx: &ToolContext) -> Result<(PathBuf, String), ToolError> {
    ctx.resolve_write(requested)
}

/// The change report, worked out on a blocking thread: a diff of large files takes a while,
/// and the tool's timeout and the user's interrupt must still reach the call meanwhile.
async fn report(
    verb: &'static str,
    shown: String,
    old: String,
    new: String,
) -> Result<String, ToolError> {
    tokio::task::spawn_blocking(move || change_report(verb, &shown, &old, &new))
        .await
        .map_err(|e| ToolError::Failed(format!("the change report failed: {e}")))
}

async fn preview_diff(shown: String, old: String, new: String) -> Result<String, ToolError> {
    tokio::task::spawn_blocking(move || unified(&shown, &old, &new))
        .await
        .map_err(|e| ToolError::Failed(format!("the diff failed: {e}")))
}

/// Runs file work on a blocking thread; an IO error becomes a path error for `shown`.
async fn blocking<T: Send + 'static>(
    shown: &str,
    work: impl FnOnce() -> io::Result<T> + Send + 'static,
) -> Result<T, ToolError> {
    let path_error = |message: String| ToolError::Path {
        path: shown.to_string(),
        message,
    };
    tokio::task::spawn_blocking(work)
        .await
        .map_err(|e| ToolError::Failed(format!("writing the file failed: {e}")))?
        .map_err(|e| match e.kind() {
            io::ErrorKind::IsADirectory => path_error("is a directory, not a file".into()),
            _ => path_error(e.to_string()),
        })
}

/// The text of the file at `path` (real, checked), read through the workspace's handles,
/// as the editor has it when it offers its buffers.
async fn read_text(path: &Path, ctx: &ToolContext) -> Result<String, String> {
    let on_disk = disk_text(path, ctx).await?;
    match fs_editor::text(path, ctx).await {
        Ok(Some(text)) => Ok(text),
        Ok(None) => Ok(on_disk),
        Err(e) => Err(e.to_string()),
    }
}

async fn disk_text(path: &Path, ctx: &ToolContext) -> Result<String, String> {
    let relative = path_guard::relative(&ctx.workspace, path).to_path_buf();
    let workspace = ctx.workspace.clone();
    let bytes = tokio::task::spawn_blocking(move || handles::read(&workspace, &relative))
        .await
        .map_err(|e| e.to_string())?
        .map_err(|e| match e.kind() {
            io::ErrorKind::NotFound => "file not found; use write_file to create a new file".into(),
            io::ErrorKind::IsADirectory => "is a directory, not a file".into(),
            _ => e.to_string(),
        })?;
    String::from_utf8(bytes)
        .map_err(|_| "is not UTF-8 text; edit_file only edits text files".to_string())
}

/// Replaces the single occurrence of `old` in `text`, keeping whether the text ends with a
/// newline.
fn replace_unique(text: &str, old: &str, new: &str) -> Result<String, String> {
    match text.matches(old).count() {
        1 => {}
        0 if squeeze(text).contains(&squeeze(old)) => {
            return Err(
                "old_string was not found exactly, but it matches when whitespace is \
                 ignored: the whitespace (indentation or line breaks) differs; copy the text \
                 exactly as read_file shows it"
                    .into(),
            );
        }
        0 => {
            return Err(
                "old_string was not found in the file; read the file again and copy \
                 the exact text to replace"
                    .into(),
            );
        }
        count => {
            return Err(format!(
                "old_string occurs {count} times; it must be unique: include more \
                 surrounding context to pick one occurrence"
            ));
        }
    }
    let mut result = text.replacen(old, new, 1);
    match (text.ends_with('\n'), result.ends_with('\n')) {
        (true, false) if !result.is_empty() => result.push('\n'),
        (false, true) => {
            result.pop();
        }
        _ => {}
    }
    Ok(result)
}

fn squeeze(text: &str) -> String {
    text.chars().filter(|c| !c.is_whitespace()).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tools::builtin::test_support::{TestResult, call, error_text, workspace};
    use serde_json::json;
    use std::fs;

    #[tokio::test]
    async fn write_creates_parent_directories_and_reports_creation() -> TestResult {
        let (_dir, ws) = workspace()?;
        let input = json!({"path": "a/b/new.txt", "content": "one\ntwo\n"});
        let out = call(&WriteFile, &ws, input).await?;
        assert_eq!(out, "created a/b/new.txt (2 lines, 8 bytes)");
        assert_eq!(fs::read_to_string(ws.join("a/b/new.txt"))?, "one\ntwo\n");
        Ok(())
    }

    #[tokio::test]
    async fn overwrite_returns_a_unified_diff() -> TestResult {
        let (_dir, ws) = workspace()?;
        fs::write(ws.join("f.txt"), "one\ntwo\n")?;
        let input = json!({"path": "f.txt", "content": "one\n2\n"});
        let out = call(&WriteFile, &ws, input).await?;
        assert_eq!(
            out,
            "wrote f.txt: +1 -1 lines\n--- a/f.txt\n+++ b/f.txt\n@@ -1,2 +1,2 @@\n one\n-two\n+2\n"
        );
        Ok(())
    }

    #[tokio::test]
    async fn edit_replaces_the_unique_snippet_and_shows_the_diff() -> TestResult {
        let (_dir, ws) = workspace()?;
        fs::write(ws.join("m.rs"), "fn a() {\n    1\n}\n")?;
        let input = json!({"path": "m.rs", "old_string": "    1\n", "new_string": "    2\n"});
        let out = call(&EditFile, &ws, input).await?;
        assert!(out.starts_with("edited m.rs: +1 -1 lines\n--- a/m.rs\n+++ b/m.rs\n"));
        assert!(out.contains("-    1\n+    2\n"), "{out}");
        assert_eq!(fs::read_to_string(ws.join("m.rs"))?, "fn a() {\n    2\n}\n");
        Ok(())
    }

    #[tokio::test]
    async fn edit_refuses_ambiguous_missing_and_identical_snippets() -> TestResult {
        let (_dir, ws) = workspace()?;
        fs::write(ws.join("f"), "x = 1\nx = 1\n    y = 2\n")?;
        let edit =
            |old: &str, new: &str| json!({"path": "f", "old_string": old, "new_string": new});
        let many = error_text(call(&EditFile, &ws, edit("x = 1", "x = 3")).await);
        assert!(many.contains("occurs 2 times"), "{many}");
        assert!(many.contains("include more surrounding context"));
        let none = error_text(call(&EditFile, &ws, edit("z = 9", "z = 0")).await);
        assert!(
            none.contains("not found") && !none.contains("whitespace"),
            "{none}"
        );
        let spacing = error_text(call(&EditFile, &ws, edit("y  =  2", "y = 3")).await);
        assert!(spacing.contains("whitespace"), "{spacing}");
        let same = error_text(call(&EditFile, &ws, edit("y = 2", "y = 2")).await);
        assert!(same.contains("identical"), "{same}");
        assert_eq!(
            fs::read_to_string(ws.join("f"))?,
            "x = 1\nx = 1\n    y = 2\n"
        );
        let missing = json!({"path": "nope", "old_string": "a", "new_string": "b"});
        let missing = error_text(call(&EditFile, &ws, missing).await);
        assert!(missing.contains("file not found"), "{missing}");
        Ok(())
    }

    #[test]
    fn edit_keeps_the_trailing_newline_state() {
        assert_eq!(
            replace_unique("a\nb\n", "b\n", "c"),
            Ok("a\nc\n".to_string())
        );
        assert_eq!(replace_unique("a\nb", "b", "c\n"), Ok("a\nc".to_string()));
        assert_eq!(replace_unique("a\nb", "a", "z"), Ok("z\nb".to_string()));
    }

    #[tokio::test]
    async fn writes_and_edits_outside_the_workspace_are_refused() -> TestResult {
        let (dir, ws) = workspace()?;
        let outside = dir.path().join("victim");
        fs::write(&outside, "keep")?;
        let write = json!({"path": "../victim", "content": "gone"});
        let err = error_text(call(&WriteFile, &ws, write).await);
        assert!(err.contains("outside the workspace"), "{err}");
        std::os::unix::fs::symlink(&outside, ws.join("link"))?;
        let edit = json!({"path": "link", "old_string": "keep", "new_string": "gone"});
        let err = error_text(call(&EditFile, &ws, edit).await);
        assert!(err.contains("outside the workspace"), "{err}");
        assert_eq!(fs::read_to_string(&outside)?, "keep");
        Ok(())
    }
}
