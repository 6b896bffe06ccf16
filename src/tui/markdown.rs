//! Markdown to styled terminal lines. The assistant writes markdown; the transcript shows
//! headings, lists, emphasis, links, quotes, tables and framed, highlighted code instead of
//! raw syntax. Text lines are logical (the caller wraps them to the terminal width); tables
//! and code frames are laid out for the `width` given, since they cannot be wrapped later.

use pulldown_cmark::{CodeBlockKind, Event, HeadingLevel, Options, Parser, Tag, TagEnd};
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};

use super::markdown_code;
use super::markdown_table::Table;
use super::wrap::str_width;

/// Columns of a thematic break (`---`), at most.
const RULE_WIDTH: usize = 40;

/// Renders `source` to lines for `width` columns.
pub fn render(source: &str, width: usize) -> Vec<Line<'static>> {
    render_with(source, width, Source::Whole)
}

/// Renders the part of a message streamed so far: a code block still open at its end is
/// still arriving, so it gets no bottom rule yet (the lines drawn so far stay valid).
pub fn render_partial(source: &str, width: usize) -> Vec<Line<'static>> {
    render_with(source, width, Source::Partial)
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Source {
    Whole,
    Partial,
}

fn render_with(source: &str, width: usize, kind: Source) -> Vec<Line<'static>> {
    let mut writer = Writer {
        width,
        ..Writer::default()
    };
    let options = Options::ENABLE_STRIKETHROUGH | Options::ENABLE_TABLES;
    for (event, range) in Parser::new_ext(source, options).into_offset_iter() {
        if kind == Source::Partial
            && matches!(event, Event::End(TagEnd::CodeBlock))
            && still_open(&source[range.clone()], range.end >= source.trim_end().len())
        {
            writer.open_code = true;
        }
        writer.event(event);
    }
    writer.flush_line();
    writer.lines
}

/// Whether a code block (its source `text`) may go on: it runs to the end of the source
/// and no closing fence ended it.
fn still_open(text: &str, at_end: bool) -> bool {
    if !at_end {
        return false;
    }
    let mut lines = text.trim_end().lines();
    let first = lines.next().unwrap_or_default();
    let fence = first.trim_start_matches([' ', '>']);
    let Some(mark) = fence.chars().next().filter(|c| *c == '`' || *c == '~') else {
        return true;
    };
    let last = lines
        .last()
        .map(|l| l.trim_start_matches([' ', '>']).trim_end());
    let closed = last.is_some_and(|l| l.len() >= 3 && l.chars().all(|c| c == mark));
    !closed
}

struct ListFrame {
    next_number: Option<u64>,
}

#[derive(Default)]
struct Writer {
    width: usize,
    lines: Vec<Line<'static>>,
    spans: Vec<Span<'static>>,
    styles: Vec<Style>,
    lists: Vec<ListFrame>,
    quote_depth: usize,
    /// The marker of a list item whose first line is not written yet.
    item_marker: Option<String>,
    code: Option<(String, String)>,
    table: Option<Table>,
    /// The code block ending now is still arriving (see `render_partial`).
    open_code: bool,
    links: Vec<String>,
    link_text: String,
    /// The last line written is a block separator (a quote and its paragraph share one).
    after_gap: bool,
}

impl Writer {
    fn event(&mut self, event: Event<'_>) {
        match event {
            Event::Start(tag) => self.start(tag),
            Event::End(tag) => self.end(tag),
            Event::Text(text) => match &mut self.code {
                Some((_, code)) => code.push_str(&text),
                None => self.text(&text, self.style()),
            },
            Event::Code(code) => self.text(&code, Style::default().fg(Color::Cyan)),
            // A table cell is one line: a break inside one becomes a space.
            Event::SoftBreak | Event::HardBreak if self.table.is_some() => {
                self.text(" ", self.style());
            }
            Event::SoftBreak | Event::HardBreak => self.flush_line(),
            Event::Rule => {
                self.block_gap();
                let width = self.available().min(RULE_WIDTH);
                let rule = Span::styled("─".repeat(width), Style::default().fg(Color::DarkGray));
                self.spans.push(rule);
                self.flush_line();
            }
            Event::Html(html) | Event::InlineHtml(html) => {
                for (n, part) in html.split('\n').enumerate() {
                    if n > 0 {
                        self.flush_line();
                    }
                    self.text(part, self.style());
                }
            }
            Event::TaskListMarker(done) => {
                self.text(if done { "[x] " } else { "[ ] " }, self.style());
            }
            Event::FootnoteReference(name) => self.text(&format!("[^{name}]"), self.style()),
            Event::InlineMath(math) | Event::DisplayMath(math) => {
                self.text(&math, Style::default().fg(Color::Cyan));
            }
        }
    }

