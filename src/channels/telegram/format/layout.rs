//! Markdown events to Telegram HTML atoms. Telegram has no lists, headings, tables or rules,
//! so they become text (bullets, a bold line, aligned rows in `<pre>`, a line of dashes), and
//! nothing is nested where Telegram would refuse or drop it (code in a link, quote in quote).

use pulldown_cmark::{Alignment, CodeBlockKind, Event, LinkType, Options, Parser, Tag, TagEnd};

use super::{Atom, Rendered, TagDef, escape_attr};

const RULE: &str = "———";

/// Longest language name kept on a code block; longer ones are not languages.
const MAX_LANGUAGE: usize = 32;

const LINK_SCHEMES: [&str; 4] = ["http://", "https://", "tg://", "mailto:"];

/// Lays `markdown` out as atoms, with at most `tag_budget` UTF-16 units of tags open at once.
pub(super) fn layout(markdown: &str, tag_budget: usize) -> Rendered {
    let options =
        Options::ENABLE_STRIKETHROUGH | Options::ENABLE_TABLES | Options::ENABLE_TASKLISTS;
    let mut writer = Writer {
        budget: tag_budget,
        ..Writer::default()
    };
    for event in Parser::new_ext(markdown, options) {
        writer.event(event);
    }
    writer.out
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Bold,
    Italic,
    Strike,
    Code,
    Pre,
    Link,
    Quote,
}

#[derive(Default)]
struct Writer {
    out: Rendered,
    /// The tags the markdown opened, innermost last: `None` where one was left out.
    open: Vec<Option<(Kind, usize)>>,
    open_cost: usize,
    budget: usize,
    has_text: bool,
    trailing_newlines: usize,
    /// Just after a list item's bullet: its first block starts on the bullet's line.
    fresh_item: bool,
    /// The open lists, innermost last, with the next number of ordered ones.
    lists: Vec<Option<u64>>,
    /// The text of the code block being read.
    code: Option<String>,
    table: Option<Table>,
}

impl Writer {
    fn event(&mut self, event: Event<'_>) {
        if let Some(table) = &mut self.table {
            match event {
                Event::End(TagEnd::Table) => self.end_table(),
                event => table.event(event),
            }
            return;
        }
        match event {
            Event::Start(tag) => self.start(tag),
            Event::End(tag) => self.end(tag),
            Event::Text(text) => match &mut self.code {
                Some(code) => code.push_str(&text),
                None => self.text(&text),
            },
            Event::Code(text) => {
                self.open(Kind::Code, "<code>".into(), "</code>");
                self.text(&text);
                self.close();
            }
            Event::InlineMath(text)
            | Event::DisplayMath(text)
            | Event::Html(text)
            | Event::InlineHtml(text) => self.text(&text),
            Event::FootnoteReference(label) => self.text(&format!("[{label}]")),
            Event::SoftBreak | Event::HardBreak => self.text("\n"),
            Event::Rule => {
                self.block_start();
                self.text(RULE);
            }
            Event::TaskListMarker(done) => self.text(if done { "☑ " } else { "☐ " }),
        }
    }

    fn start(&mut self, tag: Tag<'_>) {
        match tag {
            Tag::Paragraph | Tag::HtmlBlock => self.block_start(),
            Tag::Heading { .. } => {
                self.block_start();
                self.open(Kind::Bold, "<b>".into(), "</b>");
            }
            Tag::BlockQuote(_) => {
                self.block_start();
                self.open(Kind::Quote, "<blockquote>".into(), "</blockquote>");
            }
            Tag::CodeBlock(kind) => {
                self.block_start();
                let (open, close) = match language(&kind) {
                    Some(lang) => (
                        format!("<pre><code class=\"language-{lang}\">"),
                        "</code></pre>",
                    ),
                    None => ("<pre>".to_string(), "</pre>"),
                };
                self.open(Kind::Pre, open, close);
                self.code = Some(String::new());
            }
            Tag::List(first) => {
                if self.lists.is_empty() {
                    self.block_start();
                } else {
                    self.fresh_item = false;
                    self.newlines(1);
                }
                self.lists.push(first);
            }
            Tag::Item => self.item(),
            Tag::Table(alignments) => self.table = Some(Table::new(alignments)),
            Tag::Emphasis => self.open(Kind::Italic, "<i>".into(), "</i>"),
            Tag::Strong => self.open(Kind::Bold, "<b>".into(), "</b>"),
            Tag::Strikethrough => self.open(Kind::Strike, "<s>".into(), "</s>"),
            Tag::Link {
                link_type,
                dest_url,
                ..
            }
            | Tag::Image {
                link_type,
                dest_url,
                ..
            } => {
                let href = match link_type {
                    LinkType::Email => format!("mailto:{dest_url}"),
                    _ => dest_url.to_string(),
                };
                if linkable(&href) {
                    let open = format!("<a href=\"{}\">", escape_attr(&href));
                    self.open(Kind::Link, open, "</a>");
                } else {
                    self.open.push(None);
                }
            }
            // Not enabled in the parser's options; their text still comes through.
            Tag::FootnoteDefinition(_)
            | Tag::DefinitionList
            | Tag::DefinitionListTitle
            | Tag::DefinitionListDefinition
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
            TagEnd::Heading(_)
            | TagEnd::BlockQuote(_)
            | TagEnd::Emphasis
            | TagEnd::Strong
            | TagEnd::Strikethrough
            | TagEnd::Link
            | TagEnd::Image => self.close(),
            TagEnd::CodeBlock => {
                let code = self.code.take().unwrap_or_default();
                self.text(code.strip_suffix('\n').unwrap_or(&code));
                self.close();
            }
            TagEnd::List(_) => {
                self.lists.pop();
            }
            TagEnd::Item => self.fresh_item = false,
            _ => {}
        }
    }

