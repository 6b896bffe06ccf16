//! Read-only file tools: `read_file` shows a numbered window of a text file, `list_dir` one
//! directory. Both read with bounded memory so a huge file or directory cannot flood the
//! context or the process.

use std::fs::{self, File};
use std::io::{self, BufRead, BufReader, Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};

use schemars::JsonSchema;
use serde::Deserialize;

use super::{ToolContext, ToolError, TypedTool, fs_editor};
use crate::llm::image::{self, ImageBlock};
use crate::sandbox::handles::{self, EntryKind};
use crate::sandbox::path_guard;

const DEFAULT_LIMIT: usize = 2000;
const MAX_LINE_CHARS: usize = 2000;
const MAX_READ_BYTES: usize = 256 * 1024;
const BINARY_PROBE_BYTES: usize = 8 * 1024;
const MAX_DIR_ENTRIES: usize = 1000;

pub struct ReadFile;

#[derive(Debug, Deserialize, JsonSchema)]
pub struct ReadFileArgs {
    /// File to read, relative to the workspace root (or absolute inside it).
    pub path: String,
    /// 1-based number of the first line to show. Default 1.
    pub offset: Option<usize>,
    /// Maximum number of lines to show. Default 2000.
    pub limit: Option<usize>,
}

impl TypedTool for ReadFile {
    type Args = ReadFileArgs;
    const NAME: &'static str = "read_file";
    const DESCRIPTION: &'static str = "Read a text file. Lines are numbered like `cat -n`; use \
        offset and limit to read a long file in parts. Read a file before editing it. A PNG, \
        JPEG, GIF or WebP image is returned as an image to look at.";
    const MUTATES: bool = false;

    async fn run(&self, args: ReadFileArgs, ctx: &ToolContext) -> Result<String, ToolError> {
        let (path, shown) = ctx.resolve_read(&args.path)?;
        let relative = path_guard::relative(&ctx.workspace, &path).to_path_buf();
        let workspace = ctx.workspace.clone();
        let offset = args.offset.unwrap_or(1).max(1);
        let limit = args.limit.unwrap_or(DEFAULT_LIMIT).max(1);
        let from_editor = ctx.approvals.front_end().offered().read_files;
        let task = move || -> Result<OnDisk, ToolError> {
            let mut file = open(&workspace, &relative, &shown)?;
            if let Some(image) = image_of(&mut file, &shown)? {
                return Ok(OnDisk::Image(image));
            }
            if from_editor {
                return Ok(OnDisk::Checked(shown));
            }
            window(file, &shown, offset, limit).map(OnDisk::Read)
        };
        let read = tokio::task::spawn_blocking(task)
            .await
            .map_err(|e| ToolError::Failed(format!("reading the file failed: {e}")))??;
        let shown = match read {
            OnDisk::Read(text) => return Ok(text),
            OnDisk::Image(image) => {
                let text = format!(
                    "{} is an image ({}, {}×{}); it is attached for you to see.",
                    image.name, image.media_type, image.width, image.height
                );
                ctx.attach_image(image);
                return Ok(text);
            }
            OnDisk::Checked(shown) => shown,
        };
        if let Some(text) = fs_editor::text(&path, ctx).await? {
            return window(io::Cursor::new(text.into_bytes()), &shown, offset, limit);
        }
        // The editor could not say: the file on disk is what there is.
        let (workspace, relative) = (ctx.workspace.clone(), relative_of(ctx, &path));
        let task = move || window(open(&workspace, &relative, &shown)?, &shown, offset, limit);
        tokio::task::spawn_blocking(task)
            .await
            .map_err(|e| ToolError::Failed(format!("reading the file failed: {e}")))?
    }
}

/// A file read on disk, or only checked there (by opening it) for the editor to read.
enum OnDisk {
    Read(String),
    Image(ImageBlock),
    Checked(String),
}

/// The file as an image when its first bytes say it is one (PNG, JPEG, GIF, WebP), read
/// whole up to a size cap; `None` (and the file rewound) otherwise.
fn image_of(file: &mut File, shown: &str) -> Result<Option<ImageBlock>, ToolError> {
    let mut magic = [0u8; 12];
    let read = read_up_to(file, &mut magic).map_err(|e| io_error(shown, e))?;
    file.seek(SeekFrom::Start(0))
        .map_err(|e| io_error(shown, e))?;
    if image::sniff(&magic[..read]).is_none() {
        return Ok(None);
    }
    let mut bytes = Vec::new();
    file.take(image::MAX_FILE_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| io_error(shown, e))?;
    ImageBlock::from_bytes(shown, &bytes)
        .map(Some)
        .map_err(|e| ToolError::Failed(e.to_string()))
}

