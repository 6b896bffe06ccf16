//! Finding things in the workspace: `glob` by file name, `grep` by content. Both walk the tree
//! like ripgrep (respecting `.gitignore` and `.ignore`, skipping hidden files) on a blocking
//! thread, and cap what they return. Every file they report or open passes the same guard as
//! `read_file`: a symlink that leads out of the workspace (or into a hidden path) is skipped and
//! counted, and files are opened through the workspace's handles, never by following a link.

use std::cell::Cell;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use globset::{GlobBuilder, GlobMatcher};
use grep_regex::RegexMatcherBuilder;
use grep_searcher::sinks::Lossy;
use grep_searcher::{BinaryDetection, SearcherBuilder};
use ignore::WalkBuilder;
use schemars::JsonSchema;
use serde::Deserialize;
use tokio_util::sync::CancellationToken;

use super::{ToolContext, ToolError, TypedTool};
use crate::sandbox::{Confinement, handles, path_guard};

const MAX_GLOB_RESULTS: usize = 1000;
const MAX_GREP_MATCHES: usize = 500;
const MAX_MATCH_LINE_CHARS: usize = 500;

pub struct Glob;

#[derive(Debug, Deserialize, JsonSchema)]
pub struct GlobArgs {
    /// Glob such as `**/*.rs` or `src/**/mod.rs`, matched against paths relative to `path`.
    /// A pattern without `/` (like `*.toml`) matches file names in any directory.
    pub pattern: String,
    /// Directory to search in, relative to the workspace root. Default: the root.
    pub path: Option<String>,
}

impl TypedTool for Glob {
    type Args = GlobArgs;
    const NAME: &'static str = "glob";
    const DESCRIPTION: &'static str = "Find files by name pattern. Respects .gitignore and skips \
        hidden files; returns sorted paths relative to the workspace root.";
    const MUTATES: bool = false;

    async fn run(&self, args: GlobArgs, ctx: &ToolContext) -> Result<String, ToolError> {
        let filter = PathFilter::new(&args.pattern)?;
        let search = Search::new(ctx, args.path.as_deref())?;
        blocking(move || search.find_files(&filter, &args.pattern)).await
    }
}

pub struct Grep;

#[derive(Debug, Deserialize, JsonSchema)]
pub struct GrepArgs {
    /// Regular expression to search for (Rust regex syntax, as in ripgrep). Put a backslash
    /// before `(`, `[`, `{`, `.`, `*`, `+`, `?` or `|` to match it literally.
    pub pattern: String,
    /// File or directory to search, relative to the workspace root. Default: the root.
    pub path: Option<String>,
    /// Only search files matching this glob, e.g. `*.rs` or `src/**/*.ts`. A glob without `/`
    /// matches file names in any directory.
    pub glob: Option<String>,
    /// Match regardless of letter case. Default false.
    #[serde(default)]
    pub case_insensitive: bool,
}

impl TypedTool for Grep {
    type Args = GrepArgs;
    const NAME: &'static str = "grep";
    const DESCRIPTION: &'static str = "Search file contents with a regular expression. Respects \
        .gitignore, skips hidden and binary files; prints `path:line:text` for each matching line.";
    const MUTATES: bool = false;

    async fn run(&self, args: GrepArgs, ctx: &ToolContext) -> Result<String, ToolError> {
        let filter = args.glob.as_deref().map(PathFilter::new).transpose()?;
        let search = Search::new(ctx, args.path.as_deref())?;
        blocking(move || search.grep(&args.pattern, args.case_insensitive, filter.as_ref())).await
    }
}

async fn blocking(
    task: impl FnOnce() -> Result<String, ToolError> + Send + 'static,
) -> Result<String, ToolError> {
    tokio::task::spawn_blocking(task)
        .await
        .map_err(|e| ToolError::Failed(format!("the search failed: {e}")))?
}

/// Matches a glob against the path relative to the search root, or against the file name
/// alone when the glob has no `/`.
struct PathFilter {
    glob: GlobMatcher,
    name_only: bool,
}

impl PathFilter {
    fn new(pattern: &str) -> Result<Self, ToolError> {
        let pattern = pattern.trim_start_matches("./");
        let glob = GlobBuilder::new(pattern)
            .literal_separator(true)
            .build()
            .map_err(|e| ToolError::InvalidArguments {
                tool: "glob".into(),
                message: format!("invalid glob `{pattern}`: {e}"),
            })?
            .compile_matcher();
        Ok(Self {
            glob,
            name_only: !pattern.contains('/'),
        })
    }

