//! Starting, resuming and switching sessions from the app loop: a new session, a stored one
//! (its transcript rebuilt from the store first), the latest of the directory, the picker,
//! another model for the same session, and archive searches. Store reads run on the store
//! thread; the loop awaits them like any other effect.

use std::io::Write;

use super::TuiStart;
use super::app::App;
use super::cells::NoticeLevel;
use super::first_run::FirstRun;
use super::history::{RECENT_MESSAGES, restore};
use super::picker::{PickerCancel, SessionPicker};
use crate::agent;
use crate::config::CliOverrides;
use crate::launch::{self, LaunchError, SessionChoice};
use crate::memory::types::{SessionRow, StoredMessage};
use crate::tools::memory::format_hits;

/// Sessions the picker lists.
const PICKER_LIMIT: usize = 200;
/// Archive hits `/memory` shows.
const MEMORY_HITS: usize = 10;

impl<W: Write> App<W> {
    /// The first session, as the command line asked.
    pub(super) async fn open(&mut self, start: TuiStart) {
        match start {
            TuiStart::Pick => self.open_picker(PickerCancel::NewSession).await,
            TuiStart::Session(SessionChoice::New) => self.start_new().await,
            TuiStart::Session(SessionChoice::Resume(id)) => self.resume(id).await,
            TuiStart::Session(SessionChoice::Continue) => {
                let cwd = self.loaded.workspace_str();
                let latest = self.with_store(move |db| db.latest_session(&cwd)).await;
                match latest {
                    Ok(Some(row)) => self.resume(row.id).await,
                    Ok(None) => {
                        let text =
                            "There is no earlier session in this directory; this is a new one";
                        self.state.notice(NoticeLevel::Info, text);
                        self.start_new().await;
                    }
                    Err(error) => self.fail_to_new(&error).await,
                }
            }
        }
    }

    /// `/clear`, or Esc in the picker at start.
    pub(super) async fn new_session(&mut self) {
        self.shutdown_agent().await;
        self.state.begin_new_session();
        self.start_new().await;
    }

    async fn start_new(&mut self) {
        if let Err(error) = self.prepare(SessionChoice::New, self.cli.clone()).await {
            self.state.set_offline(FirstRun::from_error(&error));
        }
    }

    /// Shows the stored session's transcript, then continues it. The current session goes
    /// on when the stored one cannot be read.
    pub(super) async fn resume(&mut self, wanted: String) {
        let t0 = std::time::Instant::now();
        let found = self
            .with_store(move |db| {
                let row = db.session(&wanted)?;
                let messages = db.all_messages(&row.id)?;
                Ok((row, messages))
            })
            .await;
        let (row, messages): (SessionRow, Vec<StoredMessage>) = match found {
            Ok(found) => found,
            Err(error) => {
                if self.agent.is_some() {
                    let text = format!("Cannot resume that session: {error}");
                    self.state.notice(NoticeLevel::Error, &text);
                } else {
                    self.fail_to_new(&error).await;
                }
                return;
            }
        };
        if self.agent.is_some() && self.session_id.as_deref() == Some(row.id.as_str()) {
            self.state
                .notice(NoticeLevel::Info, "That is the session running now");
            return;
        }
        self.shutdown_agent().await;
        if !self.state.transcript.is_empty() {
            self.state.forget_session();
        }
        let t1 = t0.elapsed();
        let r = restore(&messages, RECENT_MESSAGES);
        let t2 = t0.elapsed();
        self.state.show_history(&row.title, r);
        let t3 = t0.elapsed();
        let choice = SessionChoice::Resume(row.id);
        if let Err(error) = self.prepare(choice, self.cli.clone()).await {
            self.state.set_offline(FirstRun::from_error(&error));
        }
        let t4 = t0.elapsed();
        let _ = std::fs::write(
            "/tmp/resume_timing.txt",
            format!("{t1:?} {t2:?} {t3:?} {t4:?}"),
        );
    }

