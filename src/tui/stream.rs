//! The assistant message being streamed. Only newline-complete source lines are rendered and
//! committed to the scrollback, once per frame; the unfinished last line stays in the live
//! area. Rendering restarts at each blank line outside a code fence, and a block that grows
//! past `MAX_BLOCK_LINES` is cut at its last line (a code fence it was in carries over), so
//! the cost of a frame stays bounded however long the message gets.
//! A table is laid out from all its rows, so its lines are held back from its header row until
//! the blank line that ends it; meanwhile the live area shows one line counting its rows (a
//! live area growing row by row would be repainted whole at every row).

use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};

use super::markdown;
use super::reply::{self, Start};

/// Rendered lines after which a block is cut even without a blank line.
const MAX_BLOCK_LINES: usize = 40;

#[derive(Debug, Default)]
pub struct StreamCollector {
    source: String,
    /// Start of the block being rendered: everything before it is committed for good.
    block_start: usize,
    /// The opening line of a code fence the block was cut inside, rendered in front of it.
    carried_fence: String,
    /// Rendered lines of the current block already committed.
    emitted: usize,
    /// Whether any line was committed.
    any_emitted: bool,
    /// The current block follows a blank line (its first line gets a blank line before it).
    after_blank: bool,
    /// The width the current block is laid out for, kept until it ends: a resize must not
    /// change the number of lines of a block that is rendered again every frame.
    block_width: Option<usize>,
    /// Where the committed text ended at the last commit: a frame without a new complete
    /// line renders nothing.
    committed_to: usize,
}

impl StreamCollector {
    pub fn push(&mut self, delta: &str) {
        self.source.push_str(delta);
    }

    pub fn is_empty(&self) -> bool {
        self.source.is_empty()
    }

    /// Whether some of this message is already in the scrollback.
    pub fn has_committed(&self) -> bool {
        self.any_emitted
    }

    fn block(&self, end: usize) -> String {
        format!(
            "{}{}",
            self.carried_fence,
            &self.source[self.block_start..end]
        )
    }

    /// The lines held back: where they start in the source and what they are.
    fn hold(&self) -> Option<(usize, Held)> {
        let end = self.complete_end();
        if end <= self.block_start {
            return None;
        }
        let (offset, held) = held_from(&self.block(end))?;
        let start = self.block_start + offset.saturating_sub(self.carried_fence.len());
        Some((start, held))
    }

    /// The end of the last complete line.
    fn complete_end(&self) -> usize {
        self.source.rfind('\n').map_or(0, |i| i + 1)
    }

    /// Where the text not committed yet begins: after the last complete line, or at the
    /// first line held back.
    fn commit_end(&self) -> usize {
        self.commit_end_with(self.hold())
    }

    fn commit_end_with(&self, hold: Option<(usize, Held)>) -> usize {
        match hold {
            Some((start, _)) => start,
            None => self.complete_end().max(self.block_start),
        }
    }

    /// The text not committed yet: held lines and the unfinished last line.
    #[cfg(test)]
    fn pending(&self) -> &str {
        &self.source[self.commit_end()..]
    }

    fn start(&self) -> Start {
        match self.any_emitted {
            true => Start::Continuation,
            false => Start::Reply,
        }
    }

