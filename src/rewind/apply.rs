//! A rewind's steps shared by the session (`Op::Rewind`) and `mnemo sessions rewind`: check
//! what can go back, put the files back, and name the commands. The caller takes the
//! conversation back in its store and then calls [`finish`].

use std::path::Path;

use super::{Keeper, RewindError, TurnEntry};
use crate::protocol::{RewindReport, RewindWhat, TurnSummary};

/// A rewind that was checked: the turn, and where the conversation is cut (when it is).
#[derive(Debug)]
pub struct Planned {
    pub entry: TurnEntry,
    /// The conversation goes back to before this message.
    pub cut_at: Option<i64>,
}

/// Checks that turn `turn` can be rewound as `what`; `first_active` is the first message
/// still in the working set (compaction moved the ones before it to the archive).
pub fn plan(
    keeper: &Keeper,
    turn: u64,
    what: RewindWhat,
    first_active: Option<i64>,
) -> Result<Planned, String> {
    let entry = keeper.turn(turn).map_err(|e| e.to_string())?;
    let cut_at = match (what.conversation(), entry.first_seq) {
        (false, _) => None,
        (true, Some(seq)) if seq >= first_active.unwrap_or(seq) => Some(seq),
        (true, Some(_)) => {
            return Err(format!(
                "the conversation of turn {turn} was compacted into a summary and cannot be \
                 taken back; rewind its files only"
            ));
        }
        (true, None) => {
            return Err(format!(
                "turn {turn} was not seen starting, so its conversation cannot be taken back; \
                 rewind its files only"
            ));
        }
    };
    Ok(Planned { entry, cut_at })
}

/// Puts the files back (when `what` says so) and names the commands run since.
pub fn restore(
    keeper: &Keeper,
    workspace: &Path,
    planned: &Planned,
    what: RewindWhat,
) -> Result<RewindReport, RewindError> {
    let turn = planned.entry.turn;
    let mut report = RewindReport {
        turn,
        commands: keeper.commands_since(turn)?,
        ..RewindReport::default()
    };
    if what.files() {
        let files = keeper.restore_files(workspace, turn)?;
        report.restored = files.restored;
        report.removed = files.removed;
        report.not_restored = files.not_restored;
    }
    Ok(report)
}

/// After the conversation was cut: the later turns are forgotten and the prompt goes back to
/// the person.
pub fn finish(
    keeper: &Keeper,
    planned: Planned,
    report: &mut RewindReport,
) -> Result<(), RewindError> {
    if planned.cut_at.is_some() {
        keeper.forget_since(planned.entry.turn)?;
        report.prompt = Some(planned.entry.prompt);
    }
    Ok(())
}

/// The recorded turns as front ends list them.
pub fn summaries(
    keeper: &Keeper,
    first_active: Option<i64>,
) -> Result<Vec<TurnSummary>, RewindError> {
    let first_active = first_active.unwrap_or(i64::MIN);
    Ok(keeper
        .turns()?
        .into_iter()
        .map(|entry| TurnSummary {
            turn: entry.turn,
            conversation: entry.first_seq.is_some_and(|seq| seq >= first_active),
            prompt: entry.prompt,
            started_at: entry.started_at,
            files: entry.files.into_iter().map(|f| f.path).collect(),
            commands: entry.commands,
        })
        .collect())
}
