//! Coloured unified diffs. `edit_file` and `write_file` answer with a summary line and a
//! unified diff (`a/` and `b/` headers); the tool cell shows it in colour, so a change can be
//! reviewed at a glance.

use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};

/// Whether `text` carries a unified diff.
pub fn has_diff(text: &str) -> bool {
    text.lines().any(|l| l.starts_with("@@ ")) && text.contains("\n+++ ")
}

/// Styles every line of a tool output that contains a unified diff. Lines before the diff
/// (the summary) stay plain; the file headers are dropped because the cell names the file.
pub fn render(text: &str) -> Vec<Line<'static>> {
    let mut lines = Vec::new();
    let mut in_diff = false;
    for raw in text.lines() {
        if raw.starts_with("--- ") || raw.starts_with("+++ ") {
            in_diff = true;
            continue;
        }
        if raw.starts_with("@@ ") {
            in_diff = true;
        }
        let style = if !in_diff {
            Style::default()
        } else if raw.starts_with("@@") {
            Style::default().fg(Color::Cyan).add_modifier(Modifier::DIM)
        } else if raw.starts_with('+') {
            Style::default().fg(Color::Green)
        } else if raw.starts_with('-') {
            Style::default().fg(Color::Red)
        } else {
            Style::default().fg(Color::Gray)
        };
        lines.push(Line::from(Span::styled(raw.to_string(), style)));
    }
    lines
}

#[cfg(test)]
mod tests {
    use super::*;

    const SAMPLE: &str = "edited src/a.rs: +1 -1 lines\n--- a/src/a.rs\n+++ b/src/a.rs\n\
                          @@ -1,2 +1,2 @@\n keep\n-old\n+new\n";

    #[test]
    fn additions_are_green_removals_red_and_headers_dropped() {
        assert!(has_diff(SAMPLE));
        let lines = render(SAMPLE);
        let text: Vec<String> = lines.iter().map(|l| l.to_string()).collect();
        assert_eq!(
            text,
            [
                "edited src/a.rs: +1 -1 lines",
                "@@ -1,2 +1,2 @@",
                " keep",
                "-old",
                "+new"
            ]
        );
        assert_eq!(lines[3].spans[0].style.fg, Some(Color::Red));
        assert_eq!(lines[4].spans[0].style.fg, Some(Color::Green));
    }

    #[test]
    fn plain_output_is_not_a_diff() {
        assert!(!has_diff("hello\n+ not a diff"));
    }
}
