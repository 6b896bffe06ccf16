//! Tools the model can call. Each tool is a typed struct of arguments (its JSON schema comes
//! from schemars, its doc comments become descriptions) plus an async `run`; the blanket
//! `Tool` impl handles schema, argument decoding and precise argument errors.

pub mod approvals;
pub mod ask_user;
pub mod builtin;
pub mod capability;
pub mod capability_run;
pub mod describe;
pub mod diff_report;
pub mod egress_gate;
pub mod found;
pub mod front_end;
pub mod fs_editor;
pub mod fs_read;
pub mod fs_write;
mod hooked;
pub mod mcp;
pub mod memory;
pub mod process;
pub mod registry;
pub mod rewind_keep;
pub mod router;
pub mod schedule;
pub mod search;
pub mod services;
pub mod shell;
pub mod shell_terminal;
pub mod skill_check;
pub mod skills;
pub mod truncate;
pub mod turn_report;
pub mod web_fetch;
pub mod web_search;
pub mod web_text;

use std::any::TypeId;
use std::collections::HashMap;
use std::future::Future;
use std::path::PathBuf;
use std::sync::atomic::AtomicU64;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use futures_util::future::BoxFuture;
use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use serde_json::Value;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use crate::llm::ToolSpec;
use crate::protocol::{ApprovalAction, Event};
use crate::sandbox::approval::Action;
use crate::sandbox::path_guard;

pub use approvals::Approvals;
pub use registry::ToolRegistry;

/// What a tool gets besides its arguments.
#[derive(Clone)]
pub struct ToolContext {
    /// The canonical (symlink-free) workspace root.
    pub workspace: PathBuf,
    pub session_id: String,
    pub call_id: String,
    /// Cancelled when the user interrupts; long-running tools must watch it.
    pub cancel: CancellationToken,
    /// The agent cuts the call off after this long; tools with their own timeout stay within
    /// it so they can clean up (kill process groups) first.
    pub timeout: Duration,
    /// The session's approval mode, also deciding the sandbox commands run in.
    pub approvals: Arc<Approvals>,
    /// The session's turn number (1 for the first), recorded with what the call creates.
    pub turn: u64,
    /// The calling session as the sub-agent tools need it; set for their calls only.
    pub agents: Option<Arc<dyn services::SubAgents>>,
    /// Milliseconds this call waited for the person to answer an approval question, so the
    /// time shown for the call is the tool's own.
    pub waited_ms: Arc<AtomicU64>,
    /// Keeps files before their first change in a turn, and names the commands run, for
    /// rewinding; `None` where nothing is kept (sub-agents, tests).
    pub rewind: Option<Arc<crate::rewind::Keeper>>,
    /// Images the call returns beside its text (`read_file` of an image, MCP tools); the
    /// agent sends them to the model with the result.
    pub images: Arc<std::sync::Mutex<Vec<crate::llm::image::ImageBlock>>>,
    events: Option<mpsc::Sender<Event>>,
}

impl ToolContext {
    pub fn new(
        workspace: PathBuf,
        session_id: impl Into<String>,
        call_id: impl Into<String>,
        cancel: CancellationToken,
        timeout: Duration,
        events: Option<mpsc::Sender<Event>>,
        approvals: Arc<Approvals>,
    ) -> Self {
        Self {
            workspace,
            session_id: session_id.into(),
            call_id: call_id.into(),
            cancel,
            timeout,
            approvals,
            turn: 0,
            agents: None,
            waited_ms: Arc::default(),
            rewind: None,
            images: Arc::default(),
            events,
        }
    }

    /// Returns `image` to the model with this call's result.
    pub fn attach_image(&self, image: crate::llm::image::ImageBlock) {
        self.images
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .push(image);
    }

    /// The same context for a call made in turn `turn`.
    pub fn in_turn(mut self, turn: u64) -> Self {
        self.turn = turn;
        self
    }

    /// The real path of `requested` inside the workspace, for reading, with how the model is
    /// shown it.
    pub fn resolve_read(&self, requested: &str) -> Result<(PathBuf, String), ToolError> {
        let confinement = self.approvals.confinement();
        let path = path_guard::resolve(&self.workspace, requested, confinement)?;
        let shown = path_guard::display(&self.workspace, &path);
        Ok((path, shown))
    }

