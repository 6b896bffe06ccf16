//! `mnemo sessions rewind ID [TURN]`: lists a session's turns, or takes back a turn and every
//! later one (its files, its conversation, or both) as `/rewind` does, while no other process
//! has the session open.

use std::io::Write;
use std::path::PathBuf;

use super::CommandError;
use crate::host::Loaded;
use crate::memory::session_lease::SessionLease;
use crate::protocol::RewindWhat;
use crate::rewind::{Keeper, Limits, apply, describe_turns};

pub async fn rewind(
    loaded: &Loaded,
    id: &str,
    turn: Option<u64>,
    what: RewindWhat,
    out: &mut impl Write,
) -> Result<(), CommandError> {
    let store = loaded.store()?;
    let root = loaded.rewind_root().ok_or_else(|| {
        CommandError::Usage("no data directory: pass --db PATH to find the session".into())
    })?;
    let wanted = id.to_string();
    let row = store.call(move |db| db.session(&wanted)).await?;
    // Held while files and messages change: a session open elsewhere is refused.
    let _lease = SessionLease::acquire(&store, &row.id).await?;
    let session = row.id.clone();
    let first_active = store
        .call(move |db| Ok(db.active_messages(&session)?.first().map(|m| m.seq)))
        .await?;
    let keeper = Keeper::new(root, &row.id, Limits::default());
    let Some(turn) = turn else {
        let turns = apply::summaries(&keeper, first_active)?;
        writeln!(out, "{}", describe_turns(&turns))?;
        return Ok(());
    };
    let planned = apply::plan(&keeper, turn, what, first_active).map_err(CommandError::Usage)?;
    let workspace = PathBuf::from(&row.cwd);
    let mut report = apply::restore(&keeper, &workspace, &planned, what)?;
    if let Some(cut_at) = planned.cut_at {
        let session = row.id.clone();
        let context = planned.entry.context.clone();
        store
            .call(move |db| {
                db.delete_messages_from(&session, cut_at)?;
                // The nested instruction files the conversation had then.
                match context {
                    Some(value) => {
                        db.kv_set(&crate::memory::sessions::nested_key(&session), &value)
                    }
                    None => Ok(()),
                }
            })
            .await?;
    }
    apply::finish(&keeper, planned, &mut report)?;
    writeln!(out, "{}", report.describe())?;
    if let Some(prompt) = &report.prompt {
        writeln!(out, "the rewound prompt was:\n{prompt}")?;
        writeln!(out, "go on with `mnemo --resume {}`", row.id)?;
    }
    Ok(())
}
