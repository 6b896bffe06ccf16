//! Word wrapping of styled lines. Cells render once to logical lines; the scrollback writer
//! and the pager wrap them to whatever width the terminal has at that moment.

use ratatui::style::Style;
use ratatui::text::{Line, Span};

/// Display width of `text` in terminal columns.
pub fn str_width(text: &str) -> usize {
    Span::raw(text).width()
}

fn char_width(c: char) -> usize {
    let mut bytes = [0u8; 4];
    str_width(c.encode_utf8(&mut bytes))
}

/// Wraps every line to `width` columns.
pub fn wrap_lines(lines: &[Line<'static>], width: u16) -> Vec<Line<'static>> {
    let mut out = Vec::with_capacity(lines.len());
    for line in lines {
        wrap_line(line, width, &mut out);
    }
    out
}

/// Wraps one logical line at word boundaries (splitting words wider than a row). Rows after
/// the first keep the hanging indent of a list item or quote, so wrapped items stay aligned.
pub fn wrap_line(line: &Line<'static>, width: u16, out: &mut Vec<Line<'static>>) {
    let width = usize::from(width.max(1));
    if line.width() <= width {
        out.push(line.clone());
        return;
    }
    let indent = hanging_indent(line).min(width / 2);
    let mut rows = RowBuilder::new(width, indent, line.style);
    for span in &line.spans {
        let mut rest: &str = &span.content;
        while let Some(token) = next_token(rest) {
            rest = &rest[token.len()..];
            rows.push_token(token, span.style);
        }
    }
    rows.finish(out);
}

/// Splits off the next run of spaces or of non-space characters.
fn next_token(text: &str) -> Option<&str> {
    let first = text.chars().next()?;
    let is_space = first == ' ';
    let end = text
        .char_indices()
        .find(|&(_, c)| (c == ' ') != is_space)
        .map_or(text.len(), |(i, _)| i);
    Some(&text[..end])
}

/// Columns that continuation rows are indented by: leading spaces plus list, quote or reply
/// markers (a list inside a reply or quote counts both).
fn hanging_indent(line: &Line<'_>) -> usize {
    let mut head = String::new();
    for span in &line.spans {
        head.push_str(&span.content);
        if head.len() >= 24 {
            break;
        }
    }
    let markers = [
        "• ", "◦ ", "▪ ", "- ", "* ", "▌ ", "│ ", "↳ ", "› ", "■ ", "✗ ", "✓ ", "⋯ ", "⏭ ", "● ",
    ];
    let mut indent = 0;
    let mut rest = head.as_str();
    loop {
        let trimmed = rest.trim_start_matches(' ');
        indent += rest.len() - trimmed.len();
        rest = trimmed;
        if let Some(marker) = markers.iter().find(|m| rest.starts_with(*m)) {
            indent += str_width(marker);
            rest = &rest[marker.len()..];
            continue;
        }
        let digits = rest.chars().take_while(char::is_ascii_digit).count();
        if digits > 0 && (rest[digits..].starts_with(". ") || rest[digits..].starts_with(") ")) {
            indent += digits + 2;
            rest = &rest[digits + 2..];
            continue;
        }
        return indent;
    }
}

struct RowBuilder {
    width: usize,
    indent: usize,
    line_style: Style,
    rows: Vec<Line<'static>>,
    spans: Vec<Span<'static>>,
    used: usize,
}

impl RowBuilder {
    fn new(width: usize, indent: usize, line_style: Style) -> Self {
        Self {
            width,
            indent,
            line_style,
            rows: Vec::new(),
            spans: Vec::new(),
            used: 0,
        }
    }

    fn push_token(&mut self, token: &str, style: Style) {
        let token_width = str_width(token);
        if token.starts_with(' ') {
            // Spaces at a break are dropped, and so are spaces opening a continuation row.
            let at_row_start = !self.rows.is_empty() && self.used == self.indent;
            if at_row_start {
                return;
            }
            if self.used + token_width <= self.width {
                self.append(token, style, token_width);
            } else {
                self.break_row();
            }
        } else if self.used + token_width <= self.width {
            self.append(token, style, token_width);
        } else if token_width <= self.width - self.indent {
            self.break_row();
            self.append(token, style, token_width);
        } else {
            for c in token.chars() {
                let w = char_width(c);
                if self.used + w > self.width {
                    self.break_row();
                }
                let mut bytes = [0u8; 4];
                self.append(c.encode_utf8(&mut bytes), style, w);
            }
        }
    }

    fn append(&mut self, text: &str, style: Style, width: usize) {
        match self.spans.last_mut() {
            Some(last) if last.style == style => last.content.to_mut().push_str(text),
            _ => self.spans.push(Span::styled(text.to_string(), style)),
        }
        self.used += width;
    }

    fn break_row(&mut self) {
        if let Some(last) = self.spans.last_mut() {
            let trimmed = last.content.trim_end_matches(' ').len();
            last.content.to_mut().truncate(trimmed);
        }
        let spans = std::mem::take(&mut self.spans);
        self.rows.push(Line::from(spans).style(self.line_style));
        if self.indent > 0 {
            self.spans.push(Span::raw(" ".repeat(self.indent)));
        }
        self.used = self.indent;
    }

    fn finish(mut self, out: &mut Vec<Line<'static>>) {
        if self.used > self.indent || self.rows.is_empty() {
            self.rows
                .push(Line::from(self.spans).style(self.line_style));
        }
        out.extend(self.rows);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn texts(lines: &[Line<'static>]) -> Vec<String> {
        lines.iter().map(|l| l.to_string()).collect()
    }

    #[test]
    fn breaks_at_spaces_and_drops_them() {
        let out = wrap_lines(&[Line::from("alpha beta gamma delta")], 11);
        assert_eq!(texts(&out), ["alpha beta", "gamma delta"]);
    }

    #[test]
    fn splits_words_longer_than_a_row() {
        let out = wrap_lines(&[Line::from("abcdefghij")], 4);
        assert_eq!(texts(&out), ["abcd", "efgh", "ij"]);
    }

    #[test]
    fn list_items_keep_a_hanging_indent() {
        let out = wrap_lines(&[Line::from("  • one two three four")], 12);
        assert_eq!(texts(&out), ["  • one two", "    three", "    four"]);
    }

    #[test]
    fn a_list_inside_a_reply_hangs_under_the_item_text() {
        let out = wrap_lines(&[Line::from("● • one two three")], 10);
        assert_eq!(texts(&out), ["● • one", "    two", "    three"]);
    }

    #[test]
    fn styles_survive_wrapping() {
        let bold = Style::default().bold();
        let line = Line::from(vec![Span::raw("plain "), Span::styled("bold words", bold)]);
        let out = wrap_lines(&[line], 10);
        assert_eq!(texts(&out), ["plain bold", "words"]);
        assert_eq!(out[1].spans[0].style, bold);
    }

    #[test]
    fn wide_characters_count_two_columns() {
        let out = wrap_lines(&[Line::from("日本語テキスト")], 6);
        assert_eq!(texts(&out), ["日本語", "テキス", "ト"]);
    }
}