    /// Like [`ToolContext::resolve_read`], for a path about to be written under the session's
    /// write policy.
    pub fn resolve_write(&self, requested: &str) -> Result<(PathBuf, String), ToolError> {
        let policy = self.approvals.write_policy();
        let confinement = self.approvals.confinement();
        let path = path_guard::resolve_for_write(&self.workspace, requested, policy, confinement)?;
        let shown = path_guard::display(&self.workspace, &path);
        Ok((path, shown))
    }

    /// Refuses `what` (a skill or capability written for later sessions) when the session's
    /// sandbox is read-only: what outlives the session obeys the policy as files do.
    pub fn check_writable(&self, what: &str) -> Result<(), ToolError> {
        match self.approvals.write_policy() {
            crate::sandbox::SandboxPolicy::ReadOnly => Err(ToolError::Denied(format!(
                "{what} is not allowed: the session is read-only (sandbox policy read-only). \
                 Tell the user what you would save instead"
            ))),
            _ => Ok(()),
        }
    }

    /// Tells the front end what a hook of `event` reported.
    pub async fn emit_hook(&self, event: crate::hooks::HookEvent, message: String) {
        if let Some(events) = &self.events {
            let event = event.name().to_string();
            let _ = events.send(Event::Hook { event, message }).await;
        }
    }

    /// Streams a piece of live output (for example a shell line) to the front end.
    pub async fn emit_output(&self, chunk: impl Into<String>) {
        if let Some(events) = &self.events {
            let event = Event::ToolOutput {
                call_id: self.call_id.clone(),
                chunk: chunk.into(),
            };
            // A front end that went away must not stop the tool.
            let _ = events.send(event).await;
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum ToolError {
    #[error("invalid arguments for {tool}: {message}")]
    InvalidArguments { tool: String, message: String },
    #[error("{path}: {message}")]
    Path { path: String, message: String },
    #[error("{0}")]
    Failed(String),
    #[error("timed out after {} s{}", .after.as_secs(), output_note(.output))]
    TimedOut {
        after: Duration,
        /// What the tool produced before it was stopped, for the model to see.
        output: String,
    },
    #[error("interrupted by the user")]
    Cancelled,
    #[error("not run: {0}")]
    Denied(String),
}

impl From<path_guard::PathError> for ToolError {
    fn from(e: path_guard::PathError) -> Self {
        ToolError::Path {
            path: e.path,
            message: e.message,
        }
    }
}

fn output_note(output: &str) -> String {
    if output.is_empty() {
        String::new()
    } else {
        format!("; output before it was stopped:\n{output}")
    }
}

/// The object-safe interface the registry and the agent use.
pub trait Tool: Send + Sync {
    fn name(&self) -> &str;
    fn description(&self) -> &str;
    fn input_schema(&self) -> Value;
    /// The tool as the model is shown it.
    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: self.name().to_string(),
            description: self.description().to_string().into(),
            input_schema: Arc::new(self.input_schema()),
        }
    }
    /// Whether the tool changes anything outside the conversation.
    fn mutates(&self) -> bool;
    /// Whether the tool is rarely needed: it stays out of the tool list the model is sent,
    /// and `use_tool` names it and shows its schema when asked.
    fn deferred(&self) -> bool {
        false
    }
    /// Whether the call keeps its own time limit instead of the tools' one (it waits for a
    /// person, who takes longer than a command may).
    fn own_time_limit(&self) -> bool {
        false
    }
    /// What approval the call with `input` needs, if any (invalid input needs none: it fails).
    fn approval_action(&self, input: &Value) -> Option<Action>;
    /// What the user sees when asked to approve the call.
    fn approval_preview<'a>(
        &'a self,
        input: &'a Value,
        ctx: &'a ToolContext,
    ) -> BoxFuture<'a, Result<ApprovalAction, ToolError>>;
    fn call<'a>(
        &'a self,
        input: Value,
        ctx: &'a ToolContext,
    ) -> BoxFuture<'a, Result<String, ToolError>>;
}

