//! How the session's events change what the screen shows.

// A new event must be worded here on purpose, not dropped by a `_` arm.
#![deny(
    clippy::wildcard_enum_match_arm,
    clippy::match_wildcard_for_single_variants
)]

use super::*;
use crate::protocol::QuestionAnswer;

impl AppState {
    pub fn handle_event(&mut self, event: Event, now: Instant) {
        self.dirty = true;
        match event {
            Event::SessionStarted {
                session_id,
                model,
                workspace,
            } => {
                self.status.activity = Activity::Idle;
                // Attaching announces a session the stream may announce too: say it once.
                let again = session_id == self.status.session_id;
                let text = self.welcome(&model, &workspace);
                self.status.session_id = session_id;
                self.status.model = model;
                self.status.workspace = workspace;
                if !again {
                    self.notice(NoticeLevel::Info, &text);
                }
                self.release_waiting(now);
            }
            Event::TurnStarted { .. } => {
                self.status.activity = Activity::Thinking;
                self.status.turn_started.get_or_insert(now);
            }
            Event::UserMessage { text, kind, images } => {
                self.finish_stream();
                let mut folded = None;
                if let Some(index) = self.pending.iter().position(|p| p.text == text) {
                    folded = crate::tui::paste::folded(&text, &self.pending.remove(index).folds);
                }
                let folded = folded.map(|shown| crate::tui::cells::with_images(shown, &images));
                let text = crate::tui::cells::with_images(text, &images);
                self.commit_cell(Cell::User { text, kind, folded });
            }
            Event::QueuedWithdrawn { text } => {
                if let Some(index) = self.pending.iter().position(|p| p.text == text) {
                    self.pending.remove(index);
                }
            }
            Event::TextDelta { text } => {
                self.finish_reasoning();
                self.stream.push(&text);
                if self.status.activity != Activity::Interrupting {
                    self.status.activity = Activity::Responding;
                }
            }
            Event::ReasoningDelta { text } => {
                self.reasoning.push_str(&text);
                if self.status.activity == Activity::Retrying {
                    self.status.activity = Activity::Thinking;
                }
            }
            Event::AssistantMessage { text } => {
                self.finish_reasoning();
                let streamed = !self.stream.is_empty();
                self.finish_stream();
                if !streamed && !text.trim().is_empty() {
                    self.commit_cell(Cell::Assistant { text });
                }
            }
            Event::ToolCallStarted {
                call_id,
                name,
                arguments,
            } => {
                self.finish_reasoning();
                self.finish_stream();
                self.running
                    .push(RunningTool::new(call_id, name, arguments, now));
                if self.status.activity != Activity::Interrupting {
                    self.status.activity = Activity::RunningTool;
                }
            }
            Event::ToolOutput { call_id, chunk } => {
                if let Some(tool) = self.running.iter_mut().find(|t| t.call_id == call_id) {
                    tool.push_output(&chunk);
                }
            }
            Event::ToolCallFinished {
                call_id,
                name,
                status,
                output,
                duration_ms,
            } => {
                let arguments = match self.running.iter().position(|t| t.call_id == call_id) {
                    Some(index) => self.running.remove(index).arguments,
                    None => Value::Null,
                };
                self.commit_cell(Cell::Tool(ToolCell {
                    call_id,
                    name,
                    arguments,
                    status,
                    output,
                    duration_ms,
                }));
                if self.running.is_empty() && self.status.activity == Activity::RunningTool {
                    self.status.activity = Activity::Thinking;
                }
            }
            Event::ApprovalRequested {
                id,
                tool,
                action,
                reason,
                session_grant,
                only_once,
                ..
            } => {
                self.approvals.push(ApprovalPrompt {
                    id,
                    tool,
                    action,
                    reason,
                    session_grant,
                    only_once,
                    shown_at: now,
                    answered: None,
                });
                if self.status.activity != Activity::Interrupting {
                    self.status.activity = Activity::AwaitingApproval;
                }
            }
            Event::ModelChanged { model, .. } => {
                self.notice(NoticeLevel::Info, &crate::present::model_changed(&model));
                self.status.model = model;
            }
            Event::ApprovalModeChanged { mode } => {
                self.status.approval_mode = mode;
                self.notice(NoticeLevel::Info, &format!("Approval {}", mode.explain()));
            }
            Event::ApprovalResolved { id, decision } => {
                if let Some(prompt) = self.approvals.iter().find(|p| p.id == id) {
                    let (level, record) = prompt.record(decision);
                    self.notice(level, &record);
                }
                self.approvals.retain(|prompt| prompt.id != id);
                if let Some(next) = self.approvals.first_mut() {
                    // The next question starts its grace period now that it shows.
                    next.shown_at = now;
                } else if self.status.activity == Activity::AwaitingApproval {
                    self.status.activity = match self.status.turn_started {
                        Some(_) => Activity::RunningTool,
                        None => Activity::Idle,
                    };
                }
            }
            Event::QuestionAsked {
                id,
                question,
                choices,
                ..
            } => {
                let prompt = QuestionPrompt::new(id, question, choices, now);
                self.questions.push(prompt);
                if self.status.activity != Activity::Interrupting {
                    self.status.activity = Activity::AwaitingAnswer;
                }
            }
            Event::QuestionResolved { id, answer } => {
                if let Some(prompt) = self.questions.iter().find(|p| p.id == id) {
                    let record = match answer {
                        QuestionAnswer::Text { text } => format!("{} → {text}", prompt.question),
                        QuestionAnswer::Dismissed | QuestionAnswer::Unavailable => {
                            format!("{} → not answered", prompt.question)
                        }
                    };
                    self.notice(NoticeLevel::Info, &record);
                }
                self.questions.retain(|prompt| prompt.id != id);
                if let Some(next) = self.questions.first_mut() {
                    next.shown_at = now;
                } else if self.status.activity == Activity::AwaitingAnswer {
                    self.status.activity = match self.status.turn_started {
                        Some(_) => Activity::RunningTool,
                        None => Activity::Idle,
                    };
                }
            }
            Event::AgentStarted {
                run_id,
                parent_run,
                depth,
                label,
                ..
            } => self.agents.push(AgentPane {
                run_id,
                parent_run,
                depth,
                label,
                activity: AgentActivity::Thinking,
                started: now,
            }),
            Event::PlanModeChanged { on } => {
                self.status.planning = on;
                if !on {
                    self.plan_offer = None;
                }
                self.notice(NoticeLevel::Info, crate::present::plan_mode(on));
            }
            Event::PlanProposed { text } => self.plan_offer = Some(text),
            Event::TodoUpdated { items } => {
                // A plan announced again (a replay, a resume) is recorded once.
                if items != self.todo {
                    self.commit_cell(Cell::Plan {
                        items: items.clone(),
                    });
                }
                self.todo = items;
            }
            Event::AgentActivity { run_id, activity } => {
                if let Some(pane) = self.agents.iter_mut().find(|p| p.run_id == run_id) {
                    pane.activity = activity;
                }
            }
            Event::AgentFinished {
                run_id,
                status,
                summary,
            } => {
                self.agents.retain(|p| p.run_id != run_id);
                let level = match status {
                    AgentStatus::Completed | AgentStatus::Running => NoticeLevel::Info,
                    AgentStatus::Cancelled => NoticeLevel::Warning,
                    AgentStatus::Failed => NoticeLevel::Error,
                };
                let text = format!("Sub-agent {run_id} {}: {summary}", status.label());
                self.notice(level, &text);
            }
            Event::AgentsPending { count } => {
                let text = format!(
                    "{} still working in the background; their results will come back as \
                     messages",
                    crate::present::sub_agents(count)
                );
                self.notice(NoticeLevel::Info, &text);
            }
            Event::Usage {
                total,
                cost_usd,
                context_percent,
                ..
            } => {
                self.status.total = total;
                self.status.cost_usd = cost_usd;
                self.status.context_percent = context_percent;
            }
            Event::Retry {
                model,
                attempt,
                delay_ms,
                reason,
                discard_partial,
            } => {
                let text = crate::present::retry(&model, attempt, delay_ms, &reason);
                self.model_trouble(text, discard_partial);
            }
            Event::ModelFallback {
                from,
                to,
                reason,
                discard_partial,
            } => {
                let text = crate::present::fallback(&from, &to, &reason);
                self.status.model = to;
                self.model_trouble(text, discard_partial);
            }
            Event::Compacted {
                tokens_before,
                tokens_after,
                archive_id,
                kind,
            } => {
                let text = crate::present::compacted(tokens_before, tokens_after, archive_id, kind);
                self.notice(NoticeLevel::Info, &text);
            }
            Event::Notice { message } => self.notice(NoticeLevel::Info, &message),
            Event::Hook { event, message } => {
                self.notice(NoticeLevel::Info, &format!("hook {event}: {message}"));
            }
            Event::Reminder { title, body } => {
                self.notice(NoticeLevel::Info, &format!("{title}: {body}"));
                self.desktop.push((title, body));
            }
            Event::ToolsChanged { added, removed } => {
                let text = crate::capabilities::describe_change(&added, &removed);
                self.notice(NoticeLevel::Info, &text);
                self.offered_tools.retain(|tool| !removed.contains(tool));
                self.offered_tools.extend(added);
            }
            Event::McpServers { servers } => {
                let text = crate::tui::slash::mcp_text(&servers);
                self.notice(NoticeLevel::Info, &text);
            }
            Event::Turns { turns } if turns.is_empty() => {
                self.notice(NoticeLevel::Info, "No turns to rewind yet");
            }
            Event::Turns { turns } => {
                self.rewind_picker = Some(crate::tui::rewind_picker::RewindPicker::new(turns));
            }
            Event::UserCommands { commands } => self.composer.set_user_commands(commands),
            Event::Rewound { report, .. } => {
                self.notice(NoticeLevel::Info, &report.describe());
                if let Some(prompt) = &report.prompt
                    && self.composer.is_empty()
                {
                    self.composer.restore(prompt);
                }
            }
            // The terminal offers no services of its own: it never gets a request.
            Event::FrontEndRequest { .. } | Event::FrontEndWithdrawn { .. } => {}
            Event::TurnFinished {
                turn,
                status,
                message,
                usage,
                cost_usd,
            } => {
                let turns = &mut self.status.turns;
                if turns.len() == crate::tui::status::TURNS_KEPT {
                    turns.pop_front();
                }
                turns.push_back(crate::tui::status::TurnCost {
                    turn,
                    usage,
                    cost_usd,
                });
                self.turn_finished(status, message);
            }
            Event::Error { message } => {
                self.finish_reasoning();
                self.finish_stream();
                self.notice(NoticeLevel::Error, &message);
            }
        }
    }