    fn matches(&self, relative: &Path) -> bool {
        if self.name_only {
            relative
                .file_name()
                .is_some_and(|name| self.glob.is_match(name))
        } else {
            self.glob.is_match(relative)
        }
    }
}

/// A walk over one directory (or file) of the workspace.
struct Search {
    workspace: PathBuf,
    root: PathBuf,
    cancel: CancellationToken,
    confinement: Arc<Confinement>,
    /// Symlinks out of the workspace and hidden paths met by the walk, not reported.
    skipped: Cell<usize>,
}

/// A file the walk found: where it was found (shown to the model) and its real path.
struct Found {
    path: PathBuf,
    real: PathBuf,
}

impl Search {
    fn new(ctx: &ToolContext, path: Option<&str>) -> Result<Self, ToolError> {
        let requested = path.unwrap_or(".");
        let (root, _) = ctx.resolve_read(requested)?;
        if !root.exists() {
            return Err(ToolError::Path {
                path: requested.to_string(),
                message: "not found; use list_dir to see what exists".into(),
            });
        }
        Ok(Self {
            workspace: ctx.workspace.clone(),
            root,
            cancel: ctx.cancel.clone(),
            confinement: ctx.approvals.confinement().clone(),
            skipped: Cell::new(0),
        })
    }

    /// Files under the root in sorted order, filtered by `filter` when given; stops with
    /// `Cancelled` once the user interrupts.
    fn files<'a>(
        &'a self,
        filter: Option<&'a PathFilter>,
    ) -> impl Iterator<Item = Result<Found, ToolError>> + 'a {
        WalkBuilder::new(&self.root)
            .hidden(true)
            .require_git(false)
            .sort_by_file_name(|a, b| a.cmp(b))
            .build()
            .filter_map(move |entry| {
                if self.cancel.is_cancelled() {
                    return Some(Err(ToolError::Cancelled));
                }
                let entry = entry.ok()?;
                if entry.file_type().is_none_or(|kind| kind.is_dir()) {
                    return None;
                }
                let link = entry.path_is_symlink();
                let path = entry.into_path();
                let relative = path.strip_prefix(&self.root).unwrap_or(&path);
                if !filter.is_none_or(|f| f.matches(relative)) {
                    return None;
                }
                match self.checked(&path, link) {
                    Some(real) => Some(Ok(Found { path, real })),
                    None => {
                        self.skipped.set(self.skipped.get() + 1);
                        None
                    }
                }
            })
    }

    /// The real path of a file the walk found, when the file tools may read it: inside the
    /// workspace and not hidden. A symlink is resolved first; one to a directory is not a file.
    fn checked(&self, path: &Path, link: bool) -> Option<PathBuf> {
        if !link {
            return self
                .confinement
                .hiding(path)
                .is_none()
                .then(|| path.to_path_buf());
        }
        let text = path.to_str()?;
        let real = path_guard::resolve(&self.workspace, text, &self.confinement).ok()?;
        std::fs::symlink_metadata(&real)
            .is_ok_and(|m| m.is_file())
            .then_some(real)
    }

    /// The line on what the walk left out for the guard's sake, empty when nothing was.
    fn skipped_note(&self) -> String {
        match self.skipped.get() {
            0 => String::new(),
            n => format!(
                "[{n} symlinked or hidden file(s) skipped: they lead outside the workspace or \
                 into a hidden path]\n"
            ),
        }
    }

    /// "no …" answers end with the skipped note on a line of its own, when there is one.
    fn nothing_found(&self, message: String) -> String {
        match self.skipped_note() {
            note if note.is_empty() => message,
            note => format!("{message}\n{}", note.trim_end()),
        }
    }

    fn shown(&self, path: &Path) -> String {
        path_guard::display(&self.workspace, path)
    }

    fn find_files(&self, filter: &PathFilter, pattern: &str) -> Result<String, ToolError> {
        let mut found = Vec::new();
        let mut total = 0;
        for file in self.files(Some(filter)) {
            let file = file?;
            total += 1;
            if found.len() < MAX_GLOB_RESULTS {
                found.push(self.shown(&file.path));
            }
        }
        if found.is_empty() {
            return Ok(self.nothing_found(format!(
                "no files match `{pattern}` in {} (ignored and hidden files are skipped)",
                self.shown(&self.root),
            )));
        }
        found.sort();
        let mut out = found.join("\n");
        out.push('\n');
        if total > found.len() {
            out.push_str(&format!(
                "[{} of {total} files shown; use a narrower pattern or path]\n",
                found.len()
            ));
        }
        out.push_str(&self.skipped_note());
        Ok(out)
    }

    fn grep(
        &self,
        pattern: &str,
        case_insensitive: bool,
        filter: Option<&PathFilter>,
    ) -> Result<String, ToolError> {
        let matcher = RegexMatcherBuilder::new()
            .case_insensitive(case_insensitive)
            .build(pattern)
            .map_err(|e| ToolError::InvalidArguments {
                tool: "grep".into(),
                message: format!(
                    "invalid regular expression `{pattern}`: {e}; escape special characters \
                     with a backslash to search for them literally"
                ),
            })?;
        let mut searcher = SearcherBuilder::new()
            .binary_detection(BinaryDetection::quit(0))
            .line_number(true)
            .build();
        let mut lines = Vec::new();
        for file in self.files(filter) {
            let file = file?;
            let shown = self.shown(&file.path);
            let relative = path_guard::relative(&self.workspace, &file.real);
            // An unreadable file is skipped, as ripgrep does; so is one that changed into a
            // symlink or a special file since the walk saw it.
            let Ok(opened) = handles::open_read(&self.workspace, relative) else {
                continue;
            };
            let sink = Lossy(|number, line| {
                lines.push(format!("{shown}:{number}:{}", cut_line(line.trim_end())));
                Ok(lines.len() <= MAX_GREP_MATCHES)
            });
            let _ = searcher.search_file(&matcher, &opened, sink);
            if lines.len() > MAX_GREP_MATCHES {
                lines.truncate(MAX_GREP_MATCHES);
                lines.push(format!(
                    "[stopped after {MAX_GREP_MATCHES} matches; narrow the pattern, path or glob]"
                ));
                break;
            }
        }
        if lines.is_empty() {
            return Ok(self.nothing_found(format!(
                "no matches for `{pattern}` in {} (ignored, hidden and binary files are skipped)",
                self.shown(&self.root),
            )));
        }
        Ok(lines.join("\n") + "\n" + &self.skipped_note())
    }
}

