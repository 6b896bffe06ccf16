//! Readable unified diffs. `edit_file` and `write_file` answer with a summary line and a
//! unified diff (`a/` and `b/` headers), and a write asks for approval with one; both show
//! it with old and new line numbers in a gutter, the code in syntax colour, added and removed
//! lines marked and tinted, and context dimmed, so a change can be reviewed at a glance.
//! Callers render once and keep the lines (highlighting is too slow to redo every frame).

use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};

use super::diff_highlight::{highlight_rows, language};
use super::diff_hunks::{self, Row};

/// Background of added code: a dark green from the 256-colour cube, so that it works in
/// terminals without true colour and keeps the syntax colours readable.
const ADDED_BG: Color = Color::Indexed(22);
/// Background of removed code: a dark red.
const REMOVED_BG: Color = Color::Indexed(52);

/// How much of a diff to show.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fold {
    All,
    /// The first `lines` lines, then "… N more lines" followed by `hint`.
    After {
        lines: usize,
        hint: &'static str,
    },
}

/// Whether `text` carries a unified diff.
pub fn has_diff(text: &str) -> bool {
    text.lines().any(|l| l.starts_with("@@ ")) && text.contains("\n+++ ")
}

/// Styles a tool output (or an approval's diff) that contains a unified diff. Lines before
/// the diff (the summary) stay plain; the file headers are dropped because the cell names the
/// file. The syntax follows the file named in the headers, else `path`.
pub fn render(text: &str, path: Option<&str>, fold: Fold) -> Vec<Line<'static>> {
    let parsed = diff_hunks::parse(text);
    let shown = match fold {
        Fold::All => parsed.rows.len(),
        Fold::After { lines, .. } => parsed.rows.len().min(lines),
    };
    // Only the rows shown are highlighted: a folded diff costs what it shows.
    let rows = parsed.rows.get(..shown).unwrap_or_default();
    let lang = language(parsed.path.as_deref().or(path));
    let code = highlight_rows(rows, lang);
    let gutter = Gutter::new(parsed.last_line_numbers());
    let mut lines: Vec<Line<'static>> = rows
        .iter()
        .zip(code)
        .map(|(row, spans)| row_line(row, spans, &gutter))
        .collect();
    let hidden = parsed.rows.len() - shown;
    if let (Fold::After { hint, .. }, true) = (fold, hidden > 0) {
        let noun = if hidden == 1 { "line" } else { "lines" };
        lines.push(Line::styled(format!("… {hidden} more {noun}{hint}"), dim()));
    }
    lines
}

/// The line-number columns: old and new, each as wide as its largest number; a side without
/// lines (the old side of a new file) has no column.
struct Gutter {
    old: Option<usize>,
    new: Option<usize>,
}

impl Gutter {
    fn new((old, new): (Option<u32>, Option<u32>)) -> Self {
        let width = |n: u32| n.to_string().len();
        Self {
            old: old.map(width),
            new: new.map(width),
        }
    }

    fn span(&self, old: Option<u32>, new: Option<u32>) -> Span<'static> {
        let mut text = String::new();
        for (width, number) in [(self.old, old), (self.new, new)] {
            if let Some(width) = width {
                let number = number.map_or_else(String::new, |n| n.to_string());
                text.push_str(&format!("{number:>width$} "));
            }
        }
        Span::styled(text, dim())
    }
}

fn row_line(row: &Row, highlighted: Option<Vec<Span<'static>>>, gutter: &Gutter) -> Line<'static> {
    match row {
        Row::Summary(text) => Line::raw(text.clone()),
        Row::Note(text) => Line::styled(text.clone(), dim().add_modifier(Modifier::ITALIC)),
        Row::Hunk(text) => Line::styled(
            text.clone(),
            Style::default().fg(Color::Cyan).add_modifier(Modifier::DIM),
        ),
        Row::Marker(text) => Line::styled(text.clone(), dim().add_modifier(Modifier::ITALIC)),
        Row::Context { old, new, code } => {
            let plain = Style::default().fg(Color::Gray);
            let mut spans = vec![gutter.span(Some(*old), Some(*new)), Span::raw("  ")];
            spans.extend(code_spans(code, highlighted, plain, context_style()));
            Line::from(spans)
        }
        Row::Removed { old, code } => changed(
            gutter.span(Some(*old), None),
            ("- ", Color::Red, REMOVED_BG),
            code,
            highlighted,
        ),
        Row::Added { new, code } => changed(
            gutter.span(None, Some(*new)),
            ("+ ", Color::Green, ADDED_BG),
            code,
            highlighted,
        ),
    }
}

/// An added or removed line: a coloured sign, then the code on a tinted background.
fn changed(
    gutter: Span<'static>,
    (sign, colour, background): (&'static str, Color, Color),
    code: &str,
    highlighted: Option<Vec<Span<'static>>>,
) -> Line<'static> {
    let tint = Style::default().bg(background);
    let sign = Span::styled(sign, tint.fg(colour).add_modifier(Modifier::BOLD));
    let mut spans = vec![gutter, sign];
    spans.extend(code_spans(code, highlighted, tint.fg(colour), tint));
    Line::from(spans)
}

/// The code of a row: its highlighted spans patched with `over`, or the text in `plain`.
fn code_spans(
    code: &str,
    highlighted: Option<Vec<Span<'static>>>,
    plain: Style,
    over: Style,
) -> Vec<Span<'static>> {
    match highlighted {
        Some(spans) => spans
            .into_iter()
            .map(|span| {
                let style = span.style.patch(over);
                span.style(style)
            })
            .collect(),
        None if code.is_empty() => Vec::new(),
        None => vec![Span::styled(code.to_string(), plain.patch(over))],
    }
}

