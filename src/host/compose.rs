//! Turns a workspace and command-line overrides into a ready session: config, store, model,
//! key, provider, tools and system prompt. Every front end starts here.

use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};

use super::providers::{api_key, chain_model};
use crate::agent::{Session, SessionSettings, prompt};
use crate::config::{self, CliOverrides, Config, ConfigError, ConfigSources, Dirs};
use crate::llm::fallback::Cooldowns;
use crate::llm::scripted::ScriptLoadError;
use crate::mcp::{Backoff, McpSettings};
use crate::memory::embed::{self, EmbeddingClient};
use crate::memory::{Store, StoreError};
use crate::sandbox::workspace_check::{self, Broad};
use crate::sandbox::{Confinement, Sandbox};
use crate::tools::ToolRegistry;
use crate::tools::builtin::builtin_tools;
use crate::tools::services::ToolServices;
use crate::tools::skills::SkillLibrary;

#[derive(Debug, thiserror::Error)]
pub enum LaunchError {
    #[error(transparent)]
    Config(#[from] ConfigError),
    #[error("{0}")]
    Served(String),
    #[error(
        "no API key for model `{model}`: set {var} in the environment, or choose another \
         model with --model (`mnemo config` shows which models have a key)"
    )]
    MissingKey { model: String, var: String },
    #[error(transparent)]
    Script(#[from] ScriptLoadError),
    #[error("cannot use workspace {path}")]
    Workspace {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("no data directory could be found for the database; pass --db PATH")]
    NoDataDir,
    /// The cause is in the message and not a `source`, so that a printed chain says it once.
    #[error("session store {path}: {cause}")]
    Store { path: PathBuf, cause: StoreError },
    #[error(transparent)]
    Session(#[from] StoreError),
    #[error("there is no earlier session in {0}; start one with `mnemo run` or `mnemo`")]
    NothingToContinue(String),
    #[error("refusing to start: {reason}. {advice}")]
    BroadWorkspace {
        reason: String,
        advice: &'static str,
    },
}

/// Servers are launched this long after the session announced itself: starting node or
/// python processes takes both cores for a while, and the front end draws its first frames
/// in that time (a ready prompt with three servers: 49 ms at once, 39 ms after 20 ms).
const MCP_START_AFTER: std::time::Duration = std::time::Duration::from_millis(20);

/// Which session a front end works in.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SessionChoice {
    New,
    /// An id or a unique prefix of one.
    Resume(String),
    /// The most recent session of the workspace.
    Continue,
}

/// The loaded configuration, before a model is chosen. The store opens on first use.
pub struct Loaded {
    pub config: Config,
    pub sources: ConfigSources,
    /// mnemo's config and data directories.
    pub dirs: Dirs,
    pub workspace: PathBuf,
    pub db_path: Option<PathBuf>,
    store: OnceLock<Store>,
    embedder: OnceLock<Option<Arc<EmbeddingClient>>>,
    /// Shared by every chain this launch builds, so a model that failed rests everywhere.
    pub(super) cooldowns: Cooldowns,
    /// What this launch's sessions' tools reach beyond the session (the scheduler).
    pub services: Arc<dyn ToolServices>,
}

pub fn load_config(workspace: &Path, cli: &CliOverrides) -> Result<Loaded, LaunchError> {
    load_config_from(&Dirs::from_env(), workspace, cli)
}

/// Like [`load_config`], with mnemo's directories given.
pub fn load_config_from(
    dirs: &Dirs,
    workspace: &Path,
    cli: &CliOverrides,
) -> Result<Loaded, LaunchError> {
    let workspace = workspace
        .canonicalize()
        .map_err(|source| LaunchError::Workspace {
            path: workspace.to_path_buf(),
            source,
        })?;
    let env = |name: &str| std::env::var(name).ok();
    let (config, sources) = config::load(dirs, &workspace, &env, cli)?;
    let db_path = cli
        .db
        .clone()
        .or_else(|| config.memory.db_path.clone())
        .or_else(|| dirs.data.as_ref().map(|dir| dir.join("mnemo.db")));
    Ok(Loaded {
        config,
        sources,
        dirs: dirs.clone(),
        workspace,
        db_path,
        store: OnceLock::new(),
        embedder: OnceLock::new(),
        cooldowns: Cooldowns::default(),
        // The entry point that runs sessions hands in how to reach a scheduler.
        services: Arc::new(crate::tools::services::NoServices),
    })
}

impl Loaded {
    /// Shares `other`'s open store (when it is the same database), embedder, model
    /// cooldowns and tool services: a daemon opening sessions for many workspaces keeps one database connection
    /// and one model, not one per session.
    fn share_from(self, other: &Loaded) -> Loaded {
        if self.db_path == other.db_path
            && let Some(store) = other.store.get()
        {
            let _ = self.store.set(store.clone());
        }
        let same_embedder = self.config.memory.embedding == other.config.memory.embedding;
        if same_embedder && let Some(embedder) = other.embedder.get() {
            let _ = self.embedder.set(embedder.clone());
        }
        Loaded {
            cooldowns: other.cooldowns.clone(),
            services: other.services.clone(),
            ..self
        }
    }