    fn start(&mut self, tag: Tag<'_>) {
        match tag {
            Tag::Paragraph => {
                if self.item_marker.is_none() {
                    self.block_gap();
                }
            }
            Tag::Heading { level, .. } => {
                self.block_gap();
                self.styles.push(heading_style(level));
            }
            Tag::BlockQuote(_) => {
                self.block_gap();
                self.quote_depth += 1;
            }
            Tag::CodeBlock(kind) => {
                self.block_gap();
                let lang = match kind {
                    CodeBlockKind::Fenced(info) => info.to_string(),
                    CodeBlockKind::Indented => String::new(),
                };
                self.code = Some((lang, String::new()));
            }
            Tag::List(start) => {
                if self.lists.is_empty() {
                    self.block_gap();
                } else {
                    self.flush_line();
                }
                self.lists.push(ListFrame { next_number: start });
            }
            Tag::Item => {
                self.flush_line();
                let nested = self.lists.len() > 1;
                let marker = match self.lists.last_mut() {
                    Some(ListFrame {
                        next_number: Some(n),
                    }) => {
                        *n += 1;
                        format!("{}. ", *n - 1)
                    }
                    Some(_) if nested => "◦ ".to_string(),
                    _ => "• ".to_string(),
                };
                self.item_marker = Some(marker);
            }
            Tag::Emphasis => self.push_modifier(Modifier::ITALIC),
            Tag::Strong => self.push_modifier(Modifier::BOLD),
            Tag::Strikethrough => self.push_modifier(Modifier::CROSSED_OUT),
            Tag::Link { dest_url, .. } => {
                self.links.push(dest_url.to_string());
                self.link_text.clear();
                let style = self
                    .style()
                    .fg(Color::Blue)
                    .add_modifier(Modifier::UNDERLINED);
                self.styles.push(style);
            }
            Tag::Image { dest_url, .. } => {
                self.links.push(dest_url.to_string());
                self.link_text.clear();
                self.styles
                    .push(self.style().add_modifier(Modifier::ITALIC));
            }
            Tag::Table(alignments) => {
                self.block_gap();
                self.table = Some(Table::new(alignments));
            }
            Tag::TableHead => {
                if let Some(table) = &mut self.table {
                    table.start_head();
                }
            }
            Tag::TableRow => {
                if let Some(table) = &mut self.table {
                    table.start_row();
                }
            }
            Tag::HtmlBlock
            | Tag::FootnoteDefinition(_)
            | Tag::DefinitionList
            | Tag::DefinitionListTitle
            | Tag::DefinitionListDefinition
            | Tag::TableCell
            | Tag::Superscript
            | Tag::Subscript
            | Tag::MetadataBlock(_) => {}
        }
    }