/// Context: shown for orientation, so it recedes.
fn context_style() -> Style {
    Style::default().add_modifier(Modifier::DIM)
}

fn dim() -> Style {
    Style::default().fg(Color::DarkGray)
}

#[cfg(test)]
mod tests {
    use super::*;

    const SAMPLE: &str = "edited src/a.rs: +1 -1 lines\n--- a/src/a.rs\n+++ b/src/a.rs\n\
                          @@ -1,2 +1,2 @@\n keep\n-old\n+new\n";

    fn text(lines: &[Line<'_>]) -> Vec<String> {
        lines.iter().map(|l| l.to_string()).collect()
    }

    #[test]
    fn rows_get_line_numbers_signs_and_no_file_headers() {
        assert!(has_diff(SAMPLE));
        let lines = render(SAMPLE, None, Fold::All);
        assert_eq!(
            text(&lines),
            [
                "edited src/a.rs: +1 -1 lines",
                "@@ -1,2 +1,2 @@",
                "1 1   keep",
                "2   - old",
                "  2 + new"
            ]
        );
    }

    #[test]
    fn each_gutter_column_is_as_wide_as_its_largest_number() {
        let diff = "--- a/x\n+++ b/x\n@@ -98,2 +98,3 @@\n a\n+b\n c\n";
        let lines = render(diff, None, Fold::All);
        assert_eq!(
            text(&lines)[1..],
            ["98  98   a", "    99 + b", "99 100   c"]
        );
    }

    #[test]
    fn a_new_file_has_no_old_column() {
        let diff = "--- a/x\n+++ b/x\n@@ -0,0 +1,2 @@\n+a\n+b\n";
        let lines = render(diff, None, Fold::All);
        assert_eq!(text(&lines)[1..], ["1 + a", "2 + b"]);
    }

    #[test]
    fn plain_code_keeps_the_change_colours() {
        // No syntax for this extension: the code itself carries the colour.
        let diff = "--- a/x.nosuch\n+++ b/x.nosuch\n@@ -1,2 +1,2 @@\n keep\n-old\n+new\n";
        let lines = render(diff, None, Fold::All);
        let removed = &lines[2].spans;
        assert_eq!(removed[1].style.fg, Some(Color::Red));
        assert_eq!(removed[2].style.fg, Some(Color::Red));
        assert_eq!(removed[2].style.bg, Some(REMOVED_BG));
        let added = &lines[3].spans;
        assert_eq!(added[1].style.fg, Some(Color::Green));
        assert_eq!(added[2].style.bg, Some(ADDED_BG));
        let context = &lines[1].spans[2].style;
        assert!(context.add_modifier.contains(Modifier::DIM));
        assert_eq!(context.bg, None);
    }

    #[test]
    fn known_languages_are_highlighted_inside_the_diff() {
        crate::tui::highlight::load_now();
        let diff = "--- a/m.rs\n+++ b/m.rs\n@@ -1,2 +1,2 @@\n fn main() {\n-    let x = 1;\n+    let y = \"two\";\n";
        let lines = render(diff, None, Fold::All);
        let added = &lines[3].spans[2..];
        let colours: std::collections::HashSet<_> =
            added.iter().filter_map(|s| s.style.fg).collect();
        assert!(
            colours.len() > 1,
            "expected several colours, got {colours:?}"
        );
        assert!(added.iter().all(|s| s.style.bg == Some(ADDED_BG)));
        assert_eq!(lines[3].spans[1].style.fg, Some(Color::Green));
        let context = &lines[1].spans[2..];
        assert!(context.len() > 1);
        assert!(
            context
                .iter()
                .all(|s| s.style.add_modifier.contains(Modifier::DIM))
        );
    }

    #[test]
    fn a_long_diff_folds_with_a_count_of_what_is_left() {
        let body: String = (1..=30).map(|n| format!("+line {n}\n")).collect();
        let diff = format!("wrote f: +30 -0 lines\n--- a/f\n+++ b/f\n@@ -0,0 +1,30 @@\n{body}");
        let fold = Fold::After {
            lines: 10,
            hint: " (Ctrl+T to see all)",
        };
        let lines = render(&diff, None, fold);
        assert_eq!(lines.len(), 11);
        // 32 rows (summary, hunk header, 30 lines); 10 shown.
        assert_eq!(lines[10].to_string(), "… 22 more lines (Ctrl+T to see all)");
        assert_eq!(render(&diff, None, Fold::All).len(), 32);
    }

    #[test]
    fn a_diff_that_fits_is_not_folded() {
        let fold = Fold::After { lines: 5, hint: "" };
        assert_eq!(render(SAMPLE, None, fold).len(), 5);
    }

    #[test]
    fn plain_output_is_not_a_diff() {
        assert!(!has_diff("hello\n+ not a diff"));
    }
}
