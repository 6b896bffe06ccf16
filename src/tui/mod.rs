//! The interactive front end: `mnemo` with no subcommand. It speaks only the protocol (ops
//! out, events in). The model (`state`) is updated by events and keys and knows nothing of
//! the terminal; views render it into buffers; `app` runs the loop and owns the channels.

pub mod agents;
mod app;
pub mod approval;
pub mod cells;
pub mod composer;
mod diff;
mod diff_highlight;
mod diff_hunks;
pub mod filter;
pub mod first_run;
pub mod highlight;
pub mod history;
mod input;
mod lifecycle;
pub mod live;
pub mod markdown;
mod markdown_code;
mod markdown_table;
pub mod model_picker;
mod modes;
pub mod notify;
pub mod pager;
mod pager_cache;
pub mod pager_view;
pub mod paste;
pub mod picker;
mod plan_offer;
pub mod question;
mod reply;
pub mod rewind_picker;
pub mod setup;
mod setup_apply;
pub mod slash;
pub mod start_questions;
pub mod state;
pub mod status;
mod stream;
mod switch;
mod term_events;
mod terminal;
mod todo_panel;
pub mod tool_pane;
pub mod wrap;

use std::io::{self, BufWriter};
use std::sync::Arc;

use ratatui::layout::Size;

use crate::config::CliOverrides;
use crate::host::{HostApi, Loaded, SessionChoice};
use crate::signals::Stop;

#[derive(Debug, thiserror::Error)]
pub enum TuiError {
    #[error("the terminal failed: {0}")]
    Terminal(#[from] io::Error),
}

/// How the interactive session begins.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TuiStart {
    /// A new session, a stored one (its transcript shown again) or the directory's latest.
    Session(SessionChoice),
    /// The picker of this directory's sessions (`--resume` without an id).
    Pick,
}

/// Runs the interactive session until the user quits. A session that cannot be prepared
/// (no API key, a bad script) still opens and shows how to configure a provider.
/// `loaded` is the configuration `host` was composed with. Returns the signal that stopped
/// the session, `None` when the user quit.
pub async fn run(
    loaded: Arc<Loaded>,
    cli: CliOverrides,
    start: TuiStart,
    host: Arc<dyn HostApi>,
) -> Result<Option<Stop>, TuiError> {
    highlight::preload();
    let guard = modes::ModesGuard::enable()?;
    let (width, height) = terminal::window_size()?;
    let out = BufWriter::with_capacity(64 * 1024, io::stdout());
    let screen = terminal::Screen::new(out, Size::new(width, height));
    let served = host.served();
    let mut app = app::App::new(screen, loaded, cli, host);
    let result = app.run(start).await;
    let saved = app.saved_session();
    let finished = app.finish().await;
    drop(guard);
    if let Some(id) = saved {
        match served {
            true => println!("{}", detach_line(&id)),
            false => println!("{}", exit_line(&id)),
        }
    }
    let stopped = result?;
    finished?;
    Ok(stopped)
}

/// What mnemo says as it exits after a session with messages: how to come back to it.
pub fn exit_line(session_id: &str) -> String {
    let short: String = session_id.chars().take(8).collect();
    format!("Session {short} saved · mnemo --resume {short}")
}

/// What `mnemo attach` says as it leaves a served session with messages: the daemon keeps
/// it (and its lease), so attaching again is the way back.
pub fn detach_line(session_id: &str) -> String {
    let short: String = session_id.chars().take(8).collect();
    format!("Detached; session {short} goes on in mnemo serve · mnemo attach {short}")
}
