//! The inline screen. The live area is a viewport at the bottom of the normal screen; finished
//! lines are written above it, so they scroll into the terminal's own scrollback where
//! search, copy and scrolling work as in any program (tmux included). Only the pager uses
//! the alternate screen. Frames are diffed against the previous one and wrapped in a
//! synchronized update, so the terminal never shows half a frame.

use std::io::{self, Write};

use crossterm::cursor::{Hide, MoveTo, Show};
use crossterm::event::{DisableMouseCapture, EnableMouseCapture};
use crossterm::queue;
use crossterm::terminal::{
    BeginSynchronizedUpdate, Clear, ClearType, EndSynchronizedUpdate, EnterAlternateScreen,
    LeaveAlternateScreen,
};
use ratatui::backend::{Backend, CrosstermBackend};
use ratatui::buffer::Buffer;
use ratatui::layout::{Position, Rect, Size};
use ratatui::text::Line;

use super::modes;

pub struct Screen<W: Write> {
    backend: CrosstermBackend<W>,
    size: Size,
    /// Where the live area is on the normal screen.
    viewport: Rect,
    /// The last frame drawn (live area or pager).
    previous: Buffer,
    /// Whether `previous` is what the terminal shows; when not, the next frame repaints all.
    valid: bool,
    in_pager: bool,
    /// The terminal was resized since the live area was last placed.
    anchor_stale: bool,
    /// Rows between the live area's top and the cursor left after the last frame.
    cursor_offset: u16,
}

impl<W: Write> Screen<W> {
    /// A screen of `size` whose live area starts on row `cursor_row` (where the shell left
    /// the cursor).
    pub fn new(out: W, size: Size, cursor_row: u16) -> Self {
        let y = cursor_row.min(size.height.saturating_sub(1));
        Self {
            backend: CrosstermBackend::new(out),
            size,
            viewport: Rect::new(0, y, size.width, 0),
            previous: Buffer::empty(Rect::default()),
            valid: false,
            in_pager: false,
            anchor_stale: false,
            cursor_offset: 0,
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

    pub fn flush(&mut self) -> io::Result<()> {
        Backend::flush(&mut self.backend)
    }

    pub fn end_frame(&mut self) -> io::Result<()> {
        queue!(self.backend, EndSynchronizedUpdate)?;
        Backend::flush(&mut self.backend)
    }

    /// The terminal changed size. The live area is re-anchored (see `reanchor`) before the
    /// next inline frame; the pager simply repaints.
    pub fn resize(&mut self, size: Size) {
        self.size = size;
        self.valid = false;
        self.anchor_stale = true;
    }

    /// Whether the live area's position must be learnt again (after a resize).
    pub fn anchor_stale(&self) -> bool {
        self.anchor_stale && !self.in_pager
    }

    /// Puts the live area back where the terminal moved it, from the cursor's row (the
    /// terminal keeps the cursor with its line when it reflows or scrolls on resize), and
    /// clears it for a full repaint. Without the row it stays where it was, moved up to fit.
    pub fn reanchor(&mut self, cursor_row: Option<u16>) -> io::Result<()> {
        let height = self.viewport.height.min(self.size.height);
        let y = match cursor_row {
            Some(row) => row.saturating_sub(self.cursor_offset),
            None => self.viewport.y,
        };
        let y = y.min(self.size.height.saturating_sub(height));
        queue!(self.backend, MoveTo(0, y), Clear(ClearType::FromCursorDown))?;
        self.viewport = Rect::new(0, y, self.size.width, height);
        self.anchor_stale = false;
        self.valid = false;
        Ok(())
    }

    /// Clears the screen (`/clear`): the live area starts again at the top.
    pub fn clear(&mut self) -> io::Result<()> {
        queue!(self.backend, MoveTo(0, 0), Clear(ClearType::All))?;
        self.viewport = Rect::new(0, 0, self.size.width, 0);
        self.valid = false;
        Ok(())
    }

    /// Writes `lines` (already wrapped to the width) above the live area: first into free
    /// rows below it, moving it down, then by scrolling the rows above it upwards, which
    /// pushes the top rows into the scrollback.
    pub fn insert_lines(&mut self, lines: &[Line<'static>]) -> io::Result<()> {
        if lines.is_empty() || self.in_pager {
            return Ok(());
        }
        let free = self
            .size
            .height
            .saturating_sub(self.viewport.y + self.viewport.height);
        let direct = lines.len().min(usize::from(free));
        for (row, line) in lines[..direct].iter().enumerate() {
            self.write_row(self.viewport.y + row as u16, line)?;
        }
        if direct > 0 {
            self.viewport.y += direct as u16;
            self.valid = false;
        }
        let rest = &lines[direct..];
        let top = self.viewport.y;
        if rest.is_empty() || top == 0 {
            return Ok(());
        }
        // Scroll region: rows 1..=top (1-based), i.e. everything above the live area.
        write!(self.backend, "\x1b[1;{top}r")?;
        for line in rest {
            queue!(self.backend, MoveTo(0, top - 1))?;
            self.backend.write_all(b"\n")?;
            self.write_row(top - 1, line)?;
        }
        self.backend.write_all(b"\x1b[r")?;
        Ok(())
    }

    fn write_row(&mut self, y: u16, line: &Line<'static>) -> io::Result<()> {
        let area = Rect::new(0, y, self.size.width, 1);
        let mut row = Buffer::empty(area);
        row.set_line(0, y, line, self.size.width);
        queue!(self.backend, MoveTo(0, y), Clear(ClearType::CurrentLine))?;
        let blank = Buffer::empty(area);
        self.backend.draw(blank.diff(&row).into_iter())
    }

    /// Draws the live area, `height` rows tall, with `render`; the returned position is where
    /// the cursor is shown (hidden when `None`).
    pub fn draw_live(
        &mut self,
        height: u16,
        render: impl FnOnce(Rect, &mut Buffer) -> Option<Position>,
    ) -> io::Result<()> {
        // One row always stays above the live area, for the scroll region.
        let height = height.min(self.size.height.saturating_sub(1)).max(1);
        let overflow = (self.viewport.y + height).saturating_sub(self.size.height);
        if overflow > 0 {
            // Scroll the whole screen up: the top rows go to the scrollback.
            queue!(self.backend, MoveTo(0, self.size.height - 1))?;
            for _ in 0..overflow {
                self.backend.write_all(b"\n")?;
            }
            self.viewport.y -= overflow;
            self.valid = false;
        }
        if height < self.viewport.height {
            let below = self.viewport.y + height;
            queue!(
                self.backend,
                MoveTo(0, below),
                Clear(ClearType::FromCursorDown)
            )?;
        }
        self.viewport = Rect::new(0, self.viewport.y, self.size.width, height);
        self.paint(self.viewport, render)
    }

    /// Switches to the alternate screen for the pager (mouse wheel captured there only).
    pub fn enter_pager(&mut self) -> io::Result<()> {
        queue!(self.backend, EnterAlternateScreen, EnableMouseCapture)?;
        modes::set_pager_active(true);
        self.in_pager = true;
        self.valid = false;
        Ok(())
    }

    pub fn leave_pager(&mut self) -> io::Result<()> {
        queue!(self.backend, DisableMouseCapture, LeaveAlternateScreen)?;
        modes::set_pager_active(false);
        self.in_pager = false;
        self.valid = false;
        Ok(())
    }

    pub fn draw_pager(&mut self, render: impl FnOnce(Rect, &mut Buffer)) -> io::Result<()> {
        let area = Rect::new(0, 0, self.size.width, self.size.height);
        self.paint(area, |area, buf| {
            render(area, buf);
            None
        })
    }

    fn paint(
        &mut self,
        area: Rect,
        render: impl FnOnce(Rect, &mut Buffer) -> Option<Position>,
    ) -> io::Result<()> {
        let mut frame = Buffer::empty(area);
        let cursor = render(area, &mut frame);
        if !self.valid || self.previous.area != area {
            queue!(
                self.backend,
                MoveTo(0, area.y),
                Clear(ClearType::FromCursorDown)
            )?;
            self.previous = Buffer::empty(area);
        }
        self.backend.draw(self.previous.diff(&frame).into_iter())?;
        self.previous = frame;
        self.valid = true;
        // The cursor always ends somewhere known, so a resize can find the live area again.
        let (position, visible) = match cursor {
            Some(position) => (position, true),
            None => (Position::new(area.x, area.y), false),
        };
        self.cursor_offset = position.y.saturating_sub(area.y);
        queue!(self.backend, MoveTo(position.x, position.y))?;
        if visible {
            queue!(self.backend, Show)
        } else {
            queue!(self.backend, Hide)
        }
    }

    /// Leaves the screen for the shell: the live area is erased and the cursor put where it
    /// began, right under the transcript.
    pub fn finish(&mut self) -> io::Result<()> {
        if self.in_pager {
            self.leave_pager()?;
        }
        queue!(
            self.backend,
            MoveTo(0, self.viewport.y),
            Clear(ClearType::FromCursorDown),
            Show
        )?;
        Backend::flush(&mut self.backend)
    }
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
            None
        })?;
        screen.end_frame()
    }

