//! Code blocks framed for the transcript: a top rule naming the language, a bar in front of
//! every line and a bottom rule, so code stands apart from prose. Lines too long for the
//! width wrap behind the bar instead of spilling to the left edge.

use ratatui::style::{Color, Style};
use ratatui::text::{Line, Span};

use super::highlight;
use super::wrap::{str_width, wrap_line};

/// The rules stop at this many columns on wide terminals.
const MAX_RULE: usize = 80;
/// The bar and space in front of each code line.
const BAR: &str = "│ ";

/// The lines of a code block in `lang` framed for `width` columns.
pub fn framed(code: &str, lang: &str, width: usize) -> Vec<Line<'static>> {
    let border = Style::default().fg(Color::DarkGray);
    let rule = width.clamp(2, MAX_RULE);
    let label = highlight::language_token(lang);
    let top = if label.is_empty() {
        Line::styled(format!("╭{}", "─".repeat(rule - 1)), border)
    } else {
        let fill = rule.saturating_sub(str_width(label) + 4).max(1);
        Line::from(vec![
            Span::styled("╭─ ", border),
            Span::styled(label.to_string(), Style::default().fg(Color::Gray)),
            Span::styled(format!(" {}", "─".repeat(fill)), border),
        ])
    };
    let mut lines = vec![top];
    let room = u16::try_from(width.saturating_sub(str_width(BAR)).max(1)).unwrap_or(u16::MAX);
    let mut rows = Vec::new();
    for line in highlight::highlight(code, lang) {
        rows.clear();
        wrap_line(&line, room, &mut rows);
        for row in rows.drain(..) {
            let mut spans = vec![Span::styled(BAR, border)];
            spans.extend(row.spans);
            lines.push(Line::from(spans));
        }
    }
    lines.push(Line::styled(format!("╰{}", "─".repeat(rule - 1)), border));
    lines
}

#[cfg(test)]
mod tests {
    use super::*;

    fn texts(lines: &[Line<'static>]) -> Vec<String> {
        lines.iter().map(|l| l.to_string()).collect()
    }

    #[test]
    fn the_frame_names_the_language_and_bars_every_line() {
        let out = texts(&framed("fn a() {}\n\nlet b = 1;\n", "rust", 20));
        assert_eq!(
            out,
            [
                "╭─ rust ────────────",
                "│ fn a() {}",
                "│ ",
                "│ let b = 1;",
                "╰───────────────────",
            ]
        );
    }

    #[test]
    fn long_lines_wrap_behind_the_bar() {
        let out = texts(&framed("alpha beta gamma\n", "", 14));
        assert_eq!(
            out,
            [
                "╭─────────────",
                "│ alpha beta",
                "│ gamma",
                "╰─────────────"
            ]
        );
    }
}