fn read_up_to(file: &mut File, buf: &mut [u8]) -> io::Result<usize> {
    let mut filled = 0;
    while filled < buf.len() {
        match file.read(&mut buf[filled..])? {
            0 => break,
            n => filled += n,
        }
    }
    Ok(filled)
}

fn relative_of(ctx: &ToolContext, path: &Path) -> PathBuf {
    path_guard::relative(&ctx.workspace, path).to_path_buf()
}

fn path_error(shown: &str, message: String) -> ToolError {
    ToolError::Path {
        path: shown.to_string(),
        message,
    }
}

fn io_error(shown: &str, e: io::Error) -> ToolError {
    match e.kind() {
        io::ErrorKind::NotFound => path_error(
            shown,
            "file not found; use list_dir or glob to find the right path".into(),
        ),
        io::ErrorKind::IsADirectory => path_error(
            shown,
            "is a directory, not a file; use list_dir to see its contents".into(),
        ),
        _ => path_error(shown, e.to_string()),
    }
}

/// The regular file at `relative`, opened through the workspace's handles.
fn open(workspace: &Path, relative: &Path, shown: &str) -> Result<File, ToolError> {
    handles::open_read(workspace, relative).map_err(|e| io_error(shown, e))
}

/// The numbered window of `file`'s lines from `offset`, at most `limit` of them.
fn window(
    mut file: impl Read,
    shown: &str,
    offset: usize,
    limit: usize,
) -> Result<String, ToolError> {
    let path_error = |message: String| path_error(shown, message);
    let io_error = |e: io::Error| io_error(shown, e);
    let mut probe = Vec::with_capacity(BINARY_PROBE_BYTES);
    (&mut file)
        .take(BINARY_PROBE_BYTES as u64)
        .read_to_end(&mut probe)
        .map_err(io_error)?;
    if probe.is_empty() {
        return Ok(format!("{shown} is empty (0 bytes)"));
    }
    if memchr::memchr(0, &probe).is_some() {
        return Err(path_error(
            "is a binary file; read_file only shows text (use shell with a tool such as \
             `file` or `xxd` to inspect it)"
                .into(),
        ));
    }
    let mut reader = BufReader::new(io::Cursor::new(probe).chain(file));
    let mut out = String::new();
    let mut line = Vec::new();
    let mut number = 0;
    let mut last_shown = 0;
    let mut byte_cap_hit = false;
    while let Some(cut) =
        read_line_capped(&mut reader, &mut line, MAX_LINE_CHARS * 4).map_err(io_error)?
    {
        number += 1;
        if number < offset || number >= offset.saturating_add(limit) {
            continue;
        }
        if byte_cap_hit || out.len() >= MAX_READ_BYTES {
            byte_cap_hit = true;
            continue;
        }
        let text = String::from_utf8_lossy(&line);
        let text = text.trim_end_matches(['\n', '\r']);
        let (text, cut) = match text.char_indices().nth(MAX_LINE_CHARS) {
            Some((end, _)) => (&text[..end], true),
            None => (text, cut),
        };
        let marker = if cut { " … [line cut]" } else { "" };
        out.push_str(&format!("{number:>6}\t{text}{marker}\n"));
        last_shown = number;
    }
    let total = number;
    if offset > total {
        return Err(ToolError::Failed(format!(
            "offset {offset} is past the end of {shown}, which has {total} lines"
        )));
    }
    if byte_cap_hit {
        out.push_str(&format!(
            "[output stopped at {} KiB after line {last_shown} of {total}; read on with \
             offset={}]\n",
            MAX_READ_BYTES / 1024,
            last_shown + 1
        ));
    } else if last_shown < total {
        out.push_str(&format!(
            "[showing lines {offset}-{last_shown} of {total}; read on with offset={}]\n",
            last_shown + 1
        ));
    }
    Ok(out)
}

/// Reads one line into `line`, keeping at most `max` bytes of it and skipping the rest.
/// Returns `None` at the end of the input, otherwise whether the line was cut.
fn read_line_capped(
    reader: &mut impl BufRead,
    line: &mut Vec<u8>,
    max: usize,
) -> io::Result<Option<bool>> {
    line.clear();
    let mut cut = false;
    let mut read_any = false;
    loop {
        let buf = reader.fill_buf()?;
        if buf.is_empty() {
            return Ok(read_any.then_some(cut));
        }
        read_any = true;
        let (chunk, done) = match memchr::memchr(b'\n', buf) {
            Some(end) => (&buf[..=end], true),
            None => (buf, false),
        };
        let room = max.saturating_sub(line.len());
        cut |= chunk.len() > room && !(done && chunk.len() == room + 1);
        line.extend_from_slice(&chunk[..chunk.len().min(room)]);
        let used = chunk.len();
        reader.consume(used);
        if done {
            return Ok(Some(cut));
        }
    }
}

