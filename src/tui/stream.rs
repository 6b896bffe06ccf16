//! The assistant message being streamed. Only newline-complete source lines are rendered and
//! committed to the scrollback, once per frame; the unfinished last line stays in the live
//! area. Rendering restarts at each blank line outside a code fence, and a block that grows
//! past `MAX_BLOCK_LINES` is cut at its last line (a code fence it was in carries over), so
//! the cost of a frame stays bounded however long the message gets.

use ratatui::text::Line;

use super::markdown;

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

    /// The text after the last newline: shown live, not yet committed.
    pub fn tail(&self) -> &str {
        let start = self.source.rfind('\n').map_or(0, |i| i + 1);
        &self.source[start.max(self.block_start)..]
    }

    fn block(&self, end: usize) -> String {
        format!(
            "{}{}",
            self.carried_fence,
            &self.source[self.block_start..end]
        )
    }

    /// The unfinished last line as the live area shows it: rendered as markdown, or as is
    /// inside a code block (where `#` or `-` mean nothing).
    pub fn tail_lines(&self) -> Vec<Line<'static>> {
        let tail = self.tail();
        if tail.is_empty() {
            return Vec::new();
        }
        if open_fence(&self.block(self.source.len())).is_some() {
            return vec![Line::raw(tail.to_string())];
        }
        markdown::render(tail)
    }

    /// Rendered lines that became complete since the last call.
    pub fn commit_complete(&mut self) -> Vec<Line<'static>> {
        let Some(newline) = self.source.rfind('\n') else {
            return Vec::new();
        };
        let end = newline + 1;
        if end <= self.block_start {
            return Vec::new();
        }
        let block = self.block(end);
        let rendered = markdown::render(&block);
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
        self.carried_fence = carried_fence;
        self.emitted = 0;
        self.after_blank = after_blank;
    }

    /// Ends the message: the remaining lines (the unfinished last line included) and the
    /// whole source.
    pub fn finish(&mut self) -> (Vec<Line<'static>>, String) {
        let rendered = markdown::render(&self.block(self.source.len()));
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
        let needs_gap = self.emitted == 0 && self.after_blank && self.any_emitted;
        self.emitted += fresh.len();
        self.any_emitted = true;
        if needs_gap {
            let mut with_gap = Vec::with_capacity(fresh.len() + 1);
            with_gap.push(Line::default());
            with_gap.extend(fresh);
            return with_gap;
        }
        fresh
    }
}

/// The opening line of a fenced code block still open at the end of `block`.
fn open_fence(block: &str) -> Option<&str> {
    let mut open = None;
    for line in block.lines() {
        let trimmed = line.trim_start_matches(' ');
        let is_fence = line.len() - trimmed.len() < 4
            && (trimmed.starts_with("```") || trimmed.starts_with("~~~"));
        if is_fence {
            open = match open {
                None => Some(trimmed),
                Some(_) => None,
            };
        }
    }
    open
}

#[cfg(test)]
mod tests {
    use super::*;

    fn texts(lines: &[Line<'static>]) -> Vec<String> {
        lines.iter().map(|l| l.to_string()).collect()
    }

    #[test]
    fn only_newline_complete_lines_are_committed() {
        let mut stream = StreamCollector::default();
        stream.push("Hello wor");
        assert!(stream.commit_complete().is_empty());
        assert_eq!(stream.tail(), "Hello wor");
        stream.push("ld\nsecond li");
        assert_eq!(texts(&stream.commit_complete()), ["Hello world"]);
        assert_eq!(stream.tail(), "second li");
        stream.push("ne");
        let (rest, source) = stream.finish();
        assert_eq!(texts(&rest), ["second line"]);
        assert_eq!(source, "Hello world\nsecond line");
    }

    #[test]
    fn blocks_after_a_blank_line_are_separated_once() {
        let mut stream = StreamCollector::default();
        let mut all = Vec::new();
        for piece in [
            "# Title\n",
            "\n",
            "- a\n",
            "- b\n",
            "\n",
            "```rust\n",
            "let x = 1;\n",
        ] {
            stream.push(piece);
            all.extend(stream.commit_complete());
        }
        stream.push("\n```\n\nend");
        all.extend(stream.commit_complete());
        all.extend(stream.finish().0);
        assert_eq!(
            texts(&all),
            ["# Title", "", "• a", "• b", "", "let x = 1;", "", "", "end"]
        );
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
            all.extend(stream.commit_complete());
        }
        assert!(stream.carried_fence.starts_with("```rust"));
        assert!(stream.emitted < MAX_BLOCK_LINES);
        stream.push("```\nafter");
        all.extend(stream.commit_complete());
        all.extend(stream.finish().0);
        let text = texts(&all);
        assert_eq!(text.len(), 102, "{text:?}");
        assert_eq!(text[99], "let v99 = 99;");
        assert_eq!(text[101], "after");
    }
}