    /// The configuration of another workspace for a session this process hosts (the
    /// daemon's front ends), sharing this one's store, embedder and cooldowns. The store is
    /// opened first so that every such session shares it, and with it one event journal.
    pub fn for_workspace(
        &self,
        workspace: &Path,
        cli: &CliOverrides,
    ) -> Result<Loaded, LaunchError> {
        let _ = self.store();
        load_config_from(&self.dirs, workspace, cli).map(|loaded| loaded.share_from(self))
    }

    /// The session store, opened (and migrated) the first time it is needed.
    pub fn store(&self) -> Result<Store, LaunchError> {
        if let Some(store) = self.store.get() {
            return Ok(store.clone());
        }
        let path = self.db_path.clone().ok_or(LaunchError::NoDataDir)?;
        let store = Store::open(&path).map_err(|cause| LaunchError::Store { path, cause })?;
        Ok(self.store.get_or_init(|| store).clone())
    }

    /// Where sessions keep files for rewinding: `rewind/` beside the database.
    pub fn rewind_root(&self) -> Option<PathBuf> {
        let db = self.db_path.as_ref()?;
        Some(db.with_file_name("rewind"))
    }

    pub fn workspace_str(&self) -> String {
        self.workspace.display().to_string()
    }

    /// The embedder for recall by meaning: the configured one, else the built-in model
    /// when it is installed; `None` leaves recall to keywords.
    pub fn embedder(&self) -> Option<Arc<EmbeddingClient>> {
        self.embedder.get_or_init(|| self.new_embedder()).clone()
    }

    /// A client of its own, not shared with this launch's sessions: the daemon loads the
    /// model for a backfill and lets it go afterwards.
    pub fn new_embedder(&self) -> Option<Arc<EmbeddingClient>> {
        let local = |dir: PathBuf| {
            crate::memory::local_embed::is_installed(&dir)
                .then(|| Arc::new(EmbeddingClient::local(dir)))
        };
        let default_dir = self.dirs.data.as_deref().map(embed::local_model_dir);
        match self.config.memory.embedding.clone() {
            Some(config) if config.kind == embed::EmbeddingKind::Local => {
                local(config.model_dir.or(default_dir)?)
            }
            Some(config) => Some(Arc::new(EmbeddingClient::new(config))),
            None => local(default_dir?),
        }
    }

    /// Why the workspace is too broad for the agent, if it is.
    pub fn broad_workspace(&self) -> Option<Broad> {
        let home = std::env::var_os("HOME").map(PathBuf::from);
        workspace_check::check(
            &self.workspace,
            home.as_deref(),
            &self.config.sandbox.own_dirs,
        )
    }

    /// Whether the person trusted this workspace (`mnemo trust`), with its config file as it
    /// is now when it has one.
    pub fn workspace_trusted(&self) -> bool {
        let fingerprint = config::trust::workspace_config(&self.workspace)
            .map(|(_, fingerprint)| fingerprint)
            .unwrap_or_default();
        config::trust::status(&self.dirs, &self.workspace, Some(&fingerprint))
            == config::trust::Trust::Trusted
    }

    /// The MCP servers of this launch: every configured one, and those a workspace the person
    /// has not trusted defined (listed, never started). Their stderr goes to the data dir.
    pub fn mcp_settings(&self, env_policy: crate::sandbox::env_allow::EnvPolicy) -> McpSettings {
        let servers = self.config.mcp_servers.clone();
        let not_trusted = self
            .sources
            .ignored
            .iter()
            .filter_map(|i| i.key.strip_prefix("mcp_servers."))
            .filter(|name| !name.contains('.') && !servers.contains_key(*name))
            .map(String::from)
            .collect();
        let log_dir = match (&self.dirs.data, &self.db_path) {
            (Some(data), _) => data.join("logs"),
            (None, Some(db)) => db.with_file_name("logs"),
            (None, None) => PathBuf::new(),
        };
        McpSettings {
            servers,
            not_trusted,
            env_policy,
            log_dir,
            backoff: Backoff::default(),
            start_after: MCP_START_AFTER,
        }
    }

    /// Every tool a session gets: the built-ins, the memory and schedule tools, `ask_user`.
    pub fn tools(&self, store: &Store, confinement: Arc<Confinement>) -> ToolRegistry {
        let mut tools = builtin_tools();
        // Shell commands run in this launch's sandbox (its own scratch dir, removed when the
        // session's tools go) when it can be set up; otherwise the built-in shell builds a
        // default one per call.
        let config = self.config.sandbox.config();
        if let Ok(sandbox) = Sandbox::temporary(config, &self.workspace) {
            let sandbox = sandbox.confined(confinement);
            tools.register(crate::tools::shell::Shell::in_sandbox(sandbox));
        }
        crate::tools::memory::register(&mut tools, store, self.embedder());
        let trusted = self.sources.workspace_trust == Some(crate::config::trust::Trust::Trusted);
        crate::tools::schedule::register(
            &mut tools,
            store,
            self.services.clone(),
            self.config.schedules,
            trusted,
        );
        tools.register(crate::tools::turn_report::TurnReport);
        tools.register(crate::tools::ask_user::AskUser);
        if let Some(backend) = self.config.web.search_backend() {
            tools.register(crate::tools::web_search::WebSearch { backend });
        }
        tools.offer_server_search(self.config.web.server_search);
        tools
    }
}

