//! `Op::ListTurns` and `Op::Rewind` on the session: the files go back through the rewind
//! keeper, the conversation by deleting its messages from the turn's first one on (in the
//! store first, so `--resume` sees the rewound history).

use std::sync::Arc;

use super::Session;
use crate::protocol::{Event, RewindReport, RewindWhat};
use crate::rewind::{Keeper, RewindError, apply};

/// Why a rewind is refused while a turn runs.
pub(super) const REFUSED_WHILE_RUNNING: &str =
    "a turn is running: interrupt it (Esc) or let it finish, then rewind";

impl Session {
    /// Keeps files before the agent's changes in `keeper` from now on.
    pub fn set_rewind(&mut self, keeper: Arc<Keeper>) {
        self.rewind = Some(keeper);
    }

    /// Records that turn `turn` began with `prompt` as message `first_seq`.
    pub(super) async fn keep_for_rewind(
        &self,
        turn: u64,
        prompt: String,
        first_seq: i64,
        started_at: i64,
    ) {
        let Some(keeper) = self.rewind.clone() else {
            return;
        };
        let context = Some(self.nested.stored());
        let begun =
            blocking(move || keeper.begin_turn_with(turn, &prompt, first_seq, started_at, context))
                .await;
        if let Err(failure) = begun {
            let message = format!("this turn cannot be rewound: {failure}");
            self.emit(Event::Notice { message }).await;
        }
    }

    /// The first message still in the working set: a turn before it was compacted.
    fn first_active_seq(&self) -> Option<i64> {
        self.meta.first().map(|m| m.seq)
    }

    /// `Event::Turns`, or an error saying why there are none.
    pub(super) async fn list_turns(&self) -> Event {
        let Some(keeper) = self.rewind.clone() else {
            return error(no_keeper());
        };
        let first_active = self.first_active_seq();
        match blocking(move || apply::summaries(&keeper, first_active)).await {
            Ok(turns) => Event::Turns { turns },
            Err(message) => error(message),
        }
    }

    /// Takes back turn `turn` and the later ones; `Event::Rewound` or why not.
    pub(super) async fn rewind(&mut self, turn: u64, what: RewindWhat) -> Event {
        match self.try_rewind(turn, what).await {
            Ok(report) => Event::Rewound { what, report },
            Err(message) => error(message),
        }
    }

    async fn try_rewind(&mut self, turn: u64, what: RewindWhat) -> Result<RewindReport, String> {
        let keeper = self.rewind.clone().ok_or_else(no_keeper)?;
        let planned = apply::plan(&keeper, turn, what, self.first_active_seq())?;
        let workspace = self.settings.workspace.clone();
        let (planned, mut report) = blocking({
            let keeper = keeper.clone();
            move || apply::restore(&keeper, &workspace, &planned, what).map(|r| (planned, r))
        })
        .await?;
        if let Some(cut_at) = planned.cut_at {
            self.forget_messages_from(cut_at).await?;
            self.restore_context(planned.entry.context.as_deref())
                .await?;
        }
        blocking(move || apply::finish(&keeper, planned, &mut report).map(|()| report)).await
    }

    /// Deletes the messages from `first_seq` on, in the store and the working set.
    async fn forget_messages_from(&mut self, first_seq: i64) -> Result<(), String> {
        let id = self.id.clone();
        self.services
            .store
            .call(move |db| db.delete_messages_from(&id, first_seq))
            .await
            .map_err(|e| e.to_string())?;
        let cut = self
            .meta
            .iter()
            .position(|m| m.seq >= first_seq)
            .unwrap_or(self.meta.len());
        let gone: Vec<i64> = self.meta[cut..].iter().map(|m| m.seq).collect();
        self.meta.truncate(cut);
        self.history.truncate(cut);
        self.caps.remove(gone);
        self.checkpoint = None;
        if let Err(e) = self.refresh_tools().await {
            let message = format!("could not update the tool list: {e}");
            self.emit(Event::Error { message }).await;
        }
        Ok(())
    }
}

impl Session {
    /// The nested instruction files the conversation had before the rewound turn: those first
    /// read since are read again when the agent next works in their directories.
    async fn restore_context(&mut self, context: Option<&str>) -> Result<(), String> {
        let Some(context) = context else {
            return Ok(());
        };
        self.nested = super::nested_context::NestedContext::from_stored(Some(context));
        let key = crate::memory::sessions::nested_key(&self.id);
        let value = context.to_string();
        self.services
            .store
            .call(move |db| db.kv_set(&key, &value))
            .await
            .map_err(|e| e.to_string())
    }
}

async fn blocking<T: Send + 'static>(
    work: impl FnOnce() -> Result<T, RewindError> + Send + 'static,
) -> Result<T, String> {
    match tokio::task::spawn_blocking(work).await {
        Ok(result) => result.map_err(|e| e.to_string()),
        Err(e) => Err(e.to_string()),
    }
}

fn no_keeper() -> String {
    "rewind is not available: this session keeps no rewind data (no data directory)".into()
}

fn error(message: String) -> Event {
    Event::Error { message }
}
