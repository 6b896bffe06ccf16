//! The state one agent task owns: settings, model chain, tools, the working set of messages and
//! running totals. Every message that enters the working set is written to the store first.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::mpsc;

use super::services::Services;
use super::subagents::{AgentRuns, Mailbox, ModelResolver};
use super::tool_set::StepTools;
use crate::capabilities::{CapabilityRefs, ToolSet};
use crate::config::Config;
use crate::llm::fallback::{ChainModel, FallbackChain};
use crate::llm::tokens::Calibration;
use crate::llm::{ContentBlock, Message, Role, Usage};
use crate::memory::StoreError;
use crate::memory::session_lease::SessionLease;
use crate::memory::types::{Experience, NewSession, StoredMessage};
use crate::memory::{EmbeddingClient, Store};
use crate::protocol::{Event, UserMessageKind};
use crate::sandbox::Confinement;
use crate::tools::capability_run::CapabilityRunner;
use crate::tools::skills::SkillLibrary;
use crate::tools::{Approvals, ToolRegistry};

/// Fixed for the life of a session.
#[derive(Debug, Clone)]
pub struct SessionSettings {
    /// Canonical workspace root.
    pub workspace: PathBuf,
    /// Constitution, project instructions and environment; experiences are added per turn.
    pub system_prompt: String,
    pub max_steps: u32,
    pub repeat_limit: u32,
    pub tool_timeout: Duration,
    /// Messages kept in the working set before the oldest turns move to the archive.
    pub max_active_messages: usize,
    /// Share of the context budget (0 to 1) at which the working set is compacted.
    pub compact_threshold: f64,
    /// The approval mode and what the user allowed; shared with sub-agents.
    pub approvals: Arc<Approvals>,
    /// How deep sub-agents may nest (a sub-agent of a sub-agent is depth 2).
    pub max_agent_depth: u32,
    /// How often a reply cut off by the output limit is continued.
    pub max_continuations: u32,
    /// Most tokens the capabilities' tool specs may take in one request.
    pub max_tool_tokens: u32,
    /// Most tokens one MCP server's tools may take before they are found by search instead.
    pub mcp_max_tool_tokens: u32,
    /// Every this many steps of a turn the model is nudged to update its checkpoint (0: never).
    pub checkpoint_every: u32,
}

impl SessionSettings {
    /// The settings `config` gives a session in `workspace`.
    pub fn from_config(workspace: PathBuf, system_prompt: String, config: &Config) -> Self {
        let agent = &config.agent;
        Self {
            workspace,
            system_prompt,
            max_steps: agent.max_steps,
            repeat_limit: agent.repeat_limit,
            tool_timeout: Duration::from_secs(agent.tool_timeout_secs),
            max_active_messages: config.memory.max_active_messages,
            compact_threshold: agent.compact_threshold,
            max_agent_depth: agent.max_agent_depth,
            max_continuations: agent.max_continuations,
            max_tool_tokens: config.capabilities.max_tool_tokens,
            mcp_max_tool_tokens: config.mcp.max_tool_tokens,
            checkpoint_every: agent.checkpoint_every,
            approvals: Arc::new(Approvals::confined(
                config.sandbox.config(),
                config.approval,
                Arc::new(Confinement::from_section(&config.sandbox)),
            )),
        }
    }
}

/// Whether `message`, written as `kind`, opens a turn: a user's text that is a prompt or a
/// queued message (not an injection, a continuation or tool results).
fn opens_turn(message: &Message, kind: UserMessageKind) -> bool {
    message.role == Role::User
        && matches!(kind, UserMessageKind::Prompt | UserMessageKind::Queued)
        && message
            .content
            .iter()
            .any(|block| matches!(block, ContentBlock::Text { .. }))
}

/// Where a working-set message sits in the store, and when it was written.
#[derive(Debug, Clone, Copy)]
pub(super) struct MessageMeta {
    pub seq: i64,
    pub created_at: i64,
    /// The token estimate stored with the message.
    pub tokens: u32,
    /// Whether the message opens a turn (a user's prompt or queued message): compaction
    /// archives whole turns.
    pub starts_turn: bool,
}

