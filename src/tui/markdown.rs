//! Markdown to styled terminal lines. The assistant writes markdown; the transcript shows
//! headings, lists, emphasis, links, quotes and highlighted code instead of raw syntax.
//! Output lines are logical (unwrapped): the caller wraps them to the terminal width.

use pulldown_cmark::{CodeBlockKind, Event, HeadingLevel, Options, Parser, Tag, TagEnd};
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};

use super::highlight;

/// Renders `source` to logical lines.
pub fn render(source: &str) -> Vec<Line<'static>> {
    let mut writer = Writer::default();
    let options = Options::ENABLE_STRIKETHROUGH;
    for event in Parser::new_ext(source, options) {
        writer.event(event);
    }
    writer.flush_line();
    writer.lines
}

struct ListFrame {
    next_number: Option<u64>,
}

#[derive(Default)]
struct Writer {
    lines: Vec<Line<'static>>,
    spans: Vec<Span<'static>>,
    styles: Vec<Style>,
    lists: Vec<ListFrame>,
    quote_depth: usize,
    /// The marker of a list item whose first line is not written yet.
    item_marker: Option<String>,
    code: Option<(String, String)>,
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
            Event::SoftBreak | Event::HardBreak => self.flush_line(),
            Event::Rule => {
                self.block_gap();
                let rule = Span::styled("─".repeat(40), Style::default().fg(Color::DarkGray));
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
                let style = heading_style(level);
                self.text(&format!("{} ", "#".repeat(level as usize)), style);
                self.styles.push(style);
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
            Tag::HtmlBlock
            | Tag::FootnoteDefinition(_)
            | Tag::DefinitionList
            | Tag::DefinitionListTitle
            | Tag::DefinitionListDefinition
            | Tag::Table(_)
            | Tag::TableHead
            | Tag::TableRow
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
                    for line in highlight::highlight(&code, &lang) {
                        self.spans.extend(line.spans);
                        self.end_line(true);
                    }
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
            | TagEnd::Table
            | TagEnd::TableHead
            | TagEnd::TableRow
            | TagEnd::TableCell
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

    /// Ends the current line, adding the quote bars and list indentation in front of it. An
    /// empty line is written only when `keep_empty` (a blank line inside a code block).
    fn end_line(&mut self, keep_empty: bool) {
        if self.spans.is_empty() && self.item_marker.is_none() && !keep_empty {
            return;
        }
        let mut prefix = String::new();
        for _ in 0..self.quote_depth {
            prefix.push_str("▌ ");
        }
        if !self.lists.is_empty() {
            prefix.push_str(&"  ".repeat(self.lists.len() - 1));
            match self.item_marker.take() {
                Some(marker) => prefix.push_str(&marker),
                None => prefix.push_str("  "),
            }
        }
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
        render(source).iter().map(|l| l.to_string()).collect()
    }

    #[test]
    fn blocks_are_separated_by_one_blank_line() {
        let out = text("# Title\n\nFirst paragraph\nsecond line.\n\n---\n\nEnd.");
        assert_eq!(
            out,
            [
                "# Title",
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
    fn lists_get_markers_numbers_and_nesting() {
        let out = text("- one\n- two\n  - inner\n\n3. three\n4. four");
        assert_eq!(
            out,
            ["• one", "• two", "  ◦ inner", "", "3. three", "4. four"]
        );
    }

    #[test]
    fn emphasis_code_and_links_are_styled() {
        let lines = render("a *b* **c** `d` [e](http://x)");
        let spans = &lines[0].spans;
        let find = |t: &str| spans.iter().find(|s| s.content == t).map(|s| s.style);
        assert!(find("b").is_some_and(|s| s.add_modifier.contains(Modifier::ITALIC)));
        assert!(find("c").is_some_and(|s| s.add_modifier.contains(Modifier::BOLD)));
        assert_eq!(find("d").and_then(|s| s.fg), Some(Color::Cyan));
        assert!(find("e").is_some_and(|s| s.add_modifier.contains(Modifier::UNDERLINED)));
        assert_eq!(lines[0].to_string(), "a b c d e (http://x)");
    }

    #[test]
    fn code_blocks_keep_their_lines_and_quotes_get_bars() {
        let out = text("```rust\nfn a() {}\n\nlet b = 1;\n```\n\n> quoted");
        assert_eq!(out, ["fn a() {}", "", "let b = 1;", "", "▌ quoted"]);
    }
}