    fn item(&mut self) {
        self.fresh_item = false;
        self.newlines(1);
        let depth = self.lists.len().saturating_sub(1);
        let marker = match self.lists.last_mut() {
            Some(Some(number)) => {
                *number += 1;
                format!("{}. ", *number - 1)
            }
            _ => "• ".to_string(),
        };
        self.text(&format!("{}{marker}", "  ".repeat(depth)));
        self.fresh_item = true;
    }

    fn end_table(&mut self) {
        let Some(table) = self.table.take() else {
            return;
        };
        self.block_start();
        self.open(Kind::Pre, "<pre>".into(), "</pre>");
        self.text(&table.lines());
        self.close();
    }

    /// Separates a block from what came before by a blank line, except the first block of a
    /// list item, which goes on the bullet's line.
    fn block_start(&mut self) {
        if !std::mem::take(&mut self.fresh_item) {
            self.newlines(2);
        }
    }

    fn newlines(&mut self, count: usize) {
        while self.has_text && self.trailing_newlines < count {
            self.text("\n");
        }
    }

    fn text(&mut self, text: &str) {
        for c in text.chars() {
            self.out.atoms.push(Atom::Char(c));
            self.has_text = true;
            self.fresh_item = false;
            self.trailing_newlines = if c == '\n' {
                self.trailing_newlines + 1
            } else {
                0
            };
        }
    }

    /// Opens a tag, unless Telegram would not take it here or the tags open would leave a
    /// message too little room; its text then goes out unformatted.
    fn open(&mut self, kind: Kind, open: String, close: &'static str) {
        let tag = TagDef {
            open,
            close,
            preformatted: kind == Kind::Pre,
        };
        let cost = tag.cost();
        let active = |k: Kind| self.open.iter().flatten().any(|(o, _)| *o == k);
        let refused = active(kind) || (kind == Kind::Code && active(Kind::Link));
        if refused || self.open_cost + cost > self.budget {
            self.open.push(None);
            return;
        }
        self.out.tags.push(tag);
        self.out.atoms.push(Atom::Open(self.out.tags.len() - 1));
        self.open_cost += cost;
        self.open.push(Some((kind, cost)));
    }

    fn close(&mut self) {
        if let Some(Some((_, cost))) = self.open.pop() {
            self.open_cost -= cost;
            self.out.atoms.push(Atom::Close);
        }
    }
}

/// The language of a fenced code block, if it names one Telegram can take as a class.
fn language(kind: &CodeBlockKind<'_>) -> Option<String> {
    let CodeBlockKind::Fenced(info) = kind else {
        return None;
    };
    let word = info.split_whitespace().next()?;
    let fits = word.len() <= MAX_LANGUAGE
        && word
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "+-_.#".contains(c));
    fits.then(|| word.to_string())
}

fn linkable(href: &str) -> bool {
    let lower = href.to_ascii_lowercase();
    LINK_SCHEMES.iter().any(|scheme| lower.starts_with(scheme))
}

/// A table's cells as text; laid out as aligned rows once it is complete.
struct Table {
    alignments: Vec<Alignment>,
    rows: Vec<Vec<String>>,
    head_rows: usize,
}

impl Table {
    fn new(alignments: Vec<Alignment>) -> Self {
        Self {
            alignments,
            rows: Vec::new(),
            head_rows: 0,
        }
    }

    fn event(&mut self, event: Event<'_>) {
        match event {
            Event::Start(Tag::TableHead | Tag::TableRow) => self.rows.push(Vec::new()),
            Event::End(TagEnd::TableHead) => self.head_rows = self.rows.len(),
            Event::Start(Tag::TableCell) => {
                if let Some(row) = self.rows.last_mut() {
                    row.push(String::new());
                }
            }
            Event::Text(text)
            | Event::Code(text)
            | Event::InlineMath(text)
            | Event::DisplayMath(text)
            | Event::Html(text)
            | Event::InlineHtml(text) => self.push(&text),
            Event::SoftBreak | Event::HardBreak => self.push(" "),
            _ => {}
        }
    }

    fn push(&mut self, text: &str) {
        if let Some(cell) = self.rows.last_mut().and_then(|row| row.last_mut()) {
            cell.push_str(text);
        }
    }

    fn lines(&self) -> String {
        let columns = self.rows.iter().map(Vec::len).max().unwrap_or(0);
        let widths: Vec<usize> = (0..columns)
            .map(|c| {
                let cells = self.rows.iter().filter_map(|row| row.get(c));
                cells.map(|cell| cell.chars().count()).max().unwrap_or(0)
            })
            .collect();
        let mut lines = Vec::new();
        for (i, row) in self.rows.iter().enumerate() {
            if i == self.head_rows && i > 0 {
                let rule: Vec<String> = widths.iter().map(|w| "-".repeat(*w)).collect();
                lines.push(rule.join("-+-"));
            }
            let cells: Vec<String> = widths
                .iter()
                .enumerate()
                .map(|(c, width)| {
                    let cell = row.get(c).map_or("", String::as_str);
                    let align = self.alignments.get(c).copied().unwrap_or(Alignment::None);
                    pad(cell, *width, align)
                })
                .collect();
            lines.push(cells.join(" | ").trim_end().to_string());
        }
        lines.join("\n")
    }
}

fn pad(cell: &str, width: usize, align: Alignment) -> String {
    let gap = width.saturating_sub(cell.chars().count());
    let (left, right) = match align {
        Alignment::Right => (gap, 0),
        Alignment::Center => (gap / 2, gap - gap / 2),
        Alignment::None | Alignment::Left => (0, gap),
    };
    format!("{}{cell}{}", " ".repeat(left), " ".repeat(right))
}