pub struct ListDir;

#[derive(Debug, Deserialize, JsonSchema)]
pub struct ListDirArgs {
    /// Directory to list, relative to the workspace root. Default: the root itself.
    pub path: Option<String>,
}

impl TypedTool for ListDir {
    type Args = ListDirArgs;
    const NAME: &'static str = "list_dir";
    const DESCRIPTION: &'static str = "List one directory (not recursive): subdirectories first, \
        marked with a trailing `/`, then files with their sizes. Hidden files are included.";
    const MUTATES: bool = false;

    async fn run(&self, args: ListDirArgs, ctx: &ToolContext) -> Result<String, ToolError> {
        let requested = args.path.unwrap_or_else(|| ".".to_string());
        let (path, shown) = ctx.resolve_read(&requested)?;
        let relative = path_guard::relative(&ctx.workspace, &path).to_path_buf();
        let workspace = ctx.workspace.clone();
        tokio::task::spawn_blocking(move || list(&workspace, &relative, &shown))
            .await
            .map_err(|e| ToolError::Failed(format!("listing the directory failed: {e}")))?
    }
}

fn list(workspace: &Path, relative: &Path, shown: &str) -> Result<String, ToolError> {
    let path_error = |message: String| ToolError::Path {
        path: shown.to_string(),
        message,
    };
    if relative
        .components()
        .any(|c| c.as_os_str().eq_ignore_ascii_case(".git"))
    {
        return Ok(format!(
            "{shown} is git's internal data and is not listed; use git commands through shell"
        ));
    }
    let entries = handles::list(workspace, relative).map_err(|e| match e.raw_os_error() {
        Some(libc::ENOENT) => path_error("directory not found".into()),
        Some(libc::ENOTDIR) => {
            path_error("is a file, not a directory; use read_file to read it".into())
        }
        _ => path_error(e.to_string()),
    })?;
    let mut dirs = Vec::new();
    let mut files = Vec::new();
    for entry in entries {
        let name = entry.name;
        match entry.kind {
            EntryKind::Dir => dirs.push(format!("{name}/")),
            EntryKind::Symlink => files.push(describe_link(&workspace.join(relative), &name)),
            EntryKind::File | EntryKind::Other => {
                files.push(format!("{name}  ({})", human_size(entry.size)));
            }
        }
    }
    if dirs.is_empty() && files.is_empty() {
        return Ok(format!("{shown} is empty"));
    }
    dirs.sort();
    files.sort();
    let total = dirs.len() + files.len();
    let mut out = format!("{shown}/ ({total} entries)\n");
    for entry in dirs.iter().chain(&files).take(MAX_DIR_ENTRIES) {
        out.push_str(entry);
        out.push('\n');
    }
    if total > MAX_DIR_ENTRIES {
        out.push_str(&format!(
            "[… {} more entries not shown; use glob to find specific files]\n",
            total - MAX_DIR_ENTRIES
        ));
    }
    Ok(out)
}

/// `name -> target` for a symlink in `dir`; the target is read, never followed.
fn describe_link(dir: &Path, name: &str) -> String {
    let target = fs::read_link(dir.join(name))
        .map(|t| t.display().to_string())
        .unwrap_or_default();
    format!("{name} -> {target}")
}

