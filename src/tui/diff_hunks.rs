//! Reads a tool's unified diff into numbered rows: every code line gets its old and/or new
//! line number from the `@@ -a,b +c,d @@` header of its hunk, so the view can show a gutter.
//! Parsing is separate from styling so numbering can be tested on plain data.

/// The ranges a hunk covers: `@@ -old_start,old_len +new_start,new_len @@`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HunkHeader {
    pub old_start: u32,
    pub old_len: u32,
    pub new_start: u32,
    pub new_len: u32,
}

/// One line of a tool output holding a diff, as the view draws it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Row {
    /// Text before the diff: the tool's summary line.
    Summary(String),
    /// Text after the diff started that is no diff line, such as "[… more diff lines]".
    Note(String),
    /// A hunk header, as written.
    Hunk(String),
    Context {
        old: u32,
        new: u32,
        code: String,
    },
    Removed {
        old: u32,
        code: String,
    },
    Added {
        new: u32,
        code: String,
    },
    /// `\ No newline at end of file`.
    Marker(String),
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ParsedDiff {
    /// The changed file, from the `+++ b/…` header (or `--- a/…` when the new side is
    /// `/dev/null`).
    pub path: Option<String>,
    pub rows: Vec<Row>,
}

impl ParsedDiff {
    /// The largest old and new line numbers, for the gutter; `None` for a side with no
    /// lines (the old side of a new file).
    pub fn last_line_numbers(&self) -> (Option<u32>, Option<u32>) {
        let (mut old_max, mut new_max) = (None, None);
        for row in &self.rows {
            let (old, new) = match row {
                Row::Context { old, new, .. } => (Some(*old), Some(*new)),
                Row::Removed { old, .. } => (Some(*old), None),
                Row::Added { new, .. } => (None, Some(*new)),
                Row::Summary(_) | Row::Note(_) | Row::Hunk(_) | Row::Marker(_) => (None, None),
            };
            old_max = old_max.max(old);
            new_max = new_max.max(new);
        }
        (old_max, new_max)
    }
}

/// Parses `@@ -a,b +c,d @@ …`; a missing length means 1, as in `diff -u`.
pub fn parse_hunk_header(line: &str) -> Option<HunkHeader> {
    let rest = line.strip_prefix("@@ -")?;
    let (ranges, _) = rest.split_once(" @@")?;
    let (old, new) = ranges.split_once(" +")?;
    let (old_start, old_len) = parse_range(old)?;
    let (new_start, new_len) = parse_range(new)?;
    Some(HunkHeader {
        old_start,
        old_len,
        new_start,
        new_len,
    })
}

fn parse_range(range: &str) -> Option<(u32, u32)> {
    match range.split_once(',') {
        Some((start, len)) => Some((start.parse().ok()?, len.parse().ok()?)),
        None => Some((range.parse().ok()?, 1)),
    }
}

/// Where the reader is inside a hunk: the next line numbers and the lines still expected.
struct Cursor {
    old: u32,
    new: u32,
    old_left: u32,
    new_left: u32,
}

/// Splits `text` into rows. Lines of a hunk are told apart by their first character only
/// while the header's counts say more are due, so a removed line reading `-- x` is never
/// taken for a file header and a note after a cut-short hunk stays a note.
pub fn parse(text: &str) -> ParsedDiff {
    let mut parsed = ParsedDiff::default();
    let mut cursor: Option<Cursor> = None;
    // Whether a file header or hunk was seen: text before it is the summary.
    let mut started = false;
    for raw in text.lines() {
        let line = raw.trim_end_matches('\r');
        if let Some(at) = cursor.as_mut()
            && (at.old_left > 0 || at.new_left > 0)
            && let Some(row) = hunk_row(at, line)
        {
            parsed.rows.push(row);
            continue;
        }
        cursor = None;
        started |= line.starts_with("--- ") || line.starts_with("@@ ");
        if let Some(header) = parse_hunk_header(line) {
            cursor = Some(Cursor {
                old: header.old_start,
                new: header.new_start,
                old_left: header.old_len,
                new_left: header.new_len,
            });
            parsed.rows.push(Row::Hunk(line.to_string()));
        } else if let Some(path) = line.strip_prefix("+++ ") {
            if let Some(path) = header_path(path, "b/") {
                parsed.path = Some(path);
            }
        } else if let Some(path) = line.strip_prefix("--- ") {
            if parsed.path.is_none() {
                parsed.path = header_path(path, "a/");
            }
        } else if line.starts_with('\\') {
            parsed.rows.push(Row::Marker(line.to_string()));
        } else if started {
            parsed.rows.push(Row::Note(line.to_string()));
        } else {
            parsed.rows.push(Row::Summary(line.to_string()));
        }
    }
    parsed
}

