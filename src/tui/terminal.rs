//! The inline screen. The live area sits at the bottom of the normal screen; finished lines
//! are written above it, so they scroll into the terminal's own scrollback where search, copy
//! and scrolling work as in any program (tmux included). Only the pager uses the alternate
//! screen.
//!
//! Everything inline is drawn relative to the terminal's cursor, which rests (hidden) at the
//! start of the live area's first row; the composer draws its own caret. Terminals keep the
//! cursor with its line whatever a resize does to the rows (reflow, truncation, rows pushed
//! into or pulled back from the scrollback), so the live area is always found again, even by
//! a frame written before the program heard of the resize. Rows are only ever added by line
//! feeds from the live area down, so nothing above it is overwritten. Frames are wrapped in a
//! synchronized update, so the terminal never shows half a frame.

use std::io::{self, Write};

use crossterm::cursor::{Hide, MoveTo, MoveToColumn, MoveUp, Show};
use crossterm::event::{DisableMouseCapture, EnableMouseCapture};
use crossterm::queue;
use crossterm::style::{Attribute, Print, SetAttribute, SetStyle};
use crossterm::terminal::{
    BeginSynchronizedUpdate, Clear, ClearType, DisableLineWrap, EnableLineWrap,
    EndSynchronizedUpdate, EnterAlternateScreen, LeaveAlternateScreen,
};
use ratatui::backend::{Backend, CrosstermBackend, IntoCrossterm};
use ratatui::buffer::{Buffer, Cell};
use ratatui::layout::{Rect, Size};
use ratatui::style::Style;
use ratatui::text::Line;

use super::modes;
use super::wrap::str_width;

pub struct Screen<W: Write> {
    backend: CrosstermBackend<W>,
    size: Size,
    /// The live area as last drawn (origin 0,0: where it is on screen is the cursor's row).
    previous: Buffer,
    /// Whether `previous` is what the terminal shows; when not, the next frame repaints all.
    valid: bool,
    /// The last pager frame, for drawing only what changed.
    pager_previous: Buffer,
    in_pager: bool,
}

impl<W: Write> Screen<W> {
    /// A screen of `size` whose live area starts on the cursor's row (where the shell left
    /// it).
    pub fn new(out: W, size: Size) -> Self {
        Self {
            backend: CrosstermBackend::new(out),
            size,
            previous: Buffer::empty(Rect::default()),
            valid: false,
            pager_previous: Buffer::empty(Rect::default()),
            in_pager: false,
        }
    }

    pub fn size(&self) -> Size {
        self.size
    }

    pub fn in_pager(&self) -> bool {
        self.in_pager
    }

    pub fn begin_frame(&mut self) -> io::Result<()> {
        queue!(self.backend, BeginSynchronizedUpdate)
    }

    pub fn end_frame(&mut self) -> io::Result<()> {
        queue!(self.backend, EndSynchronizedUpdate)?;
        Backend::flush(&mut self.backend)
    }

    /// The terminal changed size: the next frame repaints the live area from its first row
    /// down (the rows under it may hold what the terminal made of the old one).
    pub fn resize(&mut self, size: Size) {
        self.size = size;
        self.valid = false;
        self.pager_previous = Buffer::empty(Rect::default());
    }

    /// Writes an escape sequence that draws nothing (a desktop notification).
    pub fn write_raw(&mut self, sequence: &str) -> io::Result<()> {
        queue!(self.backend, Print(sequence))
    }

    /// Clears the screen (`/clear`): the live area starts again at the top.
    pub fn clear(&mut self) -> io::Result<()> {
        queue!(self.backend, MoveTo(0, 0), Clear(ClearType::All))?;
        self.valid = false;
        Ok(())
    }

