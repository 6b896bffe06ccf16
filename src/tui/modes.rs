//! Terminal modes and their restoration. Raw mode, bracketed paste and the keyboard
//! enhancement that tells Shift+Enter from Enter are switched on for the session and off
//! again on every way out: a normal exit (the guard's drop), a fatal panic (the crash boundary
//! restores them before it reports) and a signal (the app loop ends and drops the guard).

use std::io::{self, Write};
use std::sync::Once;
use std::sync::atomic::{AtomicBool, Ordering};

use crossterm::cursor::Show;
use crossterm::event::{
    DisableBracketedPaste, DisableMouseCapture, EnableBracketedPaste, KeyboardEnhancementFlags,
    PopKeyboardEnhancementFlags, PushKeyboardEnhancementFlags,
};
use crossterm::execute;
use crossterm::terminal::{LeaveAlternateScreen, disable_raw_mode, enable_raw_mode};

static ACTIVE: AtomicBool = AtomicBool::new(false);
static PAGER: AtomicBool = AtomicBool::new(false);
static HOOK: Once = Once::new();

/// Holds the terminal in the session's modes; dropping it restores them.
pub struct ModesGuard {
    _private: (),
}

impl ModesGuard {
    pub fn enable() -> io::Result<Self> {
        install_panic_hook();
        enable_raw_mode()?;
        ACTIVE.store(true, Ordering::SeqCst);
        let flags = KeyboardEnhancementFlags::DISAMBIGUATE_ESCAPE_CODES;
        let mut out = io::stdout();
        if let Err(err) = execute!(
            out,
            EnableBracketedPaste,
            PushKeyboardEnhancementFlags(flags)
        ) {
            restore();
            return Err(err);
        }
        Ok(Self { _private: () })
    }
}

impl Drop for ModesGuard {
    fn drop(&mut self) {
        restore();
    }
}

/// Records whether the alternate screen and mouse capture are on, so a restore after a
/// panic leaves them too.
pub fn set_pager_active(active: bool) {
    PAGER.store(active, Ordering::SeqCst);
}

/// Puts the terminal back as the shell expects it. Safe to call more than once.
pub fn restore() {
    if !ACTIVE.swap(false, Ordering::SeqCst) {
        return;
    }
    let mut out = io::stdout();
    if PAGER.swap(false, Ordering::SeqCst) {
        let _ = execute!(out, DisableMouseCapture, LeaveAlternateScreen);
    }
    let _ = execute!(
        out,
        PopKeyboardEnhancementFlags,
        DisableBracketedPaste,
        Show
    );
    let _ = disable_raw_mode();
    let _ = out.flush();
}

/// A panic that ends mnemo restores the terminal before anything is printed.
fn install_panic_hook() {
    HOOK.call_once(|| {
        crate::crash::install(None);
        crate::crash::on_fatal(restore);
    });
}