    fn end(&mut self, tag: TagEnd) {
        match tag {
            TagEnd::Paragraph => self.flush_line(),
            TagEnd::Heading(_) => {
                self.styles.pop();
                self.flush_line();
            }
            TagEnd::BlockQuote(_) => {
                self.flush_line();
                self.quote_depth = self.quote_depth.saturating_sub(1);
            }
            TagEnd::CodeBlock => {
                if let Some((lang, code)) = self.code.take() {
                    let mut lines = markdown_code::framed(&code, &lang, self.available());
                    if std::mem::take(&mut self.open_code) {
                        lines.pop();
                    }
                    self.write_block(lines);
                }
            }
            TagEnd::TableCell => {
                let spans = std::mem::take(&mut self.spans);
                if let Some(table) = &mut self.table {
                    table.push_cell(spans);
                }
            }
            TagEnd::Table => {
                if let Some(table) = self.table.take() {
                    let lines = table.lines(self.available());
                    self.write_block(lines);
                }
            }
            TagEnd::List(_) => {
                self.flush_line();
                self.lists.pop();
            }
            TagEnd::Item => self.flush_line(),
            TagEnd::Emphasis | TagEnd::Strong | TagEnd::Strikethrough => {
                self.styles.pop();
            }
            TagEnd::Link | TagEnd::Image => {
                self.styles.pop();
                if let Some(url) = self.links.pop()
                    && url != self.link_text
                    && !url.is_empty()
                {
                    let dim = Style::default().fg(Color::DarkGray);
                    self.spans.push(Span::styled(format!(" ({url})"), dim));
                }
            }
            TagEnd::HtmlBlock
            | TagEnd::FootnoteDefinition
            | TagEnd::DefinitionList
            | TagEnd::DefinitionListTitle
            | TagEnd::DefinitionListDefinition
            | TagEnd::TableHead
            | TagEnd::TableRow
            | TagEnd::Superscript
            | TagEnd::Subscript
            | TagEnd::MetadataBlock(_) => {}
        }
    }

    fn style(&self) -> Style {
        self.styles.last().copied().unwrap_or_default()
    }

    fn push_modifier(&mut self, modifier: Modifier) {
        self.styles.push(self.style().add_modifier(modifier));
    }

    fn text(&mut self, text: &str, style: Style) {
        if !self.links.is_empty() {
            self.link_text.push_str(text);
        }
        self.spans.push(Span::styled(text.to_string(), style));
    }

    /// A blank line between top-level blocks.
    fn block_gap(&mut self) {
        self.flush_line();
        if !self.lines.is_empty() && self.lists.is_empty() && !self.after_gap {
            self.lines.push(Line::default());
            self.after_gap = true;
        }
    }

    fn flush_line(&mut self) {
        self.end_line(false);
    }

    /// Writes lines laid out already (a table, a code frame), each behind the line prefix.
    fn write_block(&mut self, lines: Vec<Line<'static>>) {
        self.flush_line();
        for line in lines {
            self.spans.extend(line.spans);
            self.end_line(true);
        }
    }

    /// The quote bars and list indentation in front of the next line.
    fn prefix(&self) -> String {
        let mut prefix = "▌ ".repeat(self.quote_depth);
        if !self.lists.is_empty() {
            prefix.push_str(&"  ".repeat(self.lists.len() - 1));
            prefix.push_str(self.item_marker.as_deref().unwrap_or("  "));
        }
        prefix
    }

    /// Columns left for a block after the line prefix.
    fn available(&self) -> usize {
        self.width.saturating_sub(str_width(&self.prefix()))
    }

    /// Ends the current line, adding the quote bars and list indentation in front of it. An
    /// empty line is written only when `keep_empty` (a line of a laid-out block).
    fn end_line(&mut self, keep_empty: bool) {
        if self.spans.is_empty() && self.item_marker.is_none() && !keep_empty {
            return;
        }
        let prefix = self.prefix();
        self.item_marker = None;
        let mut spans = Vec::with_capacity(self.spans.len() + 1);
        if !prefix.is_empty() {
            spans.push(Span::styled(prefix, Style::default().fg(Color::DarkGray)));
        }
        spans.append(&mut self.spans);
        self.lines.push(Line::from(spans));
        self.after_gap = false;
    }
}