    /// Writes `lines` (already wrapped to the width) where the live area starts; the live
    /// area is drawn again under them. At the screen's bottom each line feed scrolls the rows
    /// above into the scrollback.
    pub fn insert_lines(&mut self, lines: &[Line<'static>]) -> io::Result<()> {
        if lines.is_empty() || self.in_pager {
            return Ok(());
        }
        let width = self.size.width;
        let mut row = Buffer::empty(Rect::new(0, 0, width, 1));
        for line in lines {
            row.reset();
            row.set_line(0, 0, line, width);
            self.write_row(&row, 0)?;
            queue!(self.backend, Print("\r\n"))?;
        }
        self.valid = false;
        Ok(())
    }

    /// Draws the live area, `height` rows tall, with `render`: only rows that changed unless
    /// the area must be repainted, then the cursor goes back to its first row.
    pub fn draw_live(
        &mut self,
        height: u16,
        render: impl FnOnce(Rect, &mut Buffer),
    ) -> io::Result<()> {
        // One row always stays above the live area, so that it never covers the whole screen.
        let height = height.min(self.size.height.saturating_sub(1)).max(1);
        let area = Rect::new(0, 0, self.size.width, height);
        let mut frame = Buffer::empty(area);
        render(area, &mut frame);
        let repaint = !self.valid || self.previous.area.width != area.width;
        // A row drawn for a width the terminal just left is cut, not wrapped onto the next.
        queue!(self.backend, DisableLineWrap)?;
        if repaint {
            queue!(
                self.backend,
                MoveToColumn(0),
                Clear(ClearType::FromCursorDown)
            )?;
        }
        let old_height = if repaint {
            0
        } else {
            self.previous.area.height
        };
        for y in 0..height {
            if y > 0 {
                // A line feed, never a cursor move: at the bottom it makes the row it needs.
                queue!(self.backend, Print("\r\n"))?;
            }
            if y >= old_height || !same_row(&self.previous, &frame, y) {
                self.write_row(&frame, y)?;
            }
        }
        if height < old_height {
            queue!(self.backend, Clear(ClearType::FromCursorDown))?;
        }
        if height > 1 {
            queue!(self.backend, MoveUp(height - 1))?;
        }
        queue!(self.backend, MoveToColumn(0), Hide, EnableLineWrap)?;
        self.previous = frame;
        self.valid = true;
        Ok(())
    }

    /// Writes row `y` of `buf` over the cursor's row, which it clears first.
    fn write_row(&mut self, buf: &Buffer, y: u16) -> io::Result<()> {
        queue!(self.backend, MoveToColumn(0), Clear(ClearType::CurrentLine))?;
        let area = buf.area;
        let last = (area.left()..area.right())
            .rev()
            .find(|&x| !is_blank(&buf[(x, y)]))
            .map_or(area.left(), |x| x + 1);
        let mut style: Option<Style> = None;
        let mut skip = 0;
        for x in area.left()..last {
            let cell = &buf[(x, y)];
            if skip > 0 {
                skip -= 1;
                continue;
            }
            let cell_style = Style::default()
                .fg(cell.fg)
                .bg(cell.bg)
                .add_modifier(cell.modifier);
            if style != Some(cell_style) {
                queue!(
                    self.backend,
                    SetAttribute(Attribute::Reset),
                    SetStyle(cell_style.into_crossterm())
                )?;
                style = Some(cell_style);
            }
            let symbol = cell.symbol();
            queue!(self.backend, Print(symbol))?;
            skip = str_width(symbol).saturating_sub(1);
        }
        queue!(self.backend, SetAttribute(Attribute::Reset))
    }

    /// Switches to the alternate screen for the pager (mouse wheel captured there only).
    pub fn enter_pager(&mut self) -> io::Result<()> {
        queue!(self.backend, EnterAlternateScreen, EnableMouseCapture)?;
        modes::set_pager_active(true);
        self.in_pager = true;
        self.pager_previous = Buffer::empty(Rect::default());
        Ok(())
    }

    /// Back to the normal screen, where the cursor is again at the live area's first row.
    pub fn leave_pager(&mut self) -> io::Result<()> {
        queue!(self.backend, DisableMouseCapture, LeaveAlternateScreen)?;
        modes::set_pager_active(false);
        self.in_pager = false;
        self.valid = false;
        Ok(())
    }

    pub fn draw_pager(&mut self, render: impl FnOnce(Rect, &mut Buffer)) -> io::Result<()> {
        let area = Rect::new(0, 0, self.size.width, self.size.height);
        let mut frame = Buffer::empty(area);
        render(area, &mut frame);
        if self.pager_previous.area != area {
            queue!(self.backend, MoveTo(0, 0), Clear(ClearType::All))?;
            self.pager_previous = Buffer::empty(area);
        }
        self.backend
            .draw(self.pager_previous.diff(&frame).into_iter())?;
        self.pager_previous = frame;
        queue!(self.backend, Hide)
    }

    /// Leaves the screen for the shell: the live area is erased and the cursor left where it
    /// began, right under the transcript.
    pub fn finish(&mut self) -> io::Result<()> {
        if self.in_pager {
            self.leave_pager()?;
        }
        queue!(
            self.backend,
            MoveToColumn(0),
            Clear(ClearType::FromCursorDown),
            Show
        )?;
        Backend::flush(&mut self.backend)
    }
}

/// The terminal's size in columns and rows, asked of standard output. crossterm's `size()`
/// opens `/dev/tty` at every call, which while a reply streams is a path lookup per frame; it
/// answers only where standard output is not a terminal.
pub fn window_size() -> io::Result<(u16, u16)> {
    #[cfg(unix)]
    {
        // SAFETY: TIOCGWINSZ writes one `winsize` into the struct it is given and nothing else.
        let mut size: libc::winsize = unsafe { std::mem::zeroed() };
        let asked = unsafe { libc::ioctl(libc::STDOUT_FILENO, libc::TIOCGWINSZ, &mut size) };
        if asked == 0 && size.ws_col > 0 && size.ws_row > 0 {
            return Ok((size.ws_col, size.ws_row));
        }
    }
    crossterm::terminal::size()
}

fn is_blank(cell: &Cell) -> bool {
    cell.symbol() == " " && cell.bg == ratatui::style::Color::Reset && cell.modifier.is_empty()
}

fn same_row(a: &Buffer, b: &Buffer, y: u16) -> bool {
    a.area.width == b.area.width && (0..a.area.width).all(|x| a[(x, y)] == b[(x, y)])
}

#[cfg(test)]
mod tests {
    use std::cell::RefCell;
    use std::num::NonZeroU16;
    use std::rc::Rc;