pub struct Session {
    pub id: String,
    /// Keeps other processes out of this session while it lives.
    _lease: Option<SessionLease>,
    /// The row of a new session, written with its first message.
    unstored: Option<NewSession>,
    pub settings: SessionSettings,
    /// The session's model and its fallbacks.
    pub(super) chain: Arc<FallbackChain>,
    pub(super) tools: ToolRegistry,
    /// What this session shares with the other sessions of the process.
    pub(super) services: Arc<Services>,
    /// The working set, oldest first, and beside it each message's place in the store.
    pub(super) history: Vec<Arc<Message>>,
    pub(super) meta: Vec<MessageMeta>,
    pub(super) next_seq: i64,
    pub(super) turns: u64,
    pub(super) total_usage: Usage,
    pub(super) cost_usd: f64,
    /// The system prompt as last sent: base prompt plus experiences.
    pub(super) system_prompt: String,
    pub(super) archived_any: bool,
    /// The summary of compacted conversation, sent after the first message.
    pub(super) summary: Option<String>,
    /// Estimated tokens of the system prompt and the summary, updated when they change.
    pub(super) prompt_tokens: u64,
    /// Tokens the provider counted per token we estimated, learned from usage reports.
    pub(super) calibration: Calibration,
    /// The experiences last rendered into the prompt, with the store's version of them.
    pub(super) experiences: Option<(u64, Vec<Experience>)>,
    /// The system prompt was built for this working set: until a compaction rewrites the
    /// history, it stays byte-identical (its cached prefix holds) and growth comes as notes.
    pub(super) prompt_built: bool,
    /// The dream notes last rendered into the prompt, with the store's version of them.
    pub(super) dream_notes: Option<(u64, crate::memory::dream_notes::DreamNotes)>,
    /// When the notes files were last seen changed (milliseconds), to take a hand edit in.
    pub(super) notes_files_seen: Option<i64>,
    /// Told to the front end right after `SessionStarted` (for example a sandbox that cannot
    /// run here).
    startup_notices: Vec<String>,
    /// Which capabilities the working history references.
    pub(super) caps: CapabilityRefs,
    /// The tools of the next model step, derived from the registry, the servers and `caps`.
    pub(super) step_tools: StepTools,
    /// The session's MCP servers, when any is configured.
    pub(super) mcp: Option<crate::mcp::McpManager>,
    /// Servers to start once the session has announced itself.
    pub(super) mcp_pending: Option<crate::mcp::McpSettings>,
    pub(super) cap_runner: Arc<CapabilityRunner>,
    /// The model's working checkpoint for the turn.
    pub(super) checkpoint: Option<super::checkpoint::Checkpoint>,
    /// The model step the turn is at (1 for its first call).
    pub(super) step: u32,
    /// Set for the last call at the step limit: the model answers without tools.
    pub(super) tools_disabled: bool,
    /// The running turn's interrupt, heard by the work between model calls (compaction).
    pub(super) turn_cancel: tokio_util::sync::CancellationToken,
    /// The skills the session can see, with how it uses them.
    pub(super) skills: Option<(Arc<SkillLibrary>, super::skills::SkillSettings)>,
    /// Skills the running turn loaded, in order.
    pub(super) skills_in_use: Vec<String>,
    /// The skills are to be looked for before the first turn uses them.
    pub(super) skills_pending: bool,
    /// The sub-agents this session started.
    pub(super) runs: Arc<AgentRuns>,
    /// Injections and background results for the next model call.
    pub(super) mailbox: Mailbox,
    /// What SessionStart hooks added for the model, sent with the next prompt.
    pub(super) hook_context: Vec<String>,
    /// The subdirectories whose instruction files the conversation has had.
    pub(super) nested: super::nested_context::NestedContext,
    /// The agent's visible plan (the `todo` tool), kept across turns until it is finished.
    pub(super) todo: Vec<crate::protocol::TodoItem>,
    /// The plan a plan-mode turn proposed, until it is approved.
    pub(super) proposed_plan: Option<String>,
    /// Keeps files before the agent changes them, so turns can be rewound.
    pub(super) rewind: Option<Arc<crate::rewind::Keeper>>,
    /// The person's own slash commands, expanded when a prompt names one.
    pub(super) user_commands: Arc<crate::user_commands::UserCommands>,
    events: Option<mpsc::Sender<Event>>,
}

