//! Syntax colour for diff rows. A hunk is a window into a file, so its old side (context and
//! removed lines) and its new side (context and added lines) are highlighted as the code they
//! are; a string or comment that spans lines then colours right on both sides.

use std::path::Path;

use ratatui::text::Span;

use super::diff_hunks::Row;
use super::highlight;

/// The syntax token for `path`: its extension, or its name for files like `Makefile`.
pub fn language(path: Option<&str>) -> Option<&str> {
    let path = Path::new(path?);
    path.extension()
        .or_else(|| path.file_name())
        .and_then(|name| name.to_str())
}

/// Highlighted code spans per row (`None`: style it plain), hunk by hunk.
pub fn highlight_rows(rows: &[Row], lang: Option<&str>) -> Vec<Option<Vec<Span<'static>>>> {
    let mut out = vec![None; rows.len()];
    let Some(lang) = lang else {
        return out;
    };
    let mut start = 0;
    while start < rows.len() {
        let len = rows[start + 1..]
            .iter()
            .position(|row| matches!(row, Row::Hunk(_)))
            .map_or(rows.len() - start, |n| n + 1);
        let hunk = start..start + len;
        highlight_hunk(&rows[hunk.clone()], lang, &mut out[hunk]);
        start += len;
    }
    out
}

fn highlight_hunk(rows: &[Row], lang: &str, out: &mut [Option<Vec<Span<'static>>>]) {
    let (mut old, mut new) = (String::new(), String::new());
    for row in rows {
        match row {
            Row::Context { code, .. } => {
                for side in [&mut old, &mut new] {
                    side.push_str(code);
                    side.push('\n');
                }
            }
            Row::Removed { code, .. } => {
                old.push_str(code);
                old.push('\n');
            }
            Row::Added { code, .. } => {
                new.push_str(code);
                new.push('\n');
            }
            Row::Summary(_) | Row::Note(_) | Row::Hunk(_) | Row::Marker(_) => {}
        }
    }
    // Context is coloured from the new side, so without removed lines the old side is not
    // needed (a new file is highlighted once, not twice).
    let has_removed = rows.iter().any(|row| matches!(row, Row::Removed { .. }));
    let old = if has_removed {
        highlight::highlight_known(&old, lang)
    } else {
        Some(Vec::new())
    };
    let (Some(old), Some(new)) = (old, highlight::highlight_known(&new, lang)) else {
        return;
    };
    let (mut old, mut new) = (old.into_iter(), new.into_iter());
    for (row, slot) in rows.iter().zip(out.iter_mut()) {
        let line = match row {
            Row::Context { .. } => {
                old.next();
                new.next()
            }
            Row::Removed { .. } => old.next(),
            Row::Added { .. } => new.next(),
            Row::Summary(_) | Row::Note(_) | Row::Hunk(_) | Row::Marker(_) => None,
        };
        *slot = line.map(|line| line.spans);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_path_picks_the_syntax_when_headers_have_none() {
        assert_eq!(language(Some("src/lib.rs")), Some("rs"));
        assert_eq!(language(Some("build/Makefile")), Some("Makefile"));
        assert_eq!(language(None), None);
    }

    #[test]
    fn context_is_coloured_as_the_new_code_reads() {
        highlight::load_now();
        // On the old side the context line sat inside a comment; now it is code.
        let rows = [
            Row::Hunk("@@ -1,3 +1,1 @@".into()),
            Row::Removed {
                old: 1,
                code: "/*".into(),
            },
            Row::Context {
                old: 2,
                new: 1,
                code: "let x = 1;".into(),
            },
            Row::Removed {
                old: 3,
                code: "*/".into(),
            },
        ];
        let spans = highlight_rows(&rows, Some("rs"));
        let alone = highlight::highlight_known("let x = 1;\n", "rs");
        let alone = alone
            .and_then(|lines| lines.into_iter().next())
            .map(|l| l.spans);
        assert!(alone.is_some());
        // Read as one stream, the line would be a comment: the sides must be apart.
        let stream = highlight::highlight_known("/*\nlet x = 1;\n*/\n", "rs");
        let stream = stream
            .and_then(|lines| lines.into_iter().nth(1))
            .map(|l| l.spans);
        assert_ne!(stream, alone);
        assert_eq!(spans[2], alone);
        assert!(spans[0].is_none(), "hunk headers are not code");
    }
}