    use ratatui::widgets::Widget;

    use super::*;

    /// What the screen wrote, shared with the test.
    #[derive(Clone, Default)]
    struct Output(Rc<RefCell<Vec<u8>>>);

    impl Write for Output {
        fn write(&mut self, bytes: &[u8]) -> io::Result<usize> {
            self.0.borrow_mut().extend_from_slice(bytes);
            Ok(bytes.len())
        }

        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }

    fn parse(output: &Output, rows: u16, cols: u16) -> Result<vt100::Parser, String> {
        let (Some(rows), Some(cols)) = (NonZeroU16::new(rows), NonZeroU16::new(cols)) else {
            return Err("zero size".into());
        };
        let mut parser = vt100::Parser::new(rows, cols, 100);
        parser.process(&output.0.borrow());
        Ok(parser)
    }

    fn frame(screen: &mut Screen<Output>, history: &[&str], live: &[&str]) -> io::Result<()> {
        screen.begin_frame()?;
        let lines: Vec<Line<'static>> = history.iter().map(|l| Line::from(l.to_string())).collect();
        screen.insert_lines(&lines)?;
        screen.draw_live(live.len() as u16, |area, buf| {
            for (row, text) in live.iter().enumerate() {
                let rect = Rect {
                    y: area.y + row as u16,
                    height: 1,
                    ..area
                };
                Line::from(*text).render(rect, buf);
            }
        })?;
        screen.end_frame()
    }

