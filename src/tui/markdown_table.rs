//! Markdown tables laid out for a width. A table that fits is drawn as a grid with box
//! borders and aligned columns; one that is too wide gets narrower columns whose cells wrap
//! inside them; when even that would squeeze a column below a readable width, each row is
//! written as `header: value` lines instead, so a row is never wrapped across the grid.

use pulldown_cmark::Alignment;
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};

use super::wrap::{str_width, wrap_line};

/// Narrowest a column is squeezed to (unless its content is narrower).
const MIN_COLUMN: usize = 6;
/// A word longer than this may be split inside its column rather than force the fallback.
const MAX_UNBROKEN_WORD: usize = 20;

type Cell = Vec<Span<'static>>;

/// A table as the markdown parser hands it over: alignments, a header row, body rows.
#[derive(Debug, Default)]
pub struct Table {
    alignments: Vec<Alignment>,
    head: Vec<Cell>,
    rows: Vec<Vec<Cell>>,
    in_head: bool,
}

impl Table {
    pub fn new(alignments: Vec<Alignment>) -> Self {
        Self {
            alignments,
            ..Self::default()
        }
    }

    pub fn start_head(&mut self) {
        self.in_head = true;
    }

    pub fn start_row(&mut self) {
        self.in_head = false;
        self.rows.push(Vec::new());
    }

    pub fn push_cell(&mut self, spans: Cell) {
        if self.in_head {
            let bold = Style::default().add_modifier(Modifier::BOLD);
            self.head
                .push(spans.into_iter().map(|s| s.patch_style(bold)).collect());
        } else if let Some(row) = self.rows.last_mut() {
            row.push(spans);
        }
    }

    fn columns(&self) -> usize {
        let widest_row = self.rows.iter().map(Vec::len).max().unwrap_or(0);
        self.head.len().max(widest_row)
    }

    fn all_rows(&self) -> impl Iterator<Item = &Vec<Cell>> {
        std::iter::once(&self.head).chain(&self.rows)
    }

    fn alignment(&self, column: usize) -> Alignment {
        self.alignments
            .get(column)
            .copied()
            .unwrap_or(Alignment::None)
    }

    /// The table's lines for `width` columns.
    pub fn lines(&self, width: usize) -> Vec<Line<'static>> {
        let columns = self.columns();
        if columns == 0 {
            return Vec::new();
        }
        match column_widths(self, width) {
            Some(widths) => self.grid(&widths),
            None => self.records(),
        }
    }

    fn grid(&self, widths: &[usize]) -> Vec<Line<'static>> {
        let rows: Vec<Vec<Vec<Line<'static>>>> = self
            .all_rows()
            .map(|row| {
                (0..widths.len())
                    .map(|c| wrap_cell(row.get(c), widths[c]))
                    .collect()
            })
            .collect();
        // Rules between body rows only when some row takes several lines.
        let tall = rows.iter().skip(1).any(|r| r.iter().any(|c| c.len() > 1));
        let mut out = vec![rule(widths, ['┌', '┬', '┐'])];
        for (index, row) in rows.iter().enumerate() {
            if index == 1 || (index > 1 && tall) {
                out.push(rule(widths, ['├', '┼', '┤']));
            }
            let height = row.iter().map(Vec::len).max().unwrap_or(1).max(1);
            for line in 0..height {
                out.push(self.grid_row(row, widths, line));
            }
        }
        out.push(rule(widths, ['└', '┴', '┘']));
        out
    }

    /// Line `line` of a grid row: every cell's line of that index padded to its column.
    fn grid_row(&self, row: &[Vec<Line<'static>>], widths: &[usize], line: usize) -> Line<'static> {
        let border = Style::default().fg(Color::DarkGray);
        let mut spans = vec![Span::styled("│", border)];
        for (column, width) in widths.iter().enumerate() {
            let content = row.get(column).and_then(|cell| cell.get(line));
            let used = content.map_or(0, Line::width);
            let free = width.saturating_sub(used);
            let (left, right) = match self.alignment(column) {
                Alignment::Right => (free, 0),
                Alignment::Center => (free / 2, free - free / 2),
                Alignment::Left | Alignment::None => (0, free),
            };
            spans.push(Span::raw(" ".repeat(left + 1)));
            if let Some(content) = content {
                spans.extend(content.spans.iter().cloned());
            }
            spans.push(Span::raw(" ".repeat(right + 1)));
            spans.push(Span::styled("│", border));
        }
        Line::from(spans)
    }

    /// The fallback for narrow widths: one `header: value` line per cell, rows apart.
    fn records(&self) -> Vec<Line<'static>> {
        let mut out = Vec::new();
        for row in &self.rows {
            if !out.is_empty() {
                out.push(Line::default());
            }
            for column in 0..self.columns() {
                let mut spans = match self.head.get(column) {
                    Some(head) if !head.is_empty() => head.clone(),
                    _ => vec![Span::raw(format!("{}", column + 1))],
                };
                spans.push(Span::styled(": ", Style::default().fg(Color::DarkGray)));
                spans.extend(row.get(column).cloned().unwrap_or_default());
                out.push(Line::from(spans));
            }
        }
        out
    }
}