impl Session {
    /// Creates a new session row in the store.
    pub async fn create(
        settings: SessionSettings,
        chain: Arc<FallbackChain>,
        tools: ToolRegistry,
        store: Store,
        parent_id: Option<String>,
    ) -> Result<Self, StoreError> {
        let id = uuid::Uuid::new_v4().to_string();
        let lease = SessionLease::acquire(&store, &id).await?;
        let new = NewSession {
            id: id.clone(),
            parent_id,
            cwd: settings.workspace.display().to_string(),
            model: chain.primary().map(|m| m.name.clone()).unwrap_or_default(),
            title: String::new(),
        };
        let mut session = Self::assemble(id, settings, chain, tools, store);
        session._lease = Some(lease);
        // Stored with its first message: a launch left without one leaves nothing behind.
        session.unstored = Some(new);
        Ok(session)
    }

    /// Writes the session's row if this is its first write.
    pub(super) async fn ensure_stored(&mut self) -> Result<(), StoreError> {
        if let Some(new) = self.unstored.take() {
            let pending = new.clone();
            if let Err(err) = self
                .services
                .store
                .call(move |db| db.create_session(pending))
                .await
            {
                self.unstored = Some(new);
                return Err(err);
            }
        }
        Ok(())
    }

    /// Loads a stored session: its working set exactly as it was, and its totals. A step
    /// that a killed process left half done is closed so the history is valid again.
    pub async fn resume(
        settings: SessionSettings,
        chain: Arc<FallbackChain>,
        tools: ToolRegistry,
        store: Store,
        id_or_prefix: &str,
    ) -> Result<Self, StoreError> {
        let wanted = id_or_prefix.to_string();
        let id = store.call(move |db| Ok(db.session(&wanted)?.id)).await?;
        // Taken before anything is read or repaired: a turn another process still runs is
        // not a killed one.
        let lease = SessionLease::acquire(&store, &id).await?;
        let (row, active, totals, max_seq, summary, (nested, todo, plan)) = store
            .call(move |db| {
                let row = db.session(&id)?;
                db.mark_running_turns_killed(&row.id)?;
                let active = db.active_messages(&row.id)?;
                let totals = db.session_totals(&row.id)?;
                let max_seq = db.max_seq(&row.id)?;
                let summary = db.kv_get(&crate::memory::sessions::summary_key(&row.id))?;
                let nested = db.kv_get(&crate::memory::sessions::nested_key(&row.id))?;
                let todo = db.kv_get(&crate::memory::sessions::todo_key(&row.id))?;
                let plan = db.kv_get(&crate::memory::sessions::plan_key(&row.id))?;
                Ok((row, active, totals, max_seq, summary, (nested, todo, plan)))
            })
            .await?;
        let archived = row.message_count > active.len() as u64;
        let mut session = Self::assemble(row.id, settings, chain, tools, store);
        session._lease = Some(lease);
        session.turns = totals.turns;
        session.total_usage = totals.usage;
        session.cost_usd = totals.cost_usd;
        session.next_seq = max_seq.map_or(0, |s| s + 1);
        session.archived_any = archived;
        session.summary = summary;
        session.nested = super::nested_context::NestedContext::from_stored(nested.as_deref());
        session.todo = super::todo::from_stored(todo.as_deref());
        session.proposed_plan = super::plan_mode::pending(plan.as_deref());
        for StoredMessage {
            seq,
            message,
            created_at,
            tokens,
            kind,
            ..
        } in active
        {
            let starts_turn = opens_turn(&message, kind.unwrap_or(UserMessageKind::Prompt));
            let previous = session.history.last().map(|m| m.as_ref());
            session.caps.observe(seq, &message, previous);
            session.meta.push(MessageMeta {
                seq,
                created_at,
                tokens,
                starts_turn,
            });
            session.history.push(Arc::new(message));
        }
        if let Some(repair) = session.unanswered_calls() {
            session.commit(repair).await?;
        }
        Ok(session)
    }

