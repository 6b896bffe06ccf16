//! Rewind: before the agent's first change to a file in a turn, the file's content (or the
//! fact that it did not exist) is kept in the data directory, so that a turn and everything
//! after it can be taken back without git. What is kept is bounded: files over a size are
//! named as not kept, and a session's and all sessions' snapshots are pruned oldest first.
//! Shell commands are recorded by name only: their side effects cannot be taken back.

pub mod apply;
mod journal;
mod keeper;
mod restore;

pub use journal::{Before, KeptFile, TurnEntry};
pub use keeper::{Keeper, Limits, forget_session};
pub use restore::FilesRestored;

use std::path::PathBuf;

#[derive(Debug, thiserror::Error)]
pub enum RewindError {
    #[error("rewind data {path}: {source}")]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("rewind journal {path} is damaged: {source}")]
    Journal {
        path: PathBuf,
        source: serde_json::Error,
    },
    #[error(
        "turn {0} is not recorded for rewinding (turns from before mnemo kept files, or pruned \
         as the oldest); list the turns with `/rewind` or `mnemo sessions rewind ID`"
    )]
    UnknownTurn(u64),
}

/// The turns a rewind can go back to, one a line, for front ends that print them.
pub fn describe_turns(turns: &[crate::protocol::TurnSummary]) -> String {
    if turns.is_empty() {
        return "no turns to rewind yet".into();
    }
    let mut lines = vec!["turns (rewind one with its number):".to_string()];
    for turn in turns {
        let prompt = crate::text::clip(crate::text::first_line(&turn.prompt), 60);
        let mut line = format!("  {:>3}  {prompt}", turn.turn);
        if !turn.files.is_empty() {
            line.push_str(&format!(
                "  [{} changed: {}]",
                turn.files.len(),
                turn.files.join(", ")
            ));
        }
        if !turn.commands.is_empty() {
            line.push_str(&format!("  [{} commands]", turn.commands.len()));
        }
        if !turn.conversation {
            line.push_str("  (compacted: files only)");
        }
        lines.push(line);
    }
    lines.join("\n")
}

#[cfg(test)]
mod tests;