    /// Sends what was typed while the session started: the first message starts a turn, the
    /// rest wait for it as queued messages.
    fn release_waiting(&mut self, now: Instant) {
        for at in 0..self.pending.len() {
            if !self.pending[at].waiting {
                continue;
            }
            self.pending[at].waiting = false;
            if self.outbox.is_empty() {
                self.status.activity = Activity::Thinking;
                self.status.turn_started = Some(now);
            } else {
                self.pending[at].kind = UserMessageKind::Queued;
            }
            let text = self.pending[at].text.clone();
            let images = self.attached_images(&text);
            self.outbox.push(Op::UserInput { text, images });
        }
    }

    /// Messages that could not be sent at all (no session could start) go back into the
    /// composer, one after the other.
    pub(in crate::tui) fn return_waiting(&mut self) {
        let waiting: Vec<String> = self
            .pending
            .iter()
            .filter(|p| p.waiting)
            .map(|p| p.text.clone())
            .collect();
        self.pending.retain(|p| !p.waiting);
        if !waiting.is_empty() {
            let mut text = self.composer.text();
            for piece in waiting {
                if !text.is_empty() {
                    text.push('\n');
                }
                text.push_str(&piece);
            }
            self.composer.restore(&text);
        }
    }

    /// The ops to send now.
    pub fn take_outbox(&mut self) -> Vec<Op> {
        std::mem::take(&mut self.outbox)
    }

