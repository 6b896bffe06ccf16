//! Draws the pager: only the rows in view are copied from the wrap cache, with a marker on
//! the selected cell, search matches highlighted, and a footer with position and keys.

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::Widget;

use super::cells::Cell;
use super::pager::Pager;
use super::wrap::str_width;

const GUTTER: u16 = 2;

pub fn render(pager: &mut Pager, cells: &[Cell], area: Rect, buf: &mut Buffer) {
    if area.height < 2 || area.width <= GUTTER {
        return;
    }
    let content = Rect {
        height: area.height - 1,
        ..area
    };
    let text_width = content.width - GUTTER;
    pager.cache.ensure(cells, &pager.expanded, text_width);
    pager.height = usize::from(content.height);
    let max_top = pager.cache.total().saturating_sub(pager.height);
    pager.top = if pager.follow {
        max_top
    } else {
        pager.top.min(max_top)
    };

    let query = pager.search.query.to_lowercase();
    let marker = Style::default()
        .fg(Color::Cyan)
        .add_modifier(Modifier::BOLD);
    let mut cell = pager.cache.cell_at(pager.top);
    for row in 0..content.height {
        let index = pager.top + usize::from(row);
        if index >= pager.cache.total() {
            break;
        }
        while pager.cache.cell_start(cell + 1) <= index && cell + 1 < pager.cache.cell_count() {
            cell += 1;
        }
        let Some(line) = pager.cache.line(cell, index) else {
            continue;
        };
        let y = content.y + row;
        if pager.selected == Some(cell) && index >= pager.cache.cell_start(cell) {
            buf.set_string(content.x, y, "▌", marker);
        }
        let x = content.x + GUTTER;
        buf.set_line(x, y, line, text_width);
        if !query.is_empty() {
            let current = pager.search.current == Some(index);
            highlight_matches(line, &query, current, Rect::new(x, y, text_width, 1), buf);
        }
    }
    footer(pager, cells.len()).render(
        Rect {
            y: area.y + area.height - 1,
            height: 1,
            ..area
        },
        buf,
    );
}

/// Marks every occurrence of `query` (already lower-cased) in the drawn `line`.
fn highlight_matches(line: &Line<'_>, query: &str, current: bool, row: Rect, buf: &mut Buffer) {
    let text: String = line.spans.iter().map(|s| s.content.as_ref()).collect();
    let lower = text.to_lowercase();
    if lower.len() != text.len() {
        // Lower-casing changed byte offsets; matching positions would be wrong.
        return;
    }
    let style = if current {
        Style::default().bg(Color::Yellow).fg(Color::Black)
    } else {
        Style::default().add_modifier(Modifier::REVERSED)
    };
    let mut from = 0;
    while let Some(found) = lower[from..].find(query) {
        let start = from + found;
        let end = start + query.len();
        let x = row.x + str_width(&text[..start]) as u16;
        let width = str_width(&text[start..end]) as u16;
        let right = (x + width).min(row.x + row.width);
        if x < right {
            buf.set_style(Rect::new(x, row.y, right - x, 1), style);
        }
        from = end;
    }
}

fn footer(pager: &Pager, cells: usize) -> Line<'static> {
    let dim = Style::default().fg(Color::DarkGray);
    let bar = Style::default().fg(Color::Black).bg(Color::Cyan);
    if let Some(query) = &pager.search.editing {
        return Line::from(vec![
            Span::styled(" / ", bar),
            Span::raw(format!(" {query}")),
            Span::styled("▏", dim),
            Span::styled("   Enter search · Esc cancel", dim),
        ]);
    }
    let total = pager.cache.total();
    let last = (pager.top + pager.height).min(total);
    let percent = (last * 100).checked_div(total).unwrap_or(100);
    let mut spans = vec![
        Span::styled(" transcript ", bar),
        Span::raw(format!(" {cells} cells · {percent}% ")),
    ];
    if !pager.search.query.is_empty() {
        let note = match (pager.search.not_found, pager.search.position) {
            (true, _) => format!("· no match for \"{}\" ", pager.search.query),
            (false, Some((at, of))) => {
                format!("· \"{}\" match {at} of {of} · n/N ", pager.search.query)
            }
            (false, None) => format!("· \"{}\" n/N ", pager.search.query),
        };
        spans.push(Span::styled(note, Style::default().fg(Color::Yellow)));
    }
    spans.push(Span::styled(
        "· ↑↓ PgUp PgDn Home End · Tab select · Enter expand · / search · q back",
        dim,
    ));
    Line::from(spans)
}
