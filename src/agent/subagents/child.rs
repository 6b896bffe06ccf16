//! Starting a sub-agent: its session (a child of this one in the store), its tools, model and
//! starting context, then its one turn on a task of its own. What it does is reported to the
//! top-level front end as `Agent*` events; how it ended is kept in its [`Run`].

use std::sync::Arc;
use std::time::Duration;

use futures_util::future::BoxFuture;
use serde_json::Value;
use tokio::sync::mpsc;

use super::args::ContextMode;
use super::host::AgentHost;
use super::{AgentRuns, Mailbox, Run};
use crate::agent::Session;
use crate::agent::decide::Queued;
use crate::llm::fallback::FallbackChain;
use crate::llm::{ContentBlock, Message, Role};
use crate::protocol::{AgentActivity, AgentKind, AgentStatus, Event, TurnStatus, UserMessageKind};
use crate::tools::describe;

/// How long a finished run waits for the runs it started to wind down.
const SUBTREE_WAIT: Duration = Duration::from_secs(2);

/// What to start.
pub(super) struct RunSpec {
    pub kind: AgentKind,
    pub label: String,
    pub prompt: String,
    pub model: Option<String>,
    pub context: ContextMode,
    pub readonly: bool,
    pub network: bool,
    pub background: bool,
}

impl AgentHost {
    /// Creates the sub-agent's session, records the run and starts it. The error is for the
    /// model.
    pub(super) async fn start_run(&self, spec: RunSpec) -> Result<Arc<Run>, String> {
        let runs = &self.runs;
        if runs.depth >= runs.max_depth {
            return Err(format!(
                "the sub-agent depth limit ({}) is reached: this agent is at depth {} and \
                 cannot start another; do the work yourself",
                runs.max_depth, runs.depth
            ));
        }
        let chain = self.child_chain(spec.model.as_deref())?;
        let readonly = spec.readonly || runs.readonly;
        let tools = match readonly {
            true => self.tools.read_only(),
            false => self.tools.clone(),
        };
        let tools = match spec.network {
            true => tools,
            false => tools.offline(),
        };
        let mut settings = self.settings.clone();
        settings.approvals = self.settings.approvals.for_subagent(spec.network);
        settings.system_prompt = format!(
            "{}\n\n{}",
            self.settings.system_prompt,
            role_note(runs.depth + 1, readonly)
        );
        let store = self.services.store.clone();
        let parent = Some(self.id.clone());
        let mut child = Session::create(settings, chain, tools, store, parent)
            .await
            .map_err(|e| format!("could not create the sub-agent's session: {e}"))?;
        let run = Run::new(
            runs.next_id(spec.kind),
            child.id.clone(),
            spec.kind,
            spec.label.clone(),
            spec.background,
            runs.subtree_token(),
        );
        let run = Arc::new(run);
        child.runs = Arc::new(runs.for_child(&run, readonly));
        child.services = self.services.clone();
        let (id, title) = (child.id.clone(), spec.label.clone());
        // The title is a convenience; a failure to set it must not stop the run.
        let _ = self
            .services
            .store
            .call(move |db| db.rename_session(&id, &title))
            .await;
        let prompt = self
            .starting_context(&mut child, spec.context, spec.prompt)
            .await?;
        runs.add(run.clone());
        runs.emit(Event::AgentStarted {
            run_id: run.id.clone(),
            session_id: run.session_id.clone(),
            parent_run: runs.run_id.clone(),
            depth: runs.depth + 1,
            kind: spec.kind,
            label: spec.label,
            model: child.model_name(),
        })
        .await;
        let parent_mail = self.mailbox.clone();
        tokio::spawn(boxed_run(
            child,
            prompt,
            run.clone(),
            parent_mail,
            self.runs.clone(),
        ));
        Ok(run)
    }

    fn child_chain(&self, model: Option<&str>) -> Result<Arc<FallbackChain>, String> {
        let Some(name) = model else {
            return Ok(self.chain.clone());
        };
        if self.chain.primary().is_some_and(|m| m.name == name) {
            return Ok(self.chain.clone());
        }
        match &self.services.model_resolver {
            Some(resolve) => resolve(name),
            None => Err(format!(
                "model `{name}` is not available to sub-agents here; leave model out to use \
                 your own"
            )),
        }
    }