/// Column widths that fit `width`: natural widths when they fit, otherwise narrower ones
/// (extra room shared out by how much each column wants); `None` when a column would have
/// to go below its minimum.
fn column_widths(table: &Table, width: usize) -> Option<Vec<usize>> {
    let columns = table.columns();
    let mut natural = vec![1; columns];
    let mut minimum = vec![1; columns];
    for row in table.all_rows() {
        for (column, cell) in row.iter().enumerate() {
            let text: String = cell.iter().map(|s| s.content.as_ref()).collect();
            let longest_word = text.split(' ').map(str_width).max().unwrap_or(0);
            natural[column] = natural[column].max(str_width(&text));
            minimum[column] =
                minimum[column].max(longest_word.clamp(MIN_COLUMN, MAX_UNBROKEN_WORD));
        }
    }
    for (min, nat) in minimum.iter_mut().zip(&natural) {
        *min = (*min).min(*nat);
    }
    // "│ " before every cell, " " after it, and the closing "│".
    let room = width.checked_sub(3 * columns + 1)?;
    if natural.iter().sum::<usize>() <= room {
        return Some(natural);
    }
    let spare = room.checked_sub(minimum.iter().sum())?;
    let wants: Vec<usize> = natural.iter().zip(&minimum).map(|(n, m)| n - m).collect();
    let wanted: usize = wants.iter().sum();
    let mut widths: Vec<usize> = minimum
        .iter()
        .zip(&wants)
        .map(|(min, want)| min + spare * want / wanted.max(1))
        .collect();
    // Rounding leaves a few columns over: they go to the columns still short the most.
    let mut left = room.saturating_sub(widths.iter().sum());
    while left > 0 {
        let Some(column) = (0..columns)
            .filter(|&c| widths[c] < natural[c])
            .max_by_key(|&c| natural[c] - widths[c])
        else {
            break;
        };
        widths[column] += 1;
        left -= 1;
    }
    Some(widths)
}

fn wrap_cell(cell: Option<&Cell>, width: usize) -> Vec<Line<'static>> {
    let Some(cell) = cell.filter(|c| !c.is_empty()) else {
        return Vec::new();
    };
    let mut lines = Vec::new();
    let width = u16::try_from(width).unwrap_or(u16::MAX);
    wrap_line(&Line::from(cell.clone()), width, &mut lines);
    lines
}