/// The row for `line` inside a hunk, advancing the cursor; `None` if it is no hunk line.
fn hunk_row(at: &mut Cursor, line: &str) -> Option<Row> {
    let (tag, code) = match line.char_indices().nth(1) {
        Some((index, _)) => line.split_at(index),
        None => (line, ""),
    };
    let code = code.replace('\t', "    ");
    let row = match tag {
        "+" if at.new_left > 0 => {
            at.new_left -= 1;
            at.new += 1;
            Row::Added {
                new: at.new - 1,
                code,
            }
        }
        "-" if at.old_left > 0 => {
            at.old_left -= 1;
            at.old += 1;
            Row::Removed {
                old: at.old - 1,
                code,
            }
        }
        // Some tools strip the space of an empty context line.
        " " | "" => {
            at.old_left = at.old_left.saturating_sub(1);
            at.new_left = at.new_left.saturating_sub(1);
            at.old += 1;
            at.new += 1;
            Row::Context {
                old: at.old - 1,
                new: at.new - 1,
                code,
            }
        }
        "\\" => Row::Marker(line.to_string()),
        _ => return None,
    };
    Some(row)
}

fn header_path(field: &str, prefix: &str) -> Option<String> {
    // `diff -u` may follow the name with a tab and a timestamp.
    let name = field.split('\t').next().unwrap_or_default().trim();
    if name == "/dev/null" || name.is_empty() {
        return None;
    }
    Some(name.strip_prefix(prefix).unwrap_or(name).to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hunk_headers_give_starts_and_lengths() {
        let header = parse_hunk_header("@@ -12,7 +14,9 @@ fn main() {");
        assert_eq!(
            header,
            Some(HunkHeader {
                old_start: 12,
                old_len: 7,
                new_start: 14,
                new_len: 9
            })
        );
    }

    #[test]
    fn a_missing_length_means_one_line() {
        let header = parse_hunk_header("@@ -3 +0,0 @@");
        assert_eq!(
            header,
            Some(HunkHeader {
                old_start: 3,
                old_len: 1,
                new_start: 0,
                new_len: 0
            })
        );
    }

    #[test]
    fn malformed_headers_are_refused() {
        assert_eq!(parse_hunk_header("@@ -a,1 +1,1 @@"), None);
        assert_eq!(parse_hunk_header("@@ -1,1 @@"), None);
        assert_eq!(parse_hunk_header("@@@ -1,1 +1,1 @@@"), None);
        assert_eq!(parse_hunk_header("plain text"), None);
    }

    #[test]
    fn lines_are_numbered_across_several_hunks() {
        let text = "edited f.rs: +2 -1 lines\n--- a/f.rs\n+++ b/f.rs\n\
                    @@ -2,3 +2,3 @@\n a\n-b\n+B\n c\n\
                    @@ -40,2 +40,3 @@ fn tail()\n x\n+y\n z\n";
        let parsed = parse(text);
        assert_eq!(parsed.path.as_deref(), Some("f.rs"));
        let code = |s: &str| s.to_string();
        assert_eq!(
            parsed.rows,
            [
                Row::Summary(code("edited f.rs: +2 -1 lines")),
                Row::Hunk(code("@@ -2,3 +2,3 @@")),
                Row::Context {
                    old: 2,
                    new: 2,
                    code: code("a")
                },
                Row::Removed {
                    old: 3,
                    code: code("b")
                },
                Row::Added {
                    new: 3,
                    code: code("B")
                },
                Row::Context {
                    old: 4,
                    new: 4,
                    code: code("c")
                },
                Row::Hunk(code("@@ -40,2 +40,3 @@ fn tail()")),
                Row::Context {
                    old: 40,
                    new: 40,
                    code: code("x")
                },
                Row::Added {
                    new: 41,
                    code: code("y")
                },
                Row::Context {
                    old: 41,
                    new: 42,
                    code: code("z")
                },
            ]
        );
        assert_eq!(parsed.last_line_numbers(), (Some(41), Some(42)));
    }

    #[test]
    fn a_removed_line_that_looks_like_a_header_stays_removed() {
        let text = "--- a/x.sql\n+++ b/x.sql\n@@ -1,2 +1,1 @@\n--- comment\n keep\n";
        let rows = parse(text).rows;
        let removed = Row::Removed {
            old: 1,
            code: "-- comment".into(),
        };
        assert_eq!(rows.get(1), Some(&removed));
    }

    #[test]
    fn a_note_after_a_cut_hunk_is_a_note() {
        let text = "--- a/x\n+++ b/x\n@@ -1,5 +1,5 @@\n a\n-b\n\
                    [… 9 more diff lines not shown; read the file to see the rest]\n";
        let rows = parse(text).rows;
        assert!(matches!(rows.last(), Some(Row::Note(n)) if n.starts_with("[… 9 more")));
    }

    #[test]
    fn a_new_file_takes_its_name_from_the_new_side() {
        let parsed = parse("--- /dev/null\n+++ b/new.py\n@@ -0,0 +1,1 @@\n+print()\n");
        assert_eq!(parsed.path.as_deref(), Some("new.py"));
        let added = Row::Added {
            new: 1,
            code: "print()".into(),
        };
        assert_eq!(parsed.rows.get(1), Some(&added));
        assert_eq!(parsed.last_line_numbers(), (None, Some(1)));
    }
}