    /// What the live area shows of the text not committed yet, for `width` columns: a line
    /// counting the rows of a table held back, the line as is inside a code block (where `#`
    /// or `-` mean nothing), or else the text rendered as markdown.
    pub fn tail_lines(&self, width: u16) -> Vec<Line<'static>> {
        let hold = self.hold();
        let pending = &self.source[self.commit_end_with(hold)..];
        if pending.is_empty() {
            return Vec::new();
        }
        if let Some((start, Held::Table)) = hold {
            // Header and delimiter rows are not counted.
            let rows = self.source[start..self.complete_end()]
                .lines()
                .count()
                .saturating_sub(2);
            let noun = if rows == 1 { "row" } else { "rows" };
            let style = Style::default()
                .fg(Color::DarkGray)
                .add_modifier(Modifier::ITALIC);
            let note = Line::styled(format!("⋯ a table, {rows} {noun} so far"), style);
            return self.with_gap(reply::frame(vec![note], self.start()));
        }
        if open_fence(&self.block(self.source.len())).is_some() {
            let line = Line::from(vec![
                Span::styled("│ ", Style::default().fg(Color::DarkGray)),
                Span::styled(pending.to_string(), Style::default().fg(Color::Gray)),
            ]);
            return reply::frame(vec![line], self.start());
        }
        let width = self.block_width.unwrap_or(reply::body_width(width));
        self.with_gap(reply::frame(
            markdown::render_partial(pending, width),
            self.start(),
        ))
    }

    /// Live lines with the blank line in front that they will get when committed, if any.
    fn with_gap(&self, mut lines: Vec<Line<'static>>) -> Vec<Line<'static>> {
        if self.any_emitted && self.emitted == 0 && self.after_blank {
            lines.insert(0, Line::default());
        }
        lines
    }

    /// Rendered lines that became complete since the last call, for `width` columns.
    pub fn commit_complete(&mut self, width: u16) -> Vec<Line<'static>> {
        let end = self.commit_end();
        if end <= self.block_start || end == self.committed_to {
            return Vec::new();
        }
        self.committed_to = end;
        let block = self.block(end);
        let width = *self.block_width.get_or_insert(reply::body_width(width));
        let rendered = markdown::render_partial(&block, width);
        let fence = open_fence(&block);
        let lines = self.new_lines(rendered);
        if block.ends_with("\n\n") && fence.is_none() {
            self.start_block(end, String::new(), true);
        } else if self.emitted >= MAX_BLOCK_LINES {
            let carried = fence.map(|line| format!("{line}\n")).unwrap_or_default();
            self.start_block(end, carried, false);
        }
        lines
    }

    fn start_block(&mut self, start: usize, carried_fence: String, after_blank: bool) {
        self.block_start = start;
        // A carried fence renders the code block's top rule again: it is already drawn.
        self.emitted = usize::from(!carried_fence.is_empty());
        self.carried_fence = carried_fence;
        self.after_blank = after_blank;
        self.block_width = None;
    }

    /// Ends the message: the remaining lines (the unfinished last line included) and the
    /// whole source.
    pub fn finish(&mut self, width: u16) -> (Vec<Line<'static>>, String) {
        let width = self.block_width.unwrap_or(reply::body_width(width));
        let rendered = markdown::render(&self.block(self.source.len()), width);
        let lines = self.new_lines(rendered);
        let source = std::mem::take(&mut self.source);
        *self = Self::default();
        (lines, source)
    }

    fn new_lines(&mut self, rendered: Vec<Line<'static>>) -> Vec<Line<'static>> {
        let fresh: Vec<Line<'static>> = rendered.into_iter().skip(self.emitted).collect();
        if fresh.is_empty() {
            return fresh;
        }
        let start = self.start();
        let needs_gap = self.emitted == 0 && self.after_blank && self.any_emitted;
        self.emitted += fresh.len();
        self.any_emitted = true;
        let fresh = reply::frame(fresh, start);
        if needs_gap {
            let mut with_gap = Vec::with_capacity(fresh.len() + 1);
            with_gap.push(Line::default());
            with_gap.extend(fresh);
            return with_gap;
        }
        fresh
    }
}

/// Whether `line` opens or closes a code fence.
fn is_fence(line: &str) -> bool {
    let trimmed = line.trim_start_matches(' ');
    line.len() - trimmed.len() < 4 && (trimmed.starts_with("```") || trimmed.starts_with("~~~"))
}