fn rule(widths: &[usize], [left, middle, right]: [char; 3]) -> Line<'static> {
    let mut text = String::from(left);
    for (n, width) in widths.iter().enumerate() {
        if n > 0 {
            text.push(middle);
        }
        text.push_str(&"─".repeat(width + 2));
    }
    text.push(right);
    Line::styled(text, Style::default().fg(Color::DarkGray))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn table(alignments: Vec<Alignment>, head: &[&str], rows: &[&[&str]]) -> Table {
        let mut table = Table::new(alignments);
        table.start_head();
        for cell in head {
            table.push_cell(vec![Span::raw(cell.to_string())]);
        }
        for row in rows {
            table.start_row();
            for cell in *row {
                table.push_cell(vec![Span::raw(cell.to_string())]);
            }
        }
        table
    }

    fn texts(lines: &[Line<'static>]) -> Vec<String> {
        lines.iter().map(|l| l.to_string()).collect()
    }

    #[test]
    fn a_table_that_fits_gets_a_grid_at_natural_widths() {
        let t = table(
            vec![],
            &["Name", "Role"],
            &[&["Ada", "engineer"], &["Bo", "ops"]],
        );
        assert_eq!(
            texts(&t.lines(80)),
            [
                "┌──────┬──────────┐",
                "│ Name │ Role     │",
                "├──────┼──────────┤",
                "│ Ada  │ engineer │",
                "│ Bo   │ ops      │",
                "└──────┴──────────┘",
            ]
        );
    }

    #[test]
    fn columns_honour_their_alignment() {
        let aligns = vec![Alignment::Left, Alignment::Center, Alignment::Right];
        let t = table(aligns, &["left", "middle", "right"], &[&["a", "b", "c"]]);
        let lines = texts(&t.lines(80));
        assert_eq!(lines[3], "│ a    │   b    │     c │");
    }

    #[test]
    fn header_cells_are_bold() {
        let t = table(vec![], &["H"], &[&["v"]]);
        let header = &t.lines(80)[1];
        let cell = header.spans.iter().find(|s| s.content == "H");
        assert!(cell.is_some_and(|s| s.style.add_modifier.contains(Modifier::BOLD)));
    }

    #[test]
    fn missing_cells_are_blank_and_widths_count_columns_not_bytes() {
        let t = table(vec![], &["日本", "b"], &[&["x"]]);
        assert_eq!(
            texts(&t.lines(80)),
            [
                "┌──────┬───┐",
                "│ 日本 │ b │",
                "├──────┼───┤",
                "│ x    │   │",
                "└──────┴───┘",
            ]
        );
    }

    #[test]
    fn a_table_too_wide_wraps_cells_inside_narrower_columns() {
        let t = table(
            vec![],
            &["Key", "Description"],
            &[
                &["a", "the first of several rather long descriptions"],
                &["b", "short"],
            ],
        );
        let lines = t.lines(30);
        let text = texts(&lines);
        assert!(lines.iter().all(|l| l.width() <= 30), "{text:#?}");
        assert_eq!(
            text,
            [
                "┌─────┬──────────────────────┐",
                "│ Key │ Description          │",
                "├─────┼──────────────────────┤",
                "│ a   │ the first of several │",
                "│     │ rather long          │",
                "│     │ descriptions         │",
                "├─────┼──────────────────────┤",
                "│ b   │ short                │",
                "└─────┴──────────────────────┘",
            ]
        );
    }

    #[test]
    fn spare_room_goes_to_the_columns_that_want_it() {
        let t = table(
            vec![],
            &["a", "b"],
            &[&["one two three four", "x y z w v u t s r q"]],
        );
        let widths = column_widths(&t, 30).unwrap_or_default();
        assert_eq!(widths.iter().sum::<usize>(), 30 - 7);
        assert!(widths.iter().all(|w| *w >= MIN_COLUMN), "{widths:?}");
    }

    #[test]
    fn a_table_that_cannot_fit_becomes_header_value_lines() {
        let t = table(
            vec![],
            &["Name", "Email", "Team"],
            &[
                &["Ada", "ada@example.com", "core"],
                &["Bo", "bo@example.com", "ops"],
            ],
        );
        assert_eq!(
            texts(&t.lines(24)),
            [
                "Name: Ada",
                "Email: ada@example.com",
                "Team: core",
                "",
                "Name: Bo",
                "Email: bo@example.com",
                "Team: ops",
            ]
        );
    }
}
