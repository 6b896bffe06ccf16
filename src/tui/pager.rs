//! The transcript pager (Ctrl+T): the whole conversation on the alternate screen, scrolled
//! with keys or the mouse wheel, tool outputs expandable in place, searchable with `/`.
//! This file holds its state and keys; `pager_view` draws it.

use std::collections::HashSet;

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers, MouseEvent, MouseEventKind};

use super::cells::Cell;
use super::pager_cache::WrapCache;

const WHEEL_LINES: usize = 3;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PagerOutcome {
    Close,
    Handled,
}

#[derive(Debug, Default)]
pub struct Search {
    /// The query being typed after `/`.
    pub editing: Option<String>,
    pub query: String,
    /// The line of the match last jumped to.
    pub current: Option<usize>,
    pub not_found: bool,
    /// Which match that is (from 1) and how many there are.
    pub position: Option<(usize, usize)>,
}

#[derive(Debug)]
pub struct Pager {
    pub(super) top: usize,
    /// Stay at the end as the transcript grows (until the user scrolls up).
    pub(super) follow: bool,
    pub(super) selected: Option<usize>,
    pub(super) expanded: HashSet<usize>,
    pub(super) search: Search,
    /// Content rows at the last frame, for paging.
    pub(super) height: usize,
    pub(super) cache: WrapCache,
}

impl Default for Pager {
    fn default() -> Self {
        Self::new()
    }
}

impl Pager {
    pub fn new() -> Self {
        Self {
            top: 0,
            follow: true,
            selected: None,
            expanded: HashSet::new(),
            search: Search::default(),
            height: 1,
            cache: WrapCache::default(),
        }
    }

    fn max_top(&self) -> usize {
        self.cache.total().saturating_sub(self.height)
    }

    fn scroll_to(&mut self, top: usize) {
        self.top = top.min(self.max_top());
        self.follow = self.top == self.max_top();
        if let Some(selected) = self.selected
            && !self.is_visible(selected)
        {
            self.selected = None;
        }
    }

    fn scroll_by(&mut self, delta: isize) {
        let top = self.top.saturating_add_signed(delta);
        self.scroll_to(top);
    }

    fn is_visible(&self, cell: usize) -> bool {
        let start = self.cache.cell_start(cell);
        let end = self.cache.cell_start(cell + 1);
        start < self.top + self.height && end > self.top
    }

    pub fn handle_mouse(&mut self, mouse: MouseEvent) {
        match mouse.kind {
            MouseEventKind::ScrollUp => self.scroll_by(-(WHEEL_LINES as isize)),
            MouseEventKind::ScrollDown => self.scroll_by(WHEEL_LINES as isize),
            _ => {}
        }
    }

    pub fn handle_key(&mut self, key: KeyEvent, cells: &[Cell]) -> PagerOutcome {
        if let Some(query) = &mut self.search.editing {
            match key.code {
                KeyCode::Esc => self.search.editing = None,
                KeyCode::Enter => {
                    self.search.query = std::mem::take(query);
                    self.search.editing = None;
                    self.jump(true, self.top);
                }
                KeyCode::Backspace => {
                    query.pop();
                }
                KeyCode::Char(c) => query.push(c),
                _ => {}
            }
            return PagerOutcome::Handled;
        }
        let page = self.height.saturating_sub(2).max(1) as isize;
        let ctrl = key.modifiers.contains(KeyModifiers::CONTROL);
        match key.code {
            KeyCode::Esc | KeyCode::Char('q') => return PagerOutcome::Close,
            KeyCode::Char('t' | 'c') if ctrl => return PagerOutcome::Close,
            KeyCode::Up | KeyCode::Char('k') => self.scroll_by(-1),
            KeyCode::Down | KeyCode::Char('j') => self.scroll_by(1),
            KeyCode::PageUp | KeyCode::Char('b') => self.scroll_by(-page),
            KeyCode::PageDown | KeyCode::Char('f') => self.scroll_by(page),
            KeyCode::Home | KeyCode::Char('g') => self.scroll_to(0),
            KeyCode::End | KeyCode::Char('G') => self.scroll_to(usize::MAX),
            KeyCode::Tab => self.select_next(cells, true),
            KeyCode::BackTab => self.select_next(cells, false),
            KeyCode::Enter | KeyCode::Char(' ') => self.toggle(cells),
            KeyCode::Char('/') => self.search.editing = Some(String::new()),
            KeyCode::Char('n') => {
                let from = self.search.current.map_or(self.top, |line| line + 1);
                self.jump(true, from);
            }
            KeyCode::Char('N') => {
                let from = self.search.current.unwrap_or(self.top);
                self.jump(false, from.wrapping_sub(1));
            }
            _ => {}
        }
        PagerOutcome::Handled
    }

    /// Selects the next (or previous) expandable cell and scrolls it into view.
    fn select_next(&mut self, cells: &[Cell], forward: bool) {
        let count = cells.len().min(self.cache.cell_count());
        if count == 0 {
            return;
        }
        let from = self.selected.unwrap_or_else(|| {
            self.cache
                .cell_at(self.top)
                .saturating_sub(usize::from(forward))
        });
        let candidates: Box<dyn Iterator<Item = usize>> = if forward {
            Box::new((from + 1..count).chain(0..=from.min(count - 1)))
        } else {
            Box::new((0..from).rev().chain((from..count).rev()))
        };
        let found = candidates
            .take(count)
            .find(|&i| cells.get(i).is_some_and(Cell::is_expandable));
        if let Some(index) = found {
            self.selected = Some(index);
            if !self.is_visible(index) {
                let top = self.cache.cell_start(index).saturating_sub(1);
                self.scroll_to(top);
                self.selected = Some(index);
            }
        }
    }

    /// Expands or collapses the selected cell (or the first expandable one in view).
    fn toggle(&mut self, cells: &[Cell]) {
        let target = self.selected.filter(|&s| self.is_visible(s)).or_else(|| {
            let first = self.cache.cell_at(self.top);
            let last = self.cache.cell_at(self.top + self.height.saturating_sub(1));
            (first..=last).find(|&i| cells.get(i).is_some_and(Cell::is_expandable))
        });
        let Some(index) = target else {
            return;
        };
        if !self.expanded.remove(&index) {
            self.expanded.insert(index);
        }
        self.selected = Some(index);
        let follow = self.follow;
        self.cache.refresh(cells, &self.expanded, index);
        if follow {
            self.scroll_to(usize::MAX);
        }
    }

    /// Moves to the next (or previous) line containing the query, from line `from`.
    fn jump(&mut self, forward: bool, from: usize) {
        let query = self.search.query.to_lowercase();
        if query.is_empty() {
            return;
        }
        let from = if from == usize::MAX {
            self.cache.total().saturating_sub(1)
        } else {
            from
        };
        let matches = |line: &ratatui::text::Line<'static>| {
            line.spans
                .iter()
                .map(|s| s.content.as_ref())
                .collect::<String>()
                .to_lowercase()
                .contains(&query)
        };
        let found = self.cache.find(from, forward, matches);
        self.search.not_found = found.is_none();
        self.search.position = None;
        if let Some(line) = found {
            let (before, total) = self.cache.rank(line, matches);
            self.search.position = Some((before + 1, total));
            self.search.current = Some(line);
            self.scroll_to(line.saturating_sub(self.height / 3));
        }
    }
}