    /// A model call failed and is retried or handed to another model. When the retry
    /// streams the message again, what was shown of the failed attempt is dropped (lines
    /// already in the scrollback stay there, and the notice says they are void).
    fn model_trouble(&mut self, mut text: String, discard_partial: bool) {
        if discard_partial {
            if self.stream.has_committed() {
                text.push_str("; the partial answer above is discarded");
            }
            self.stream = StreamCollector::default();
            self.reasoning.clear();
        } else {
            self.finish_reasoning();
            self.finish_stream();
        }
        self.notice(NoticeLevel::Warning, &text);
        if self.status.activity != Activity::Interrupting {
            self.status.activity = Activity::Retrying;
        }
    }

    fn turn_finished(&mut self, status: TurnStatus, message: Option<String>) {
        self.finish_reasoning();
        self.finish_stream();
        for tool in std::mem::take(&mut self.running) {
            self.commit_cell(Cell::Tool(ToolCell {
                call_id: tool.call_id,
                name: tool.name,
                arguments: tool.arguments,
                status: ToolStatus::Error,
                output: "the call did not report a result".into(),
                duration_ms: 0,
            }));
        }
        self.status.turn_started = None;
        // A sub-agent's question can outlive the turn that started the sub-agent.
        self.status.activity = match self.approvals.is_empty() {
            true => Activity::Idle,
            false => Activity::AwaitingApproval,
        };
        let (level, text) = match status {
            TurnStatus::Completed => return,
            TurnStatus::Interrupted => (NoticeLevel::Warning, "Interrupted".to_string()),
            TurnStatus::LoopDetected => (NoticeLevel::Warning, "Stopped: a repeated call".into()),
            TurnStatus::StepLimit => (NoticeLevel::Warning, "Stopped: the step limit".into()),
            TurnStatus::Failed => (NoticeLevel::Error, "The turn failed".into()),
            TurnStatus::CutOff => (NoticeLevel::Warning, "Cut off by the output limit".into()),
            TurnStatus::Refused => (NoticeLevel::Warning, "Refused".into()),
        };
        let text = match message {
            Some(message) => message,
            None => text,
        };
        let repeated = matches!(self.transcript.last(),
            Some(Cell::Notice { text: last, .. }) if *last == text);
        if !repeated {
            self.notice(level, &text);
        }
    }
}