    #[test]
    fn lines_go_above_the_live_area_then_into_the_scrollback()
    -> Result<(), Box<dyn std::error::Error>> {
        let output = Output::default();
        let mut screen = Screen::new(output.clone(), Size::new(20, 5), 1);
        frame(&mut screen, &[], &["live one", "live two"])?;
        let parser = parse(&output, 5, 20)?;
        assert_eq!(parser.screen().contents(), "\nlive one\nlive two");

        let history: Vec<String> = (1..=6).map(|n| format!("line {n}")).collect();
        let history: Vec<&str> = history.iter().map(String::as_str).collect();
        frame(&mut screen, &history, &["live one", "live two"])?;
        let mut parser = parse(&output, 5, 20)?;
        assert_eq!(
            parser.screen().contents(),
            "line 4\nline 5\nline 6\nlive one\nlive two"
        );
        parser.screen_mut().set_scrollback(4);
        assert_eq!(
            parser.screen().contents(),
            "\nline 1\nline 2\nline 3\nline 4"
        );
        Ok(())
    }

    #[test]
    fn a_shrinking_live_area_leaves_no_rows_behind() -> Result<(), Box<dyn std::error::Error>> {
        let output = Output::default();
        let mut screen = Screen::new(output.clone(), Size::new(20, 6), 0);
        frame(&mut screen, &["first"], &["a", "b", "c", "d"])?;
        frame(&mut screen, &["second"], &["e"])?;
        let parser = parse(&output, 6, 20)?;
        assert_eq!(parser.screen().contents(), "first\nsecond\ne");
        Ok(())
    }
}