fn cut_line(line: &str) -> String {
    match line.char_indices().nth(MAX_MATCH_LINE_CHARS) {
        Some((end, _)) => format!("{} … [line cut]", &line[..end]),
        None => line.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tools::builtin::test_support::{TestResult, call, error_text, workspace};
    use serde_json::json;
    use std::fs;

    fn tree() -> std::io::Result<(tempfile::TempDir, PathBuf)> {
        let (dir, ws) = workspace()?;
        for (path, content) in [
            ("src/main.rs", "fn main() {\n    println!(\"Hello\");\n}\n"),
            ("src/lib/mod.rs", "pub fn hello() {}\n"),
            ("Cargo.toml", "[package]\nname = \"hello\"\n"),
            ("target/out.rs", "fn hello_generated() {}\n"),
            (".hidden/h.rs", "fn hello_hidden() {}\n"),
            (".gitignore", "target/\n"),
        ] {
            let path = ws.join(path);
            if let Some(parent) = path.parent() {
                fs::create_dir_all(parent)?;
            }
            fs::write(path, content)?;
        }
        Ok((dir, ws))
    }

    #[tokio::test]
    async fn glob_matches_names_anywhere_and_respects_gitignore() -> TestResult {
        let (_dir, ws) = tree()?;
        let out = call(&Glob, &ws, json!({"pattern": "*.rs"})).await?;
        assert_eq!(out, "src/lib/mod.rs\nsrc/main.rs\n");
        let nested = json!({"pattern": "lib/*.rs", "path": "src"});
        assert_eq!(call(&Glob, &ws, nested).await?, "src/lib/mod.rs\n");
        let none = call(&Glob, &ws, json!({"pattern": "*.py"})).await?;
        assert!(none.starts_with("no files match `*.py`"), "{none}");
        Ok(())
    }

    #[tokio::test]
    async fn glob_caps_huge_results() -> TestResult {
        let (_dir, ws) = workspace()?;
        for i in 0..1010 {
            fs::write(ws.join(format!("f{i:04}.txt")), "")?;
        }
        let out = call(&Glob, &ws, json!({"pattern": "*.txt"})).await?;
        assert!(out.contains("f0999.txt") && !out.contains("f1000.txt"));
        assert!(out.ends_with("[1000 of 1010 files shown; use a narrower pattern or path]\n"));
        Ok(())
    }

    #[tokio::test]
    async fn grep_prints_path_line_and_text_and_respects_gitignore() -> TestResult {
        let (_dir, ws) = tree()?;
        let out = call(&Grep, &ws, json!({"pattern": "fn hello"})).await?;
        assert_eq!(out, "src/lib/mod.rs:1:pub fn hello() {}\n");
        let input = json!({"pattern": "hello", "case_insensitive": true, "glob": "*.rs"});
        assert_eq!(
            call(&Grep, &ws, input).await?,
            "src/lib/mod.rs:1:pub fn hello() {}\nsrc/main.rs:2:    println!(\"Hello\");\n"
        );
        let none = call(&Grep, &ws, json!({"pattern": "absent"})).await?;
        assert!(none.starts_with("no matches for `absent`"), "{none}");
        Ok(())
    }

    #[tokio::test]
    async fn grep_skips_binary_files_and_cuts_long_output() -> TestResult {
        let (_dir, ws) = workspace()?;
        fs::write(ws.join("blob.bin"), b"needle\0\x01\x02")?;
        fs::write(ws.join("wide.txt"), format!("needle{}\n", "x".repeat(2000)))?;
        let many: String = (0..600).map(|i| format!("needle {i}\n")).collect();
        fs::write(ws.join("many.txt"), many)?;
        let out = call(&Grep, &ws, json!({"pattern": "needle"})).await?;
        assert!(!out.contains("blob.bin"));
        assert!(out.contains("many.txt:500:needle 499\n") && !out.contains("needle 500"));
        assert!(out.ends_with("[stopped after 500 matches; narrow the pattern, path or glob]\n"));
        let wide = json!({"pattern": "needle", "path": "wide.txt"});
        let wide = call(&Grep, &ws, wide).await?;
        assert!(
            wide.ends_with("… [line cut]\n") && wide.len() < 600,
            "{wide}"
        );
        Ok(())
    }

    #[tokio::test]
    async fn a_fifo_in_the_workspace_does_not_stop_a_search() -> TestResult {
        let (_dir, ws) = tree()?;
        let fifo = std::ffi::CString::new(ws.join("src/pipe.rs").to_string_lossy().as_bytes())?;
        // SAFETY: mkfifo reads a valid NUL-terminated path.
        assert_eq!(unsafe { libc::mkfifo(fifo.as_ptr(), 0o600) }, 0);
        let out = call(&Grep, &ws, json!({"pattern": "hello"})).await?;
        assert!(out.contains("src/lib/mod.rs:1:pub fn hello"), "{out}");
        Ok(())
    }

    #[tokio::test]
    async fn symlinks_out_of_the_workspace_are_skipped_and_counted() -> TestResult {
        let (dir, ws) = tree()?;
        let outside = dir.path().join("outside");
        fs::create_dir(&outside)?;
        fs::write(outside.join("secret.rs"), "fn hello_secret() {}\n")?;
        std::os::unix::fs::symlink(outside.join("secret.rs"), ws.join("src/leak.rs"))?;
        std::os::unix::fs::symlink(&outside, ws.join("src/dir_link"))?;
        fs::write(ws.join("src/inner.rs"), "fn hello_inner() {}\n")?;
        std::os::unix::fs::symlink(ws.join("src/inner.rs"), ws.join("src/alias.rs"))?;
        let out = call(&Grep, &ws, json!({"pattern": "hello_"})).await?;
        assert!(!out.contains("hello_secret"), "{out}");
        assert!(out.contains("src/alias.rs:1:fn hello_inner"), "{out}");
        assert!(
            out.contains("[2 symlinked or hidden file(s) skipped"),
            "{out}"
        );
        let out = call(&Grep, &ws, json!({"pattern": "hello_secret"})).await?;
        assert!(out.starts_with("no matches"), "{out}");
        assert!(
            out.contains("2 symlinked or hidden file(s) skipped"),
            "{out}"
        );
        let out = call(&Glob, &ws, json!({"pattern": "*.rs"})).await?;
        assert!(
            !out.contains("leak.rs") && out.contains("alias.rs"),
            "{out}"
        );
        Ok(())
    }

    #[tokio::test]
    async fn grep_explains_bad_regex_and_refuses_outside_paths() -> TestResult {
        let (_dir, ws) = workspace()?;
        let bad = error_text(call(&Grep, &ws, json!({"pattern": "fn ("})).await);
        assert!(bad.contains("invalid regular expression"), "{bad}");
        let outside = call(&Grep, &ws, json!({"pattern": "x", "path": "/etc"})).await;
        let outside = error_text(outside);
        assert!(outside.contains("outside the workspace"), "{outside}");
        Ok(())
    }
}