fn heading_style(level: HeadingLevel) -> Style {
    let bold = Style::default().add_modifier(Modifier::BOLD);
    match level {
        HeadingLevel::H1 => bold.add_modifier(Modifier::UNDERLINED).fg(Color::Magenta),
        HeadingLevel::H2 => bold.fg(Color::Magenta),
        HeadingLevel::H3 | HeadingLevel::H4 | HeadingLevel::H5 | HeadingLevel::H6 => bold,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text(source: &str) -> Vec<String> {
        texts(&render(source, 40))
    }

    fn texts(lines: &[Line<'static>]) -> Vec<String> {
        lines.iter().map(|l| l.to_string()).collect()
    }

    #[test]
    fn blocks_are_separated_by_one_blank_line() {
        let out = text("# Title\n\nFirst paragraph\nsecond line.\n\n---\n\nEnd.");
        assert_eq!(
            out,
            [
                "Title",
                "",
                "First paragraph",
                "second line.",
                "",
                &"─".repeat(40),
                "",
                "End."
            ]
        );
    }

    #[test]
    fn headings_lose_their_hashes_and_keep_a_style() {
        let lines = render("# One\n\n## Two\n\n### Three", 40);
        assert_eq!(texts(&lines), ["One", "", "Two", "", "Three"]);
        let style = |n: usize| lines[n].spans[0].style;
        assert!(style(0).add_modifier.contains(Modifier::UNDERLINED));
        assert_eq!(style(2).fg, Some(Color::Magenta));
        assert!(style(4).add_modifier.contains(Modifier::BOLD));
    }

    #[test]
    fn lists_get_markers_numbers_and_nesting() {
        let out = text("- one\n- two\n  - inner\n\n3. three\n4. four");
        assert_eq!(
            out,
            ["• one", "• two", "  ◦ inner", "", "3. three", "4. four"]
        );
    }

    #[test]
    fn emphasis_code_and_links_are_styled() {
        let lines = render("a *b* **c** `d` [e](http://x)", 40);
        let spans = &lines[0].spans;
        let find = |t: &str| spans.iter().find(|s| s.content == t).map(|s| s.style);
        assert!(find("b").is_some_and(|s| s.add_modifier.contains(Modifier::ITALIC)));
        assert!(find("c").is_some_and(|s| s.add_modifier.contains(Modifier::BOLD)));
        assert_eq!(find("d").and_then(|s| s.fg), Some(Color::Cyan));
        assert!(find("e").is_some_and(|s| s.add_modifier.contains(Modifier::UNDERLINED)));
        assert_eq!(lines[0].to_string(), "a b c d e (http://x)");
    }

    #[test]
    fn code_blocks_are_framed_and_quotes_get_bars() {
        let out = text("```rust\nfn a() {}\n\nlet b = 1;\n```\n\n> quoted");
        let rule = "─".repeat(39);
        assert_eq!(
            out,
            [
                &format!("╭─ rust {}", "─".repeat(32)),
                "│ fn a() {}",
                "│ ",
                "│ let b = 1;",
                &format!("╰{rule}"),
                "",
                "▌ quoted"
            ]
        );
    }

    #[test]
    fn a_code_block_still_arriving_gets_no_bottom_rule() {
        let open = "```sh\nls\n";
        assert_eq!(render_partial(open, 20).len(), 2);
        assert_eq!(render(open, 20).len(), 3);
        let closed = "```sh\nls\n```\n";
        assert_eq!(render_partial(closed, 20).len(), 3);
        let indented = "text\n\n    code\n";
        assert_eq!(
            texts(&render_partial(indented, 20))
                .last()
                .map(String::as_str),
            Some("│ code")
        );
    }

    #[test]
    fn tables_are_drawn_as_grids_inside_lists_too() {
        let out = text("| a | b |\n|:-:|--:|\n| 1 | 22 |\n\n- item\n\n  | x |\n  |---|\n  | y |");
        assert_eq!(
            out,
            [
                "┌───┬────┐",
                "│ a │  b │",
                "├───┼────┤",
                "│ 1 │ 22 │",
                "└───┴────┘",
                "",
                "• item",
                "  ┌───┐",
                "  │ x │",
                "  ├───┤",
                "  │ y │",
                "  └───┘",
            ]
        );
    }

    #[test]
    fn a_table_wider_than_the_width_falls_back_to_records() {
        let source = "| name | address |\n|---|---|\n| Ada | 12 Long Street, Springfield |";
        let out = texts(&render(source, 16));
        assert_eq!(out, ["name: Ada", "address: 12 Long Street, Springfield"]);
    }
}
