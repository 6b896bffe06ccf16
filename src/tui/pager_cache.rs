//! Wrapped transcript lines for the pager, cached per width. Each cell is rendered and
//! wrapped once; a frame then only copies the visible rows, so a 10,000-cell transcript
//! scrolls as fast as a short one. Expanding a cell re-wraps that cell alone.

use std::collections::HashSet;

use ratatui::text::Line;

use super::cells::{Cell, Detail};
use super::wrap::wrap_lines;

#[derive(Debug, Default)]
pub struct WrapCache {
    width: u16,
    /// Per cell: its wrapped lines, a blank separator first for every cell but the first.
    lines: Vec<Vec<Line<'static>>>,
    /// `starts[i]`: index of cell i's first line; one more entry than cells.
    starts: Vec<usize>,
}

impl WrapCache {
    /// Brings the cache up to date with `cells` at `width`.
    pub fn ensure(&mut self, cells: &[Cell], expanded: &HashSet<usize>, width: u16) {
        if width != self.width || cells.len() < self.lines.len() {
            self.width = width;
            self.lines.clear();
            self.starts.clear();
        }
        if self.starts.is_empty() {
            self.starts.push(0);
        }
        for index in self.lines.len()..cells.len() {
            let wrapped = self.wrap_cell(cells, expanded, index);
            let end = self.total() + wrapped.len();
            self.lines.push(wrapped);
            self.starts.push(end);
        }
    }

    /// Re-wraps one cell (after it was expanded or collapsed).
    pub fn refresh(&mut self, cells: &[Cell], expanded: &HashSet<usize>, index: usize) {
        if index >= self.lines.len() {
            return;
        }
        let wrapped = self.wrap_cell(cells, expanded, index);
        if let Some(slot) = self.lines.get_mut(index) {
            *slot = wrapped;
        }
        for i in index..self.lines.len() {
            let len = self.lines.get(i).map_or(0, Vec::len);
            let start = self.starts.get(i).copied().unwrap_or_default();
            if let Some(next) = self.starts.get_mut(i + 1) {
                *next = start + len;
            }
        }
    }

    fn wrap_cell(
        &self,
        cells: &[Cell],
        expanded: &HashSet<usize>,
        index: usize,
    ) -> Vec<Line<'static>> {
        let Some(cell) = cells.get(index) else {
            return Vec::new();
        };
        let detail = if expanded.contains(&index) {
            Detail::Expanded
        } else {
            Detail::Collapsed
        };
        let mut wrapped = Vec::new();
        if index > 0 {
            wrapped.push(Line::default());
        }
        wrapped.extend(wrap_lines(&cell.lines(detail, self.width), self.width));
        wrapped
    }

    /// Number of wrapped lines in the whole transcript.
    pub fn total(&self) -> usize {
        self.starts.last().copied().unwrap_or_default()
    }

    pub fn cell_count(&self) -> usize {
        self.lines.len()
    }

    /// The cell that line `line` belongs to.
    pub fn cell_at(&self, line: usize) -> usize {
        self.starts
            .partition_point(|&start| start <= line)
            .saturating_sub(1)
            .min(self.lines.len().saturating_sub(1))
    }

    /// First line of cell `index` (its separator line excluded).
    pub fn cell_start(&self, index: usize) -> usize {
        let start = self.starts.get(index).copied().unwrap_or_default();
        start + usize::from(index > 0)
    }

    /// The line at `index`, with the cell it belongs to.
    pub fn line(&self, cell: usize, index: usize) -> Option<&Line<'static>> {
        let start = self.starts.get(cell)?;
        self.lines.get(cell)?.get(index.checked_sub(*start)?)
    }

    /// Lines `from..` in order, each with its index, wrapping around to the start.
    pub fn find(
        &self,
        from: usize,
        forward: bool,
        mut matches: impl FnMut(&Line<'static>) -> bool,
    ) -> Option<usize> {
        let total = self.total();
        if total == 0 {
            return None;
        }
        for step in 0..total {
            let index = if forward {
                (from + step) % total
            } else {
                (from + total - step % total) % total
            };
            let cell = self.cell_at(index);
            if self.line(cell, index).is_some_and(&mut matches) {
                return Some(index);
            }
        }
        None
    }

    /// How many lines match, and how many of them come before `line` (its position among
    /// them, counting from 0).
    pub fn rank(
        &self,
        line: usize,
        mut matches: impl FnMut(&Line<'static>) -> bool,
    ) -> (usize, usize) {
        let (mut total, mut before) = (0, 0);
        for index in 0..self.total() {
            let cell = self.cell_at(index);
            if self.line(cell, index).is_some_and(&mut matches) {
                total += 1;
                if index < line {
                    before += 1;
                }
            }
        }
        (before, total)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::UserMessageKind;

    fn user(text: &str) -> Cell {
        Cell::User {
            text: text.into(),
            kind: UserMessageKind::Prompt,
            folded: None,
        }
    }

    #[test]
    fn lines_map_back_to_their_cells() {
        let cells = vec![user("one"), user("two\nthree"), user("four")];
        let mut cache = WrapCache::default();
        cache.ensure(&cells, &HashSet::new(), 40);
        // one | blank two three | blank four
        assert_eq!(cache.total(), 6);
        assert_eq!(cache.cell_at(0), 0);
        assert_eq!(cache.cell_at(1), 1);
        assert_eq!(cache.cell_at(3), 1);
        assert_eq!(cache.cell_at(5), 2);
        assert_eq!(cache.cell_start(2), 5);
        let line = cache.line(1, 3).map(|l| l.to_string());
        assert_eq!(line.as_deref(), Some("  three"));
    }

    #[test]
    fn search_wraps_around_in_both_directions() {
        let cells = vec![user("apple"), user("pear"), user("apple pie")];
        let mut cache = WrapCache::default();
        cache.ensure(&cells, &HashSet::new(), 40);
        let has_apple = |l: &Line<'static>| l.to_string().contains("apple");
        assert_eq!(cache.find(1, true, has_apple), Some(4));
        assert_eq!(cache.find(5, true, has_apple), Some(0));
        assert_eq!(cache.find(3, false, has_apple), Some(0));
    }
}