/// The opening line of a fenced code block still open at the end of `block`.
fn open_fence(block: &str) -> Option<&str> {
    let mut open = None;
    for line in block.lines() {
        if is_fence(line) {
            open = match open {
                None => Some(line.trim_start_matches(' ')),
                Some(_) => None,
            };
        }
    }
    open
}

/// What lines are held back.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Held {
    /// A table: its header, delimiter and body rows so far.
    Table,
    /// A last line that could be the header of a table whose delimiter row is yet to come.
    MaybeHeader,
}

/// Offset in `block` (complete lines) of the first line to hold back, and what it starts: a
/// table from its header row on (it ends at a blank line or a code fence), or a last line
/// that could be a table's header.
fn held_from(block: &str) -> Option<(usize, Held)> {
    let mut in_fence = false;
    let mut table = None;
    let mut maybe_header = None;
    let mut offset = 0;
    for line in block.split_inclusive('\n') {
        let start = offset;
        offset += line.len();
        let text = line.trim_end_matches(['\n', '\r']);
        if is_fence(text) {
            in_fence = !in_fence;
            (table, maybe_header) = (None, None);
            continue;
        }
        if in_fence || (table.is_some() && !text.trim().is_empty()) {
            continue;
        }
        // Quote markers and indentation in front of a row do not matter here.
        let body = text.trim_start_matches([' ', '\t', '>']);
        if maybe_header.is_some() && is_delimiter_row(body) {
            table = maybe_header.take();
            continue;
        }
        table = None;
        maybe_header = body.contains('|').then_some(start);
    }
    match (table, maybe_header) {
        (Some(start), _) => Some((start, Held::Table)),
        (None, Some(start)) => Some((start, Held::MaybeHeader)),
        (None, None) => None,
    }
}

/// `|---|:--:|` and the like: the row under a table's header.
fn is_delimiter_row(text: &str) -> bool {
    let text = text.trim();
    text.contains('-')
        && text
            .chars()
            .all(|c| matches!(c, '|' | '-' | ':' | ' ' | '\t'))
}

#[cfg(test)]
mod tests {
    use super::*;

    const WIDTH: u16 = 42;

