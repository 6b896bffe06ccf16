//! Starting, resuming and switching sessions from the app loop: a new session, a stored one
//! (its transcript drawn from the host's replay of it first), the latest of the directory, the
//! picker, the new model a session switched to, and the listings and searches. Everything is
//! asked of the host API, in this process or in `mnemo serve`; the loop awaits the answers like
//! any other effect, except the whole history of a resumed session, which arrives in the
//! background once the prompt is ready.

use std::io::Write;
use std::time::Instant;

use tokio::sync::oneshot;

use super::TuiStart;
use super::app::App;
use super::cells::{Cell, NoticeLevel};
use super::history::{self, Restored};
use super::picker::{PickerCancel, SessionPicker};
use crate::config::CliOverrides;
use crate::host::api::History;
use crate::host::api::SearchAsk;
use crate::host::replay::RECENT_MESSAGES;
use crate::host::{Delivery, OpenOptions};
use crate::host::{LaunchError, SessionChoice};
use crate::memory::{ArchiveSearch, StoreError};
use crate::protocol::{Event, ToolStatus};
use crate::tools::memory::format_hits;

/// Sessions the picker lists.
const PICKER_LIMIT: usize = 200;
/// Archive hits `/memory` shows.
const MEMORY_HITS: usize = 10;
/// Sessions `/sessions` lists.
const LISTED_SESSIONS: usize = 20;

/// The cells of a whole stored session, read in the background.
pub(super) type HistoryRead = Result<Result<Vec<Cell>, LaunchError>, oneshot::error::RecvError>;

/// A resumed session's whole history on its way to the pager.
pub(super) struct FullHistory {
    /// The transcript cells (the recent ones shown on resume) it replaces.
    shown: usize,
    pub(super) cells: oneshot::Receiver<Result<Vec<Cell>, LaunchError>>,
}