/// The way to write a tool: typed arguments, typed run.
pub trait TypedTool: Send + Sync + 'static {
    type Args: DeserializeOwned + JsonSchema + Send + 'static;
    const NAME: &'static str;
    const DESCRIPTION: &'static str;
    const MUTATES: bool;
    /// See [`Tool::deferred`].
    const DEFERRED: bool = false;
    /// See [`Tool::own_time_limit`].
    const OWN_TIME_LIMIT: bool = false;

    fn run(
        &self,
        args: Self::Args,
        ctx: &ToolContext,
    ) -> impl Future<Output = Result<String, ToolError>> + Send;

    /// The approval a call needs; tools that only read need none.
    fn action(&self, _args: &Self::Args) -> Option<Action> {
        None
    }

    /// The command or diff shown when the call is put to the user; only asked of tools whose
    /// `action` is `Some`.
    fn preview(
        &self,
        _args: Self::Args,
        _ctx: &ToolContext,
    ) -> impl Future<Output = Result<ApprovalAction, ToolError>> + Send {
        async {
            Err(ToolError::Failed(format!(
                "{} has nothing to show for approval",
                Self::NAME
            )))
        }
    }
}

impl<T: TypedTool> Tool for T {
    fn name(&self) -> &str {
        T::NAME
    }

    fn description(&self) -> &str {
        T::DESCRIPTION
    }

    fn input_schema(&self) -> Value {
        schema_of::<T::Args>()
    }

    // Every session has its own registry: their specs share the static description and one
    // schema per argument type instead of copying them (some 100 KB a session otherwise).
    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: T::NAME.to_string(),
            description: T::DESCRIPTION.into(),
            input_schema: shared_schema_of::<T::Args>(),
        }
    }

    fn mutates(&self) -> bool {
        T::MUTATES
    }

    fn deferred(&self) -> bool {
        T::DEFERRED
    }

    fn own_time_limit(&self) -> bool {
        T::OWN_TIME_LIMIT
    }

    fn approval_action(&self, input: &Value) -> Option<Action> {
        // Tools that change nothing never need approval; skip decoding their arguments.
        if !T::MUTATES {
            return None;
        }
        let args = decode_args::<T::Args>(T::NAME, input.clone()).ok()?;
        self.action(&args)
    }

    fn approval_preview<'a>(
        &'a self,
        input: &'a Value,
        ctx: &'a ToolContext,
    ) -> BoxFuture<'a, Result<ApprovalAction, ToolError>> {
        Box::pin(async move {
            let args = decode_args::<T::Args>(T::NAME, input.clone())?;
            self.preview(args, ctx).await
        })
    }

    fn call<'a>(
        &'a self,
        input: Value,
        ctx: &'a ToolContext,
    ) -> BoxFuture<'a, Result<String, ToolError>> {
        Box::pin(async move {
            let args = decode_args::<T::Args>(T::NAME, input)?;
            self.run(args, ctx).await
        })
    }
}

/// The JSON schema of an argument type, as the model is shown it.
pub(crate) fn schema_of<A: JsonSchema>() -> Value {
    let mut schema = serde_json::to_value(schemars::schema_for!(A)).unwrap_or_default();
    if let Some(obj) = schema.as_object_mut() {
        obj.remove("$schema");
        obj.remove("title");
        // A tool without arguments still declares an (empty) object of them.
        obj.entry("properties")
            .or_insert_with(|| Value::Object(Default::default()));
    }
    schema
}

/// [`schema_of`] generated once per type and shared.
fn shared_schema_of<A: JsonSchema + 'static>() -> Arc<Value> {
    static SCHEMAS: OnceLock<Mutex<HashMap<TypeId, Arc<Value>>>> = OnceLock::new();
    let mut schemas = SCHEMAS
        .get_or_init(Mutex::default)
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    schemas
        .entry(TypeId::of::<A>())
        .or_insert_with(|| Arc::new(schema_of::<A>()))
        .clone()
}

/// Decodes a call's arguments, with a message the model can act on when they do not fit.
/// `null` counts as no arguments.
pub(crate) fn decode_args<A: DeserializeOwned>(tool: &str, input: Value) -> Result<A, ToolError> {
    let invalid = |message: String| ToolError::InvalidArguments {
        tool: tool.to_string(),
        message,
    };
    match input {
        Value::Null => serde_json::from_value(Value::Object(Default::default()))
            .map_err(|e| invalid(e.to_string())),
        Value::Object(_) => serde_json::from_value(input).map_err(|e| invalid(e.to_string())),
        Value::String(raw) => Err(invalid(format!(
            "the arguments are not valid JSON; send one JSON object. Received: {}",
            crate::text::clip(&raw, 200)
        ))),
        other => Err(invalid(format!(
            "the arguments must be a JSON object, not {other}"
        ))),
    }
}