    fn texts(lines: &[Line<'static>]) -> Vec<String> {
        lines.iter().map(|l| l.to_string()).collect()
    }

    /// Streams `pieces`, committing after each, then finishes; returns every line committed.
    fn stream_all(pieces: &[&str]) -> Vec<String> {
        let mut stream = StreamCollector::default();
        let mut all = Vec::new();
        for piece in pieces {
            stream.push(piece);
            all.extend(stream.commit_complete(WIDTH));
        }
        all.extend(stream.finish(WIDTH).0);
        texts(&all)
    }

    #[test]
    fn only_newline_complete_lines_are_committed() {
        let mut stream = StreamCollector::default();
        stream.push("Hello wor");
        assert!(stream.commit_complete(WIDTH).is_empty());
        assert_eq!(stream.pending(), "Hello wor");
        assert_eq!(texts(&stream.tail_lines(WIDTH)), ["● Hello wor"]);
        stream.push("ld\nsecond li");
        assert_eq!(texts(&stream.commit_complete(WIDTH)), ["● Hello world"]);
        assert_eq!(stream.pending(), "second li");
        assert_eq!(texts(&stream.tail_lines(WIDTH)), ["  second li"]);
        stream.push("ne");
        let (rest, source) = stream.finish(WIDTH);
        assert_eq!(texts(&rest), ["  second line"]);
        assert_eq!(source, "Hello world\nsecond line");
    }

    #[test]
    fn blocks_after_a_blank_line_are_separated_once() {
        let all = stream_all(&[
            "# Title\n",
            "\n",
            "- a\n",
            "- b\n",
            "\n",
            "```rust\n",
            "let x = 1;\n",
            "\n```\n\nend",
        ]);
        let top = format!("  ╭─ rust {}", "─".repeat(32));
        let bottom = format!("  ╰{}", "─".repeat(39));
        assert_eq!(
            all,
            [
                "● Title",
                "",
                "  • a",
                "  • b",
                "",
                &top,
                "  │ let x = 1;",
                "  │ ",
                &bottom,
                "",
                "  end"
            ]
        );
    }

    #[test]
    fn a_streamed_message_matches_the_finished_cell() {
        let source = "Intro:\n| a | b |\n|---|---|\n| 1 | 2 |\n\n```sh\nls\n```\ndone";
        let pieces: Vec<String> = source.chars().map(String::from).collect();
        let pieces: Vec<&str> = pieces.iter().map(String::as_str).collect();
        let whole = texts(&reply::lines(source, WIDTH));
        assert_eq!(stream_all(&pieces), whole);
        assert!(whole.contains(&"  │ 1 │ 2 │".to_string()), "{whole:#?}");
    }

    #[test]
    fn a_table_is_held_back_until_it_ends_and_counted_live_meanwhile() {
        let mut stream = StreamCollector::default();
        stream.push("Before.\n\n| a | b |\n");
        assert_eq!(texts(&stream.commit_complete(WIDTH)), ["● Before."]);
        // A possible header shows as it is.
        assert_eq!(texts(&stream.tail_lines(WIDTH)), ["", "  | a | b |"]);
        stream.push("|---|---|\n| 1 | 2 |\n| 3");
        assert!(stream.commit_complete(WIDTH).is_empty());
        assert_eq!(stream.pending(), "| a | b |\n|---|---|\n| 1 | 2 |\n| 3");
        assert_eq!(
            texts(&stream.tail_lines(WIDTH)),
            ["", "  ⋯ a table, 1 row so far"]
        );
        stream.push(" | 4 |\n\nAfter");
        let table = texts(&stream.commit_complete(WIDTH));
        assert_eq!(table.len(), 7, "{table:#?}");
        assert_eq!(table[0], "");
        assert_eq!(table[5], "  │ 3 │ 4 │");
        assert_eq!(stream.pending(), "After");
    }

    #[test]
    fn held_lines_are_tables_and_possible_table_headers_only() {
        let maybe = |at| Some((at, Held::MaybeHeader));
        let table = |at| Some((at, Held::Table));
        assert_eq!(held_from("text\n| a | b |\n"), maybe(5));
        assert_eq!(held_from("| a | b |\nplain text\n"), None);
        assert_eq!(held_from("x\n| a |\n|---|\n| 1 |\n"), table(2));
        assert_eq!(held_from("| a |\n|---|\n| 1 |\n\nafter\n"), None);
        assert_eq!(held_from("```\n| a |\n"), None);
        assert_eq!(held_from("> | a |\n> |---|\n"), table(0));
    }

    #[test]
    fn fences_are_tracked() {
        assert_eq!(open_fence("```rust\nlet a;\n\n"), Some("```rust"));
        assert_eq!(open_fence("```\na\n```\n\n"), None);
    }

    #[test]
    fn long_blocks_are_cut_and_keep_their_code_fence() {
        let mut stream = StreamCollector::default();
        let mut all = Vec::new();
        stream.push("```rust\n");
        for n in 0..100 {
            stream.push(&format!("let v{n} = {n};\n"));
            all.extend(stream.commit_complete(WIDTH));
        }
        assert!(stream.carried_fence.starts_with("```rust"));
        assert!(stream.emitted < MAX_BLOCK_LINES);
        stream.push("```\nafter");
        all.extend(stream.commit_complete(WIDTH));
        all.extend(stream.finish(WIDTH).0);
        let text = texts(&all);
        // The top rule, 100 lines, the bottom rule, a blank line and the line after.
        assert_eq!(text.len(), 104, "{text:?}");
        assert_eq!(text.iter().filter(|l| l.contains('╭')).count(), 1);
        assert_eq!(text[100], "  │ let v99 = 99;");
        assert!(text[101].starts_with("  ╰"));
        assert_eq!(text[103], "  after");
    }
}