    /// Lists the directory's sessions in the picker; `cancel` says what Esc does.
    pub(super) async fn open_picker(&mut self, cancel: PickerCancel) {
        let cwd = self.loaded.workspace_str();
        let current = self.session_id.clone();
        let running = current.clone();
        // Sessions without a message (started and left at once) have nothing to resume.
        let rows = self
            .with_store(move |db| {
                let mut rows = db.list_sessions(Some(&cwd), PICKER_LIMIT)?;
                rows.retain(|r| r.message_count > 0 || running.as_ref() == Some(&r.id));
                Ok(rows)
            })
            .await;
        match rows {
            Ok(rows) if !rows.is_empty() => {
                let now_ms = chrono::Utc::now().timestamp_millis();
                self.state.picker = Some(SessionPicker::new(rows, now_ms, current, cancel));
                self.state.mark_dirty();
            }
            Ok(_) => {
                let text = "There are no stored sessions in this directory";
                self.state.notice(NoticeLevel::Info, text);
                if cancel == PickerCancel::NewSession {
                    self.start_new().await;
                }
            }
            Err(error) if cancel == PickerCancel::NewSession => self.fail_to_new(&error).await,
            Err(error) => {
                let text = format!("Cannot list the sessions: {error}");
                self.state.notice(NoticeLevel::Error, &text);
            }
        }
    }

    /// `/model NAME`: the same session goes on with another model. The overrides that
    /// described the model mnemo started with (provider, base URL, key variable) are dropped.
    /// When the new model cannot be prepared, the session goes on with the old one.
    pub(super) async fn switch_model(&mut self, name: String) {
        let cli = CliOverrides {
            model: Some(name.clone()),
            provider: None,
            base_url: None,
            api_key_env: None,
            ..self.cli.clone()
        };
        self.shutdown_agent().await;
        let choice = match &self.session_id {
            Some(id) => SessionChoice::Resume(id.clone()),
            None => SessionChoice::New,
        };
        let Err(error) = self.prepare(choice.clone(), cli.clone()).await else {
            self.cli = cli;
            return;
        };
        let text = format!("Cannot switch to {name}: {error}");
        self.state.notice(NoticeLevel::Error, &text);
        if self.session_id.is_some()
            && let Err(error) = self.prepare(choice, self.cli.clone()).await
        {
            self.state.set_offline(FirstRun::from_error(&error));
        }
    }

    /// `/memory QUERY`: the best archive entries, as a note.
    pub(super) async fn search_memory(&mut self, query: String) {
        let wanted = query.clone();
        let hits = self
            .with_store(move |db| db.search_archive(&wanted, None, MEMORY_HITS))
            .await;
        match hits {
            Ok(hits) if hits.is_empty() => {
                let text = format!("Nothing in the archive matches “{query}”");
                self.state.notice(NoticeLevel::Info, &text);
            }
            Ok(hits) => {
                let text = format!(
                    "Archive entries for “{query}” (memory_open reads one in full):\n{}",
                    format_hits(&hits)
                );
                self.state.notice(NoticeLevel::Info, &text);
            }
            Err(error) => {
                let text = format!("Cannot search the archive: {error}");
                self.state.notice(NoticeLevel::Error, &text);
            }
        }
    }

    /// Prepares the session and starts its agent.
    async fn prepare(
        &mut self,
        choice: SessionChoice,
        cli: CliOverrides,
    ) -> Result<(), LaunchError> {
        let session = launch::prepare_session_with(&self.loaded, &cli, choice).await?;
        self.session_id = Some(session.id.clone());
        self.state.first_run = None;
        self.agent = Some(agent::spawn(session));
        Ok(())
    }

    /// A session could not be opened as asked: say why and start a new one.
    async fn fail_to_new(&mut self, error: &LaunchError) {
        let text = format!("{error}; this is a new session");
        self.state.notice(NoticeLevel::Error, &text);
        self.start_new().await;
    }

    async fn with_store<R, F>(&self, job: F) -> Result<R, LaunchError>
    where
        R: Send + 'static,
        F: FnOnce(&mut crate::memory::Db) -> Result<R, crate::memory::StoreError> + Send + 'static,
    {
        Ok(self.loaded.store()?.call(job).await?)
    }
}