    /// Seeds the child's history as `mode` says and returns the prompt it starts with.
    async fn starting_context(
        &self,
        child: &mut Session,
        mode: ContextMode,
        prompt: String,
    ) -> Result<String, String> {
        match mode {
            ContextMode::None => Ok(prompt),
            ContextMode::Full => {
                for message in &self.snapshot {
                    child
                        .commit(Message::clone(message))
                        .await
                        .map_err(|e| format!("could not copy the context: {e}"))?;
                }
                Ok(prompt)
            }
            ContextMode::Summary => {
                let snapshot: Vec<Message> =
                    self.snapshot.iter().map(|m| Message::clone(m)).collect();
                let summary = match child.summarize(&snapshot).await {
                    Some(summary) => summary.render(),
                    None => "(no summary could be written)".to_string(),
                };
                Ok(format!(
                    "What the agent that started you knows so far (a summary of its \
                     conversation):\n{summary}\n\nYour task:\n{prompt}"
                ))
            }
        }
    }
}

impl Session {
    /// The conversation as the model last saw it, with the text of the assistant message whose
    /// calls run now but not those calls (a copy shares the messages; later changes to this
    /// session do not reach it).
    pub(in crate::agent) fn context_snapshot(&self) -> Vec<Arc<Message>> {
        let mut end = self.history.len();
        if let Some(last) = self.history.last()
            && last.role == Role::Assistant
            && last.tool_calls().next().is_some()
        {
            end -= 1;
        }
        let mut snapshot: Vec<Arc<Message>> = self.history[..end].to_vec();
        // What the model said as it made the call stays: only the calls, which have no
        // results yet, are left out.
        if let Some(last) = self.history.get(end) {
            let said: Vec<ContentBlock> = last
                .content
                .iter()
                .filter(
                    |block| matches!(block, ContentBlock::Text { text } if !text.trim().is_empty()),
                )
                .cloned()
                .collect();
            if !said.is_empty() {
                snapshot.push(Arc::new(Message::assistant(said)));
            }
        }
        if let Some(summary) = self.summary_message() {
            snapshot.insert(snapshot.len().min(1), summary);
        }
        snapshot
    }

    /// The text of the last assistant message that has any.
    fn final_answer(&self) -> String {
        self.history
            .iter()
            .rev()
            .filter(|m| m.role == Role::Assistant)
            .map(|m| m.text())
            .find(|text| !text.trim().is_empty())
            .unwrap_or_default()
    }
}

fn role_note(depth: u32, readonly: bool) -> String {
    let tools = match readonly {
        true => " You have read-only tools: report what should change instead of changing it.",
        false => "",
    };
    format!(
        "# Sub-agent\nYou are a sub-agent (depth {depth}) started by another agent for one task. \
         Work on it alone: nobody reads along, and your final message is the whole answer \
         the other agent gets, so make it complete and self-contained.{tools}"
    )
}

/// The run as a boxed future: a session's turn can start sub-agents whose turns start more,
/// and the named type breaks that cycle for the compiler. A sub-agent that crashes is recorded
/// and reported as failed; its parent goes on.
fn boxed_run(
    child: Session,
    prompt: String,
    run: Arc<Run>,
    parent_mail: Mailbox,
    parent_runs: Arc<AgentRuns>,
) -> BoxFuture<'static, ()> {
    Box::pin(async move {
        let session_id = Some(child.id.clone());
        let (watched, mail, runs) = (run.clone(), parent_mail.clone(), parent_runs.clone());
        let driven = drive_run(child, prompt, run, parent_mail, parent_runs);
        if let Err(crashed) = crate::crash::within("sub-agent", session_id, driven).await
            && watched.status() == AgentStatus::Running
        {
            let why = format!("the sub-agent stopped: {crashed}");
            report_end(&watched, &mail, &runs, AgentStatus::Failed, why).await;
        }
    })
}