    /// Every row of the terminal, scrollback first.
    fn all_rows(parser: &mut vt100::Parser) -> Vec<String> {
        let screen = parser.screen_mut();
        let held = screen.scrollback_len();
        let mut rows = Vec::new();
        for offset in (1..=held).rev() {
            screen.set_scrollback(offset);
            rows.extend(screen.rows(0, u16::MAX).next());
        }
        screen.set_scrollback(0);
        rows.extend(screen.rows(0, u16::MAX));
        rows.into_iter().map(|r| r.trim_end().to_string()).collect()
    }

    #[test]
    fn lines_go_above_the_live_area_then_into_the_scrollback()
    -> Result<(), Box<dyn std::error::Error>> {
        // The shell left the cursor on the second row.
        let output = Output::default();
        output.0.borrow_mut().extend_from_slice(b"$ mnemo\r\n");
        let mut screen = Screen::new(output.clone(), Size::new(20, 5));
        frame(&mut screen, &[], &["live one", "live two"])?;
        let parser = parse(&output, 5, 20)?;
        assert_eq!(parser.screen().contents(), "$ mnemo\nlive one\nlive two");

        let history: Vec<String> = (1..=6).map(|n| format!("line {n}")).collect();
        let history: Vec<&str> = history.iter().map(String::as_str).collect();
        frame(&mut screen, &history, &["live one", "live two"])?;
        let mut parser = parse(&output, 5, 20)?;
        assert_eq!(
            parser.screen().contents(),
            "line 4\nline 5\nline 6\nlive one\nlive two"
        );
        assert_eq!(
            all_rows(&mut parser),
            [
                "$ mnemo", "line 1", "line 2", "line 3", "line 4", "line 5", "line 6", "live one",
                "live two"
            ]
        );
        Ok(())
    }

    #[test]
    fn a_shrinking_live_area_leaves_no_rows_behind() -> Result<(), Box<dyn std::error::Error>> {
        let output = Output::default();
        let mut screen = Screen::new(output.clone(), Size::new(20, 6));
        frame(&mut screen, &["first"], &["a", "b", "c", "d"])?;
        frame(&mut screen, &["second"], &["e"])?;
        let parser = parse(&output, 6, 20)?;
        assert_eq!(parser.screen().contents(), "first\nsecond\ne");
        Ok(())
    }

    #[test]
    fn a_frame_drawn_before_the_program_hears_of_a_resize_covers_no_line()
    -> Result<(), Box<dyn std::error::Error>> {
        let output = Output::default();
        let mut screen = Screen::new(output.clone(), Size::new(30, 12));
        let history: Vec<String> = (1..=14).map(|n| format!("line {n}")).collect();
        let history: Vec<&str> = history.iter().map(String::as_str).collect();
        frame(
            &mut screen,
            &history[..10],
            &["tail", "────", "› typing", "status"],
        )?;
        // The window shrinks to 5 rows and 20 columns: the terminal applies it at once, the
        // program still draws one frame for the old size, then hears of it.
        let mut parser = parse(&output, 12, 30)?;
        let mark = output.0.borrow().len();
        parser.screen_mut().set_size(
            std::num::NonZeroU16::new(5).ok_or("size")?,
            std::num::NonZeroU16::new(20).ok_or("size")?,
        );
        frame(
            &mut screen,
            &history[10..12],
            &["tail", "────", "› typing", "status"],
        )?;
        screen.resize(Size::new(20, 5));
        frame(
            &mut screen,
            &history[12..],
            &["tail", "────", "› typing", "status"],
        )?;
        parser.process(&output.0.borrow()[mark..]);
        let rows = all_rows(&mut parser);
        let lines: Vec<&String> = rows.iter().filter(|r| r.starts_with("line")).collect();
        assert_eq!(
            lines,
            history
                .iter()
                .map(|l| l.to_string())
                .collect::<Vec<_>>()
                .iter()
                .collect::<Vec<_>>()
        );
        assert_eq!(
            &rows[rows.len() - 4..],
            ["tail", "────", "› typing", "status"]
        );
        Ok(())
    }
}