    fn assemble(
        id: String,
        settings: SessionSettings,
        chain: Arc<FallbackChain>,
        tools: ToolRegistry,
        store: Store,
    ) -> Self {
        let mut tools = tools;
        super::subagents::register(&mut tools);
        tools.register(super::checkpoint::UpdateWorkingCheckpoint);
        tools.register(super::todo::Todo);
        let cap_runner = Arc::new(CapabilityRunner::new(store.clone()));
        crate::tools::capability::register(&mut tools, &store, None, cap_runner.clone());
        let toolset = Arc::new(ToolSet::fixed(tools.specs()));
        let runs = Arc::new(AgentRuns::top_level(settings.max_agent_depth));
        Self {
            id,
            system_prompt: settings.system_prompt.clone(),
            settings,
            chain,
            tools,
            services: Arc::new(Services::new(store)),
            history: Vec::new(),
            meta: Vec::new(),
            next_seq: 0,
            turns: 0,
            total_usage: Usage::default(),
            cost_usd: 0.0,
            archived_any: false,
            summary: None,
            prompt_tokens: 0,
            calibration: Calibration::new(),
            experiences: None,
            prompt_built: false,
            dream_notes: None,
            notes_files_seen: None,
            startup_notices: Vec::new(),
            hook_context: Vec::new(),
            _lease: None,
            unstored: None,
            step_tools: StepTools::fixed(toolset),
            caps: CapabilityRefs::new(),
            mcp: None,
            mcp_pending: None,
            cap_runner,
            checkpoint: None,
            step: 0,
            tools_disabled: false,
            turn_cancel: tokio_util::sync::CancellationToken::new(),
            skills: None,
            skills_in_use: Vec::new(),
            skills_pending: false,
            runs,
            mailbox: Mailbox::default(),
            nested: super::nested_context::NestedContext::default(),
            todo: Vec::new(),
            proposed_plan: None,
            rewind: None,
            user_commands: Arc::default(),
            events: None,
        }
    }

    /// The model that writes compaction summaries (the session's own model by default).
    pub fn set_compressor(&mut self, compressor: Option<ChainModel>) {
        Arc::make_mut(&mut self.services).compressor = compressor;
    }

    /// Where the dream notes files live; a hand edit there is taken in before the next prompt.
    pub fn set_notes_dir(&mut self, dir: Option<std::path::PathBuf>) {
        Arc::make_mut(&mut self.services).notes_dir = dir;
    }

    /// Sub-agents that name another model get its chain from `resolver`.
    pub fn set_model_resolver(&mut self, resolver: ModelResolver) {
        Arc::make_mut(&mut self.services).model_resolver = Some(resolver);
    }

    /// Archive entries written from now on get embeddings from `embedder`.
    pub fn set_embedder(&mut self, embedder: Option<Arc<EmbeddingClient>>) {
        crate::tools::capability::register(
            &mut self.tools,
            &self.services.store,
            embedder.clone(),
            self.cap_runner.clone(),
        );
        Arc::make_mut(&mut self.services).embedder = embedder;
    }

    /// The working set, oldest first.
    pub fn history(&self) -> &[Arc<Message>] {
        &self.history
    }

    pub fn total_usage(&self) -> Usage {
        self.total_usage
    }

    pub fn cost_usd(&self) -> f64 {
        self.cost_usd
    }

    /// The system prompt of the latest turn, experiences included.
    pub fn system_prompt(&self) -> &str {
        &self.system_prompt
    }

    pub fn store(&self) -> &Store {
        &self.services.store
    }

    /// Whether the session has a row in the store (a new one gets it with its first message).
    pub fn is_stored(&self) -> bool {
        self.unstored.is_none()
    }

    pub(super) fn attach(&mut self, events: mpsc::Sender<Event>) {
        self.events = Some(events);
    }

    pub(super) fn detach(&mut self) {
        self.events = None;
        self.settings.approvals.detach();
        self.runs.detach();
    }

    /// Drops the event sender only (a sub-agent's; the tree's approvals stay attached).
    pub(super) fn release_events(&mut self) {
        self.events = None;
    }

    pub(super) fn event_sender(&self) -> Option<mpsc::Sender<Event>> {
        self.events.clone()
    }