/// Runs the sub-agent's turn and reports how it ended.
async fn drive_run(
    mut child: Session,
    prompt: String,
    run: Arc<Run>,
    parent_mail: Mailbox,
    parent_runs: Arc<AgentRuns>,
) {
    let (events_tx, mut events_rx) = mpsc::channel::<Event>(256);
    child.attach(events_tx);
    let forward_run = run.clone();
    let forward_runs = parent_runs.clone();
    let forwarder = tokio::spawn(async move {
        let mut last = None;
        while let Some(event) = events_rx.recv().await {
            let Some(activity) = activity_of(&event) else {
                continue;
            };
            if last.as_ref() == Some(&activity) {
                continue;
            }
            forward_run.set_activity(describe::activity(&activity));
            let event = Event::AgentActivity {
                run_id: forward_run.id.clone(),
                activity: activity.clone(),
            };
            forward_runs.emit(event).await;
            last = Some(activity);
        }
    });
    let (status, message) = child_turns(&mut child, prompt, &run).await;
    // Whatever it left running in the background ends with it, before it reports.
    child.runs.cancel_all();
    child.runs.wait_all(SUBTREE_WAIT).await;
    child.release_events();
    let _ = forwarder.await;
    let (status, response) = match status {
        TurnStatus::Completed => (AgentStatus::Completed, child.final_answer()),
        TurnStatus::Interrupted => (
            AgentStatus::Cancelled,
            "cancelled before it finished".to_string(),
        ),
        TurnStatus::LoopDetected
        | TurnStatus::StepLimit
        | TurnStatus::Failed
        | TurnStatus::CutOff
        | TurnStatus::Refused => {
            let why = message.unwrap_or_else(|| "it failed".into());
            (AgentStatus::Failed, why)
        }
    };
    report_end(&run, &parent_mail, &parent_runs, status, response).await;
}

/// Tells the parent how the run ended and records it.
async fn report_end(
    run: &Arc<Run>,
    parent_mail: &Mailbox,
    parent_runs: &AgentRuns,
    status: AgentStatus,
    response: String,
) {
    // Told before the run counts as finished, so the event comes before anything the parent
    // does with the result.
    parent_runs
        .emit(Event::AgentFinished {
            run_id: run.id.clone(),
            status,
            summary: response.lines().next().unwrap_or_default().to_string(),
        })
        .await;
    run.finish(status, response, |response| {
        // A cancelled run was stopped by its parent (or the user): telling the parent again
        // would only start another turn nobody asked for.
        if status != AgentStatus::Cancelled {
            parent_mail.deliver(super::background_report(run, status, response));
        }
    });
}

/// The sub-agent's turn, then one more for each result of its own background sub-agents, as
/// a top-level session takes them: it ends when nothing it started is still to report.
async fn child_turns(
    child: &mut Session,
    prompt: String,
    run: &Run,
) -> (TurnStatus, Option<String>) {
    let (inbox, wake) = (child.mailbox.inbox.clone(), child.mailbox.wake.clone());
    let mut outcome = child
        .run_turn(
            Queued::text(prompt, UserMessageKind::Prompt),
            run.cancel.clone(),
            inbox.clone(),
        )
        .await;
    loop {
        if outcome.0 != TurnStatus::Completed || run.cancel.is_cancelled() {
            return outcome;
        }
        // Runs report before they count as finished, so with none left the inbox is complete.
        let waiting = child.runs.any_in_background();
        let next = inbox.lock().ok().and_then(|mut p| p.texts.pop_front());
        if let Some(text) = next {
            outcome = child
                .run_turn(
                    Queued::text(text, UserMessageKind::Injected),
                    run.cancel.clone(),
                    inbox.clone(),
                )
                .await;
            continue;
        }
        if !waiting {
            return outcome;
        }
        tokio::select! {
            () = wake.notified() => {}
            () = run.cancel.cancelled() => return (TurnStatus::Interrupted, None),
        }
    }
}

/// What a sub-agent's event says it is doing.
fn activity_of(event: &Event) -> Option<AgentActivity> {
    match event {
        Event::TurnStarted { .. } | Event::ToolCallFinished { .. } => Some(AgentActivity::Thinking),
        Event::TextDelta { .. } => Some(AgentActivity::Responding),
        Event::Retry { .. } => Some(AgentActivity::Retrying),
        Event::ToolCallStarted {
            name, arguments, ..
        } => Some(AgentActivity::Tool {
            name: name.clone(),
            arguments: arguments.clone(),
        }),
        _ => None,
    }
}

/// `{run_id, status, response}` of a run, for the model.
pub(super) fn run_json(run: &Run) -> Value {
    let (status, text) = run.report();
    let key = match status {
        AgentStatus::Running => "activity",
        _ => "response",
    };
    serde_json::json!({
        "run_id": run.id,
        "status": status.label(),
        key: text,
    })
}