fn human_size(bytes: u64) -> String {
    const UNITS: [&str; 4] = ["KiB", "MiB", "GiB", "TiB"];
    if bytes < 1024 {
        return format!("{bytes} B");
    }
    let mut size = bytes as f64 / 1024.0;
    let mut unit = 0;
    while size >= 1024.0 && unit < UNITS.len() - 1 {
        size /= 1024.0;
        unit += 1;
    }
    format!("{size:.1} {}", UNITS[unit])
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tools::builtin::test_support::{TestResult, call, error_text, workspace};
    use serde_json::json;

    fn numbered(lines: std::ops::RangeInclusive<usize>) -> String {
        lines.map(|n| format!("line {n}\n")).collect()
    }

    #[tokio::test]
    async fn shows_numbered_lines_and_how_to_read_on() -> TestResult {
        let (_dir, ws) = workspace()?;
        fs::write(ws.join("f.txt"), numbered(1..=10))?;
        let window = json!({"path": "f.txt", "offset": 3, "limit": 2});
        assert_eq!(
            call(&ReadFile, &ws, window).await?,
            "     3\tline 3\n     4\tline 4\n[showing lines 3-4 of 10; read on with offset=5]\n"
        );
        let all = call(&ReadFile, &ws, json!({"path": "f.txt"})).await?;
        assert!(all.starts_with("     1\tline 1\n") && all.ends_with("    10\tline 10\n"));
        let past = call(&ReadFile, &ws, json!({"path": "f.txt", "offset": 11})).await;
        assert!(error_text(past).contains("has 10 lines"));
        Ok(())
    }

    #[tokio::test]
    async fn long_lines_and_huge_files_are_cut_with_a_note() -> TestResult {
        let (_dir, ws) = workspace()?;
        fs::write(ws.join("wide"), format!("{}\nshort", "x".repeat(5000)))?;
        let out = call(&ReadFile, &ws, json!({"path": "wide"})).await?;
        assert!(out.contains("[line cut]") && out.contains("     2\tshort"));
        assert!(out.len() < 2200);
        let line = "y".repeat(199);
        let big: String = (0..5000).map(|_| format!("{line}\n")).collect();
        fs::write(ws.join("big"), big)?;
        let out = call(&ReadFile, &ws, json!({"path": "big", "limit": 5000})).await?;
        assert!(out.len() < MAX_READ_BYTES + 1000);
        assert!(out.contains(" of 5000; read on with offset="), "{out}");
        Ok(())
    }

    #[tokio::test]
    async fn missing_binary_directory_and_empty_files_are_explained() -> TestResult {
        let (_dir, ws) = workspace()?;
        let missing = call(&ReadFile, &ws, json!({"path": "nope.rs"})).await;
        assert!(error_text(missing).starts_with("nope.rs: file not found"));
        fs::write(ws.join("bin"), b"ab\0cd")?;
        let binary = call(&ReadFile, &ws, json!({"path": "bin"})).await;
        assert!(error_text(binary).contains("binary file"));
        fs::create_dir(ws.join("d"))?;
        let dir = call(&ReadFile, &ws, json!({"path": "d"})).await;
        assert!(error_text(dir).contains("use list_dir"));
        fs::write(ws.join("empty"), "")?;
        let empty = call(&ReadFile, &ws, json!({"path": "empty"})).await?;
        assert_eq!(empty, "empty is empty (0 bytes)");
        Ok(())
    }

    #[tokio::test]
    async fn paths_outside_the_workspace_are_refused() -> TestResult {
        let (dir, ws) = workspace()?;
        fs::write(dir.path().join("secret"), "s")?;
        let read = call(&ReadFile, &ws, json!({"path": "../secret"})).await;
        assert!(error_text(read).contains("outside the workspace"));
        let list = call(&ListDir, &ws, json!({"path": ".."})).await;
        assert!(error_text(list).contains("outside the workspace"));
        Ok(())
    }

    #[tokio::test]
    async fn lists_directories_first_with_sizes_and_hidden_files() -> TestResult {
        let (_dir, ws) = workspace()?;
        fs::create_dir_all(ws.join("src"))?;
        fs::create_dir_all(ws.join(".git/objects"))?;
        fs::write(ws.join("b.txt"), "x".repeat(2048))?;
        fs::write(ws.join(".env"), "k=v")?;
        let out = call(&ListDir, &ws, json!({})).await?;
        assert_eq!(
            out,
            "./ (4 entries)\n.git/\nsrc/\n.env  (3 B)\nb.txt  (2.0 KiB)\n"
        );
        let git = call(&ListDir, &ws, json!({"path": ".git"})).await?;
        assert!(git.contains("not listed") && !git.contains("objects"));
        let file = call(&ListDir, &ws, json!({"path": "b.txt"})).await;
        assert!(error_text(file).contains("use read_file"));
        Ok(())
    }

    #[tokio::test]
    async fn huge_directories_are_capped() -> TestResult {
        let (_dir, ws) = workspace()?;
        for i in 0..1005 {
            fs::write(ws.join(format!("f{i:04}")), "")?;
        }
        let out = call(&ListDir, &ws, json!({"path": "."})).await?;
        assert!(out.contains("f0999") && !out.contains("f1000"));
        assert!(out.contains("5 more entries not shown"));
        Ok(())
    }

    #[tokio::test]
    async fn special_files_are_refused_without_blocking() -> TestResult {
        let (_dir, ws) = workspace()?;
        let fifo = std::ffi::CString::new(ws.join("pipe").to_string_lossy().as_bytes())?;
        // SAFETY: mkfifo reads a valid NUL-terminated path.
        assert_eq!(unsafe { libc::mkfifo(fifo.as_ptr(), 0o600) }, 0);
        let message = error_text(call(&ReadFile, &ws, json!({"path": "pipe"})).await);
        assert!(message.contains("not a regular file"), "{message}");
        let listing = call(&ListDir, &ws, json!({})).await?;
        assert!(listing.contains("pipe"), "{listing}");
        Ok(())
    }
}