    pub(super) async fn announce(&self) {
        self.emit(Event::SessionStarted {
            session_id: self.id.clone(),
            model: self.model_name(),
            workspace: self.settings.workspace.display().to_string(),
        })
        .await;
        if !self.todo.is_empty() {
            let items = self.todo.clone();
            self.emit(Event::TodoUpdated { items }).await;
        }
        self.offer_pending_plan().await;
        for message in &self.startup_notices {
            let message = message.clone();
            self.emit(Event::Notice { message }).await;
        }
        let sandbox = self.settings.approvals.sandbox_for(None);
        if let Err(error) = crate::sandbox::preflight(&sandbox).await {
            let message = error.to_string();
            self.emit(Event::Notice { message }).await;
        }
        if let Some(message) = self.window_too_small() {
            self.emit(Event::Error { message }).await;
        }
    }

    /// A notice for the front end as soon as the session starts.
    pub fn notify_at_start(&mut self, message: impl Into<String>) {
        self.startup_notices.push(message.into());
    }

    pub(super) async fn emit(&self, event: Event) {
        if let Some(events) = &self.events {
            // A front end that went away must not stop the session from finishing its step.
            let _ = events.send(event).await;
        }
    }

    /// Writes a completed message to the store, then adds it to the working set. This is the
    /// one place history grows, so nothing the model or user produced exists only in memory.
    pub(super) async fn commit(&mut self, message: Message) -> Result<(), StoreError> {
        self.commit_as(message, UserMessageKind::Injected).await
    }

    /// Commits a message; `kind` says whether a user's text opens a turn.
    pub(super) async fn commit_as(
        &mut self,
        message: Message,
        kind: UserMessageKind,
    ) -> Result<(), StoreError> {
        self.ensure_stored().await?;
        let seq = self.next_seq;
        let starts_turn = opens_turn(&message, kind);
        let tokens = crate::llm::tokens::estimate_message(&message);
        let message = Arc::new(message);
        let stored = Arc::clone(&message);
        let id = self.id.clone();
        self.services
            .store
            .call(move |db| db.append_messages(&id, &[(seq, stored.as_ref(), tokens)]))
            .await?;
        self.next_seq += 1;
        self.caps
            .observe(seq, &message, self.history.last().map(|m| m.as_ref()));
        self.meta.push(MessageMeta {
            seq,
            created_at: super::turn_loop::now_millis(),
            tokens,
            starts_turn,
        });
        self.history.push(message);
        Ok(())
    }

    /// A user message answering tool calls of the last assistant message that have no
    /// result (the process died while they ran).
    fn unanswered_calls(&self) -> Option<Message> {
        let last = self.history.last()?;
        if last.role != Role::Assistant {
            return None;
        }
        let results: Vec<ContentBlock> = last
            .tool_calls()
            .map(|call| ContentBlock::ToolResult {
                tool_use_id: call.id.to_string(),
                content: "not run: mnemo stopped before this call finished".into(),
                is_error: true,
            })
            .collect();
        (!results.is_empty()).then_some(Message {
            role: Role::User,
            content: results,
        })
    }

    /// The name of the session's own model (the head of the chain).
    pub fn model_name(&self) -> String {
        self.chain
            .primary()
            .map(|m| m.name.clone())
            .unwrap_or_default()
    }

    /// Adds one model call's usage, priced by the model that answered, learns how our
    /// estimates compare with the provider's count, and reports it.
    pub(super) async fn record_usage(&mut self, usage: Usage, model: &ChainModel, estimated: u64) {
        self.calibration.observe(estimated, usage.prompt_tokens());
        self.count_usage(usage, model).await;
    }

    /// Adds what a call cost to the session's figures and tells the front end. Attempts that
    /// broke off are counted here too, but do not calibrate the estimate.
    pub(super) async fn count_usage(&mut self, usage: Usage, model: &ChainModel) {
        self.total_usage.add(&usage);
        self.cost_usd += model.price.cost(&usage);
        let used = (usage.prompt_tokens() + usage.output_tokens) as f64;
        self.emit(Event::Usage {
            last: usage,
            total: self.total_usage,
            cost_usd: self.cost_usd,
            context_percent: (used / self.budget() as f64 * 100.0).min(100.0) as f32,
        })
        .await;
    }
}