impl<W: Write> App<W> {
    /// The first session, as the command line asked.
    pub(super) async fn open(&mut self, start: TuiStart) {
        match start {
            TuiStart::Pick => self.open_picker(PickerCancel::NewSession).await,
            TuiStart::Session(SessionChoice::New) => self.start_new().await,
            TuiStart::Session(SessionChoice::Resume(id)) => self.resume(id).await,
            TuiStart::Session(SessionChoice::Continue) => {
                let cwd = self.loaded.workspace_str();
                let latest = self.host.latest_session(cwd).await;
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
        self.full_history = None;
        self.state.begin_new_session();
        self.start_new().await;
    }

    async fn start_new(&mut self) {
        self.open_session(SessionChoice::New).await;
    }

    /// Prepares the chosen session; the set-up panel stands in for it when that fails.
    pub(super) async fn open_session(&mut self, choice: SessionChoice) {
        if let Err(error) = self.prepare(choice.clone(), self.cli.clone()).await {
            self.offline_choice = Some(choice);
            self.not_prepared(&error).await;
        }
    }

    /// Shows the stored session's recent turns, then continues it; the whole history follows
    /// for the pager. The current session goes on when the stored one cannot be read.
    pub(super) async fn resume(&mut self, wanted: String) {
        let found = self.host.history(wanted, Some(RECENT_MESSAGES)).await;
        let History {
            session: row,
            replay,
        } = match found {
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
        self.full_history = None;
        if !self.state.transcript.is_empty() {
            self.state.forget_session();
        }
        let restored = Restored::from(replay);
        let shown = restored.cells.len();
        let earlier = restored.earlier;
        self.state.show_history(&row.title, restored);
        self.open_session(SessionChoice::Resume(row.id.clone()))
            .await;
        if earlier > 0 {
            self.read_full_history(row.id, shown);
        }
    }

    /// Reads every message of the session (archived ones included) from the host, and hands
    /// the cells to the loop.
    fn read_full_history(&mut self, id: String, shown: usize) {
        let host = self.host.clone();
        let (sender, cells) = oneshot::channel();
        tokio::spawn(async move {
            let read = host.history(id, None).await;
            let _ = sender.send(read.map(|read| history::cells(&read.replay.events)));
        });
        self.full_history = Some(FullHistory { shown, cells });
    }

    /// The whole history of the resumed session arrived (or could not be read).
    pub(super) fn history_arrived(&mut self, read: HistoryRead) {
        let Some(pending) = self.full_history.take() else {
            return;
        };
        match read {
            Ok(Ok(cells)) => self.state.replace_history(pending.shown, cells),
            Ok(Err(error)) => {
                let text = format!("The pager holds only the recent messages: {error}");
                self.state.notice(NoticeLevel::Warning, &text);
            }
            // The reading task went away with the runtime.
            Err(_) => {}
        }
    }

    /// Lists the directory's sessions in the picker; `cancel` says what Esc does.
    pub(super) async fn open_picker(&mut self, cancel: PickerCancel) {
        let cwd = self.loaded.workspace_str();
        let current = self.session_id.clone();
        let running = current.clone();
        // Sessions without a message (started and left at once) have nothing to resume.
        let rows = self.host.stored_sessions(Some(cwd), PICKER_LIMIT).await;
        let rows = rows.map(|mut rows| {
            rows.retain(|r| r.message_count > 0 || running.as_ref() == Some(&r.id));
            rows
        });
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

    /// Ctrl+R in the picker: the store keeps the new title and the picker shows it.
    pub(super) async fn rename_session(&mut self, id: String, title: String) {
        match self.host.rename(id, title).await {
            Ok(row) => {
                let short: String = row.id.chars().take(8).collect();
                let text = format!("Session {short} is now titled “{}”", row.title);
                self.state.notice(NoticeLevel::Info, &text);
                if let Some(picker) = self.state.picker.as_mut() {
                    picker.renamed(row);
                }
                self.state.mark_dirty();
            }
            Err(error) => {
                let text = format!("Cannot rename the session: {error}");
                self.state.notice(NoticeLevel::Error, &text);
            }
        }
    }

    /// `/sessions`: the recent sessions of every directory, this one's marked; `/resume`
    /// picks among this directory's.
    pub(super) async fn list_sessions(&mut self) {
        let rows = self.host.stored_sessions(None, LISTED_SESSIONS).await;
        let here = self.loaded.workspace_str();
        let now_ms = chrono::Utc::now().timestamp_millis();
        let text = match rows {
            Ok(rows) => {
                let rows: Vec<_> = rows.into_iter().filter(|r| r.message_count > 0).collect();
                match rows.is_empty() {
                    true => "No stored sessions yet".to_string(),
                    false => sessions_text(&rows, &here, now_ms),
                }
            }
            Err(error) => format!("Cannot list the sessions: {error}"),
        };
        self.state.notice(NoticeLevel::Info, &text);
    }

    /// An event of the running session. After `/model` took effect, a session started
    /// later (`/clear`) uses the new model too; the overrides that described the model mnemo
    /// started with (provider, base URL, key variable) are dropped.
    pub(super) fn agent_event(&mut self, event: Event, now: Instant) {
        // A session that opens, a turn that ends or a schedule made: look for notices again.
        let made_schedule = matches!(
            &event,
            Event::ToolCallFinished { name, status: ToolStatus::Ok, .. } if name == "schedule_create"
        );
        if made_schedule
            || matches!(
                event,
                Event::SessionStarted { .. } | Event::TurnFinished { .. }
            )
        {
            self.watch_notices = true;
        }
        if let Event::ModelChanged { model, .. } = &event {
            self.cli = CliOverrides {
                model: Some(model.clone()),
                provider: None,
                base_url: None,
                api_key_env: None,
                ..self.cli.clone()
            };
        }
        self.state.handle_event(event, now);
    }

    /// `/memory QUERY`: the best archive entries, as a note.
    /// `/skills`: every skill found, with where it comes from, its uses and its state.
    pub(super) async fn list_skills(&mut self) {
        let Some(config_dir) = self.loaded.dirs.config.clone() else {
            self.state
                .notice(NoticeLevel::Info, "Skills: no config directory, so none");
            return;
        };
        let set = crate::skills::discover(&self.loaded.workspace, &config_dir);
        let stats = self.host.skill_stats().await.unwrap_or_default();
        let text = match set.is_empty() {
            true => "Skills: none yet (folders with a SKILL.md in .agents/skills, \
                     .mnemo/skills, .claude/skills or the config dir's skills/)"
                .to_string(),
            false => {
                let lines: Vec<String> = set
                    .iter()
                    .map(|skill| {
                        let stat = stats.iter().find(|s| s.name == skill.name);
                        let origin = stat.map_or("person", |s| s.origin.as_str());
                        let state = match stat {
                            Some(s) if s.suspect => " · suspect",
                            Some(s) if s.stale => " · stale",
                            Some(s) if s.pinned => " · pinned",
                            _ => "",
                        };
                        let uses = stat.map_or(0, |s| s.loads);
                        format!(
                            "  {} · {} · {origin} · {uses} uses{state}",
                            skill.name,
                            skill.source.as_str()
                        )
                    })
                    .collect();
                format!("Skills ({}):\n{}", set.len(), lines.join("\n"))
            }
        };
        self.state.notice(NoticeLevel::Info, &text);
    }

    /// `/capabilities`: what the session offers now, then what the store holds.
    /// `/schedule`: what `mnemo serve` runs, as `mnemo schedule list` prints it.
    pub(super) async fn list_schedules(&mut self) {
        let workspace = self.loaded.workspace_str();
        match self.host.schedules(workspace).await {
            Ok(text) => self.state.notice(NoticeLevel::Info, &text),
            Err(error) => {
                let text = format!("Cannot read the schedules: {error}");
                self.state.notice(NoticeLevel::Error, &text);
            }
        }
    }

    pub(super) async fn list_capabilities(&mut self) {
        let stored = self.host.capabilities().await;
        let offered = match self.state.offered_tools.is_empty() {
            true => "none (a capability_query or capability_create brings them)".to_string(),
            false => self.state.offered_tools.join(", "),
        };
        let text = match stored {
            Ok(stored) if stored.is_empty() => {
                format!("Capability tools offered now: {offered}\nStored: none yet")
            }
            Ok(stored) => {
                let lines: Vec<String> = stored
                    .iter()
                    .map(|c| {
                        let pin = if c.pinned { " · pinned" } else { "" };
                        let about = c.description.lines().next().unwrap_or_default();
                        format!(
                            "  {} v{} · {} uses{pin} — {about}",
                            c.name, c.version, c.access_count
                        )
                    })
                    .collect();
                format!(
                    "Capability tools offered now: {offered}\nStored ({}; mnemo capabilities \
                     show NAME for the code):\n{}",
                    stored.len(),
                    lines.join("\n")
                )
            }
            Err(error) => format!("Cannot read the capabilities: {error}"),
        };
        self.state.notice(NoticeLevel::Info, &text);
    }

    pub(super) async fn search_memory(&mut self, query: String) {
        let ask = SearchAsk {
            query: query.clone(),
            limit: MEMORY_HITS,
            workspace: None,
            database: None,
            model: None,
            except_session: self.session_id.clone(),
        };
        let found = self.host.search(ask).await;
        if let Ok(ArchiveSearch {
            keyword_only: Some(why),
            ..
        }) = &found
        {
            let text = format!("Keyword results only: {why}");
            self.state.notice(NoticeLevel::Warning, &text);
        }
        match found.map(|found| found.hits) {
            Ok(hits) if hits.is_empty() => {
                let text = format!("Nothing in the archive matches “{query}”");
                self.state.notice(NoticeLevel::Info, &text);
            }
            Ok(hits) => {
                let text = format!("Archive entries for “{query}”:\n{}", format_hits(&hits));
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
        // The TUI answers the agent's questions, in the mode the user last chose.
        let options = OpenOptions {
            approval_mode: Some(self.state.status.approval_mode),
            questions: true,
            delivery: Delivery::Wait,
        };
        let attached = self.host.open(&self.loaded, &cli, choice, options).await?;
        self.session_id = Some(attached.session.clone());
        self.state.first_run = None;
        self.agent = Some(attached);
        Ok(())
    }

    /// No session could be started. A session another mnemo holds is said as it is, with
    /// the way to it when `mnemo serve` holds it: nothing needs setting up. Anything else
    /// opens the set-up panel.
    async fn not_prepared(&mut self, error: &LaunchError) {
        let LaunchError::Session(busy @ StoreError::SessionBusy { id, pid, .. }) = error else {
            let panel = self.first_run_panel(error);
            self.state.set_offline(panel);
            return;
        };
        let serving = matches!(self.host.daemon().await, Ok(Some(daemon)) if daemon == *pid);
        let text = match serving {
            true => {
                let short: String = id.chars().take(8).collect();
                format!(
                    "Session {short} is busy in mnemo serve. `mnemo attach {short}` continues \
                     it there, `mnemo sessions export {short}` prints it, `mnemo sessions fork \
                     {short}` copies it into a new session"
                )
            }
            false => busy.to_string(),
        };
        // No session runs here, but nothing is wrong with the model either.
        self.state.return_waiting();
        self.state.status.activity = super::status::Activity::Idle;
        self.state.notice(
            NoticeLevel::Error,
            &format!("{text}; /clear starts a new session"),
        );
    }

    /// A session could not be opened as asked: say why and start a new one.
    async fn fail_to_new(&mut self, error: &LaunchError) {
        let text = format!("{error}; this is a new session");
        self.state.notice(NoticeLevel::Error, &text);
        self.start_new().await;
    }
}

/// The `/sessions` listing: id, age, size, title and, for other directories, where.
fn sessions_text(rows: &[crate::memory::types::SessionRow], here: &str, now_ms: i64) -> String {
    let mut text = String::from(
        "Recent sessions of every directory (/resume picks one of this directory's; \
         mnemo -C DIR --resume ID another's):",
    );
    for row in rows {
        let short: String = row.id.chars().take(8).collect();
        let title = match row.title.trim() {
            "" => "(untitled)",
            title => title,
        };
        let place = match row.cwd == here {
            true => "here".to_string(),
            false => row.cwd.clone(),
        };
        text.push_str(&format!(
            "\n  {short}  {:>10}  {:>5} msgs  {title} · {place}",
            super::picker::ago(now_ms, row.updated_at),
            row.message_count
        ));
    }
    text
}