/// Resolves the model, checks its key, and creates or resumes the session.
pub async fn prepare_session_with(
    loaded: &Loaded,
    cli: &CliOverrides,
    choice: SessionChoice,
) -> Result<Session, LaunchError> {
    if let Some(broad) = loaded.broad_workspace()
        && !(cli.broad_workspace && broad.can_confirm())
    {
        let advice = match broad.can_confirm() {
            true => {
                "Start mnemo in a project directory, or pass --broad-workspace if you really \
                 mean to let the agent work here"
            }
            false => "Start mnemo in a project directory",
        };
        return Err(LaunchError::BroadWorkspace {
            reason: broad.describe(&loaded.workspace),
            advice,
        });
    }
    let chain = loaded.chain(cli)?;
    let store = loaded.store()?;
    let confinement = crate::sandbox::Confinement::from_section(&loaded.config.sandbox);
    let (system_prompt, skipped) = prompt::system_prompt(
        &loaded.workspace,
        &confinement,
        loaded.dirs.config.as_deref(),
    )
    .await;
    let settings =
        SessionSettings::from_config(loaded.workspace.clone(), system_prompt, &loaded.config);
    let tools = loaded.tools(&store, settings.approvals.confinement().clone());
    let mut session = match choice {
        SessionChoice::New => Session::create(settings, chain, tools, store, None).await?,
        SessionChoice::Resume(id) => Session::resume(settings, chain, tools, store, &id).await?,
        SessionChoice::Continue => {
            let cwd = loaded.workspace_str();
            let wanted = cwd.clone();
            let latest = store
                .call(move |db| db.latest_session(&wanted))
                .await?
                .ok_or(LaunchError::NothingToContinue(cwd))?;
            Session::resume(settings, chain, tools, store, &latest.id).await?
        }
    };
    session.set_embedder(loaded.embedder());
    session.set_notes_dir(crate::jobs::dream_files::notes_dir(
        loaded.dirs.data.as_deref(),
        loaded.db_path.as_deref(),
    ));
    let reserved = crate::user_commands::BUILT_IN;
    let commands = crate::user_commands::load(
        &loaded.workspace,
        session.settings.approvals.confinement(),
        loaded.dirs.config.as_deref(),
        loaded.workspace_trusted() && !cli.distrust_workspace,
        reserved,
    );
    for notice in &commands.notices {
        session.notify_at_start(notice.clone());
    }
    session.set_user_commands(Arc::new(commands));
    if let Some(root) = loaded.rewind_root() {
        let limits = crate::rewind::Limits::default();
        let keeper = crate::rewind::Keeper::new(root, &session.id, limits);
        session.set_rewind(Arc::new(keeper));
    }
    let settings = loaded.mcp_settings(session.settings.approvals.confinement().env.clone());
    if !settings.servers.is_empty() || !settings.not_trusted.is_empty() {
        session.start_mcp_later(settings);
    }
    if let Some(config_dir) = &loaded.dirs.config {
        let library = SkillLibrary::empty(loaded.workspace.clone(), config_dir.clone())
            .trusting_repository(loaded.workspace_trusted());
        session.find_skills_later(Arc::new(library), loaded.config.skills.clone());
    }
    session.set_model_resolver(loaded.model_resolver(cli));
    session.set_model_factory(loaded.model_factory(cli));
    if let Some(name) = &loaded.config.agent.compressor_model {
        let model = config::select::named(&loaded.config, name)?;
        let key = api_key(&model)?;
        let timeouts = loaded.config.retry.timeouts();
        session.set_compressor(Some(chain_model(&model, key, timeouts)?));
    }
    if let Some(warning) = loaded.sources.ignored_warning() {
        session.notify_at_start(warning);
    }
    let (hooks, notes) = super::hooks::load(
        &loaded.config.hooks,
        &loaded.dirs,
        &loaded.workspace,
        cli.distrust_workspace,
        &loaded.config.sandbox.key_vars,
    );
    session.settings.approvals.set_hooks(Arc::new(hooks));
    for note in notes {
        session.notify_at_start(note);
    }
    for notice in skipped {
        session.notify_at_start(notice);
    }
    // The sandbox's start-up check (a bwrap run) goes on while the session starts; the
    // session says its answer right after announcing itself, not at the first refused command.
    if session.settings.approvals.sandbox_for(None).is_sandboxed() {
        tokio::spawn(crate::sandbox::availability());
    }
    Ok(session)
}
