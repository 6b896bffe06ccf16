//! The frame of an assistant reply in the transcript: a marker on its first line and a
//! margin in front of the others, so a reply stands apart from the prompts and tool calls
//! around it.

use ratatui::style::{Modifier, Style};
use ratatui::text::{Line, Span};

use super::markdown;

/// The reply marker, on the first line of a reply.
pub const MARKER: &str = "● ";
/// In front of every other line; as wide as the marker.
pub const MARGIN: &str = "  ";

/// A whole reply rendered for `width` columns.
pub fn lines(text: &str, width: u16) -> Vec<Line<'static>> {
    frame(markdown::render(text, body_width(width)), Start::Reply)
}

/// Columns the markdown of a reply gets inside the margin.
pub fn body_width(width: u16) -> usize {
    usize::from(width).saturating_sub(MARGIN.len()).max(1)
}

/// Whether lines begin a reply (the first gets the marker) or continue one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Start {
    Reply,
    Continuation,
}

/// Puts the marker or the margin in front of each line; blank lines stay blank.
pub fn frame(lines: Vec<Line<'static>>, start: Start) -> Vec<Line<'static>> {
    let mut marker = start == Start::Reply;
    lines
        .into_iter()
        .map(|mut line| {
            if line.spans.is_empty() {
                return line;
            }
            let lead = if std::mem::take(&mut marker) {
                Span::styled(MARKER, Style::default().add_modifier(Modifier::BOLD))
            } else {
                Span::raw(MARGIN)
            };
            line.spans.insert(0, lead);
            line
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn texts(lines: &[Line<'static>]) -> Vec<String> {
        lines.iter().map(|l| l.to_string()).collect()
    }

    #[test]
    fn the_first_line_gets_the_marker_and_the_rest_a_margin() {
        let out = lines("First.\n\n- a\n- b", 40);
        assert_eq!(texts(&out), ["● First.", "", "  • a", "  • b"]);
    }

    #[test]
    fn continued_replies_get_no_marker() {
        let out = frame(vec![Line::raw("x"), Line::default()], Start::Continuation);
        assert_eq!(texts(&out), ["  x", ""]);
    }
}
