//! What the set-up panel's answers do: the check of a server (one bounded request), the
//! choice written to the user config file, and a session started with it, all without
//! leaving the screen.

use std::io::Write;
use std::sync::Arc;
use std::time::Instant;

use super::app::App;
use super::cells::NoticeLevel;
use super::first_run::FirstRun;
use super::setup::{Offer, SetupAction};
use super::state::{AppState, Effect};
use crate::config::user_file::{self, ServedModel};
use crate::config::{CliOverrides, KeyStatus, select};
use crate::host::{LaunchError, SessionChoice};
use crate::llm::reach;

impl AppState {
    /// Text sent while the set-up panel asks something.
    pub(super) fn answer_setup(&mut self, text: &str) -> Vec<Effect> {
        let Some(setup) = self.first_run.as_mut().and_then(FirstRun::setup_mut) else {
            return Vec::new();
        };
        match setup.answer(text) {
            SetupAction::Ask(prefill) => {
                if let Some(prefill) = prefill {
                    self.composer.restore(&prefill);
                }
                Vec::new()
            }
            SetupAction::Check(url) => vec![Effect::CheckServer(url)],
            SetupAction::Use { name, served } => vec![Effect::UseModel { name, served }],
        }
    }
}

impl<W: Write> App<W> {
    /// The panel for a session that could not be prepared, offering the configured models
    /// whose key is in the environment.
    pub(super) fn first_run_panel(&self, error: &LaunchError) -> FirstRun {
        let env = |name: &str| std::env::var(name).ok();
        let config = &self.loaded.config;
        let offers = config
            .models
            .keys()
            .filter_map(|name| select::named(config, name).ok())
            .filter(|model| !model.is_local())
            .filter_map(|model| match model.key_status(&env) {
                KeyStatus::Available(var) => Some(Offer {
                    name: model.name,
                    var,
                }),
                KeyStatus::Missing(_) | KeyStatus::NotNeeded => None,
            })
            .collect();
        FirstRun::from_error(error).with_offers(offers)
    }

    /// Asks the server at `url` for its models, the panel saying so meanwhile.
    pub(super) async fn check_server(&mut self, url: String) {
        // The wait is bounded; the panel shows what is being checked during it.
        let _ = self.draw(Instant::now());
        let found = reach::probe(&format!("{url}/models"), reach::PROBE_TIMEOUT).await;
        let prefill = self
            .state
            .first_run
            .as_mut()
            .and_then(FirstRun::setup_mut)
            .and_then(|setup| setup.checked(&url, &found));
        if let Some(text) = prefill {
            self.state.composer.restore(&text);
        }
        self.state.mark_dirty();
    }

    /// Writes the choice to the user config file, reads the configuration again and starts a
    /// new session with the chosen model.
    pub(super) async fn use_model(&mut self, name: String, served: Option<ServedModel>) {
        if let Err(why) = self.save_and_reload(&name, served.as_ref()) {
            if let Some(setup) = self.state.first_run.as_mut().and_then(FirstRun::setup_mut) {
                setup.failed(why);
            }
            self.state.mark_dirty();
            return;
        }
        let file = self.loaded.dirs.user_config_file().unwrap_or_default();
        let what = match &served {
            Some(served) => format!(
                "[models.{name}] ({} at {}) and default_model = \"{name}\"",
                served.model, served.base_url
            ),
            None => format!("default_model = \"{name}\""),
        };
        let text = format!("Saved {what} in {}", file.display());
        self.state.notice(NoticeLevel::Info, &text);
        self.start_configured().await;
    }

    fn save_and_reload(&mut self, name: &str, served: Option<&ServedModel>) -> Result<(), String> {
        let file = self
            .loaded
            .dirs
            .user_config_file()
            .ok_or("no config directory is known; set MNEMO_CONFIG_DIR")?;
        user_file::choose_model(&file, name, served).map_err(|e| e.to_string())?;
        // The model the command line named (and failed with) gives way to the chosen one.
        let cli = CliOverrides {
            model: None,
            provider: None,
            base_url: None,
            api_key_env: None,
            ..self.cli.clone()
        };
        let loaded = self
            .loaded
            .for_workspace(&self.loaded.workspace, &cli)
            .map_err(|e| e.to_string())?;
        self.state.models = loaded.config.models.keys().cloned().collect();
        self.state.model_info = super::app::model_info(&loaded.config);
        self.loaded = Arc::new(loaded);
        self.cli = cli;
        Ok(())
    }

    /// Starts the session the panel stood in for: the stored one it was to resume, or a new
    /// one.
    async fn start_configured(&mut self) {
        let choice = self.offline_choice.take().unwrap_or(SessionChoice::New);
        self.state.status.activity = super::status::Activity::Starting;
        self.open_session(choice).await;
        self.state.mark_dirty();
    }
}
