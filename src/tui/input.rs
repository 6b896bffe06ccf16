//! Keys, pastes and mouse events on the model. What the user types while the agent works
//! becomes an injection (Enter) or a queued next message (Tab) and stays visible as pending
//! until the agent applies it; Up on an empty box takes the last queued message back to edit;
//! Esc interrupts; Ctrl+C interrupts, or quits when pressed twice. Nothing typed is thrown
//! away: text sent while the session starts waits for it, text that cannot be sent goes back
//! into the box, and keys that do not answer an open question or drive the picker are typed.

use std::time::Instant;

use crossterm::event::{KeyCode, KeyEvent, KeyEventKind, KeyModifiers, MouseEvent};

use super::approval::Answer;
use super::cells::NoticeLevel;
use super::composer::ComposerOutcome;
use super::first_run::FirstRun;
use super::model_picker::ModelOutcome;
use super::pager::{Pager, PagerOutcome};
use super::picker::{PickerCancel, PickerOutcome};
use super::question::QuestionKey;
use super::rewind_picker::RewindOutcome;
use super::slash::{self, Parsed, SlashCommand};
use super::state::{AppState, Effect, PendingInput, QUIT_WINDOW};
use super::status::Activity;
use crate::llm::image_attach;
use crate::protocol::{Attachment, Op, QuestionAnswer, UserMessageKind};

impl AppState {
    pub fn handle_key(&mut self, key: KeyEvent, now: Instant) -> Vec<Effect> {
        if key.kind == KeyEventKind::Release {
            return Vec::new();
        }
        self.mark_dirty();
        if let Some(pager) = &mut self.pager {
            if pager.handle_key(key, &self.transcript) == PagerOutcome::Close {
                self.pager = None;
            }
            return Vec::new();
        }
        let ctrl = key.modifiers.contains(KeyModifiers::CONTROL);
        let ctrl_c = ctrl && key.code == KeyCode::Char('c');
        if let Some(picker) = self.picker.as_mut().filter(|_| !ctrl_c) {
            let outcome = picker.handle_key(key);
            if !matches!(
                outcome,
                PickerOutcome::Handled | PickerOutcome::Rename { .. }
            ) {
                self.picker = None;
            }
            return match outcome {
                PickerOutcome::Rename { id, title } => vec![Effect::RenameSession { id, title }],
                PickerOutcome::Open(id) if id == self.status.session_id => {
                    self.notice(NoticeLevel::Info, "Already in this session");
                    Vec::new()
                }
                PickerOutcome::Open(id) => vec![Effect::Resume(id)],
                PickerOutcome::Typed(text) => {
                    self.composer.restore(&text);
                    Vec::new()
                }
                PickerOutcome::Cancel(PickerCancel::NewSession) => vec![Effect::NewSession],
                PickerOutcome::Cancel(PickerCancel::Close) | PickerOutcome::Handled => Vec::new(),
            };
        }
        if let Some(picker) = self.model_picker.as_mut().filter(|_| !ctrl_c) {
            let outcome = picker.handle_key(key);
            if outcome != ModelOutcome::Handled {
                self.model_picker = None;
            }
            return match outcome {
                ModelOutcome::Switch(name) => slash::execute(SlashCommand::Model, &name, self),
                ModelOutcome::Refused(why) => {
                    self.notice(NoticeLevel::Warning, &why);
                    Vec::new()
                }
                ModelOutcome::Typed(text) => {
                    self.composer.restore(&text);
                    Vec::new()
                }
                ModelOutcome::Close | ModelOutcome::Handled => Vec::new(),
            };
        }
        if let Some(picker) = self.rewind_picker.as_mut().filter(|_| !ctrl_c) {
            let outcome = picker.handle_key(key);
            if outcome != RewindOutcome::Handled {
                self.rewind_picker = None;
            }
            return match outcome {
                RewindOutcome::Rewind { turn, what } => {
                    vec![Effect::Send(Op::Rewind { turn, what })]
                }
                RewindOutcome::Close | RewindOutcome::Handled => Vec::new(),
            };
        }
        if !self.approvals.is_empty()
            && !ctrl
            && let Some(effects) = self.answer_approval(&key, now)
        {
            return effects;
        }
        if !ctrl && let Some(effects) = self.answer_question(&key, now) {
            return effects;
        }
        match key.code {
            KeyCode::Char('c') if ctrl => return self.ctrl_c(now),
            KeyCode::Char('d') if ctrl && self.composer.is_empty() && !self.is_busy() => {
                return vec![Effect::Quit];
            }
            KeyCode::Char('t') if ctrl => {
                self.pager = Some(Pager::new());
                return Vec::new();
            }
            KeyCode::Esc => {
                if self.composer.dismiss_popup() {
                    return Vec::new();
                }
                if self.is_busy() {
                    return self.interrupt();
                }
                let setup = self.first_run.as_mut().and_then(FirstRun::setup_mut);
                if setup.is_some_and(|setup| setup.back()) {
                    self.composer.clear();
                    return Vec::new();
                }
                if !self.agents.is_empty() {
                    self.notice(NoticeLevel::Warning, "Cancelling the background sub-agents");
                    return vec![Effect::Send(Op::Interrupt)];
                }
                return self.esc_on_empty_box(now);
            }
            _ => {}
        }
        self.quit_armed = None;
        self.esc_armed = None;
        if key.code == KeyCode::Up
            && key.modifiers.is_empty()
            && self.composer.is_empty()
            && let Some(effects) = self.withdraw_queued()
        {
            return effects;
        }
        if let Some(effects) = self.plan_key(&key) {
            return effects;
        }
        match self.composer.handle_key(key) {
            ComposerOutcome::Submit(text) => match self.submit_edited_plan(&text) {
                Some(effects) => effects,
                None => self.submit(text, UserMessageKind::Injected, now),
            },
            ComposerOutcome::Queue(text) => self.submit(text, UserMessageKind::Queued, now),
            ComposerOutcome::Handled | ComposerOutcome::Ignored => Vec::new(),
        }
    }

    /// Esc twice on an empty box between turns opens the rewind picker, as `/rewind` does.
    fn esc_on_empty_box(&mut self, now: Instant) -> Vec<Effect> {
        if !self.composer.is_empty() {
            self.esc_armed = None;
            return Vec::new();
        }
        match self.esc_armed.take() {
            Some(at) if now.duration_since(at) <= QUIT_WINDOW => {
                slash::execute(SlashCommand::Rewind, "", self)
            }
            _ => {
                self.esc_armed = Some(now);
                Vec::new()
            }
        }
    }

    pub fn handle_paste(&mut self, text: &str) {
        self.mark_dirty();
        if self.pager.is_none() {
            self.composer.paste(text);
        }
    }

    /// The mouse is captured only while the pager is open: the wheel scrolls it.
    pub fn handle_mouse(&mut self, mouse: MouseEvent) {
        if let Some(pager) = &mut self.pager {
            pager.handle_mouse(mouse);
            self.mark_dirty();
        }
    }

    fn ctrl_c(&mut self, now: Instant) -> Vec<Effect> {
        if self.is_busy() {
            return self.interrupt();
        }
        if !self.composer.is_empty() {
            self.composer.clear();
            return Vec::new();
        }
        match self.quit_armed {
            Some(armed) if now.saturating_duration_since(armed) < QUIT_WINDOW => {
                vec![Effect::Quit]
            }
            _ => {
                self.quit_armed = Some(now);
                Vec::new()
            }
        }
    }

    /// While a question is open, its answer keys answer it: the menu's digits while the box is
    /// empty, Alt with y, a or n and Esc at any time. `None` for any other key (every plain
    /// letter), which is typed as usual. The question stays until the agent confirms, so an answer that
    /// got lost can be given again.
    fn answer_approval(&mut self, key: &KeyEvent, now: Instant) -> Option<Vec<Effect>> {
        let typing = !self.composer.is_empty();
        let prompt = self.approvals.first_mut()?;
        match prompt.decision_for(key, now, typing) {
            Answer::Decision(decision) => {
                prompt.answered = Some(decision);
                Some(vec![Effect::Send(Op::Approval {
                    id: prompt.id.clone(),
                    decision,
                })])
            }
            Answer::Unavailable(why) => {
                self.notice(NoticeLevel::Warning, &why);
                Some(Vec::new())
            }
            // Too soon after the question appeared: typed, or for Esc, ignored.
            Answer::TooSoon if key.code == KeyCode::Esc => Some(Vec::new()),
            Answer::TooSoon | Answer::NotAnAnswer => None,
        }
    }

    /// While the model's question is open (and no approval question before it), its keys
    /// answer it; `None` for keys it leaves to the box.
    fn answer_question(&mut self, key: &KeyEvent, now: Instant) -> Option<Vec<Effect>> {
        if !self.approvals.is_empty() {
            return None;
        }
        let typed = self.composer.text();
        let prompt = self.questions.first_mut()?;
        match prompt.key(key, now, &typed) {
            QuestionKey::Answer(answer) => {
                prompt.answered = true;
                if matches!(answer, QuestionAnswer::Text { .. }) && !typed.trim().is_empty() {
                    self.composer.clear();
                }
                let id = prompt.id.clone();
                Some(vec![Effect::Send(Op::AnswerQuestion { id, answer })])
            }
            QuestionKey::Handled => Some(Vec::new()),
            QuestionKey::NotForIt => None,
        }
    }

    /// Takes the last queued message back into the box to edit or drop; the agent is told
    /// to withdraw it (if it has not started it yet).
    fn withdraw_queued(&mut self) -> Option<Vec<Effect>> {
        let index = self
            .pending
            .iter()
            .rposition(|p| p.kind == UserMessageKind::Queued && !p.waiting)?;
        let pending = self.pending.remove(index);
        self.composer
            .restore_folded(&pending.text, pending.folds.clone());
        self.notice(
            NoticeLevel::Info,
            "Queued message taken back to edit; Tab queues it again",
        );
        Some(vec![Effect::Send(Op::Withdraw { text: pending.text })])
    }

    fn interrupt(&mut self) -> Vec<Effect> {
        self.status.activity = Activity::Interrupting;
        vec![Effect::Send(Op::Interrupt)]
    }

    /// The images the text names (`@shot.png`, a dropped path), read now; each one that
    /// cannot be attached is said in a notice.
    pub(super) fn attached_images(&mut self, text: &str) -> Vec<Attachment> {
        let cwd = std::env::current_dir().unwrap_or_default();
        let (images, problems) = image_attach::attachments_in(text, &cwd);
        for problem in problems {
            self.notice(NoticeLevel::Warning, &problem);
        }
        images
    }

    /// Sends typed text. While a turn runs, `busy_kind` says whether it is injected into the
    /// turn or queued as the next message; otherwise it starts a turn.
    fn submit(&mut self, text: String, busy_kind: UserMessageKind, now: Instant) -> Vec<Effect> {
        match slash::parse(&text) {
            Parsed::Command(command, args) => return slash::execute(command, args, self),
            // The session expands the person's own commands.
            Parsed::Unknown(name)
                if self.composer.user_commands().iter().any(|c| c.name == name) => {}
            Parsed::Unknown(name) => {
                let note = format!("Unknown command /{name}; /help lists the commands");
                self.notice(NoticeLevel::Warning, &note);
                return Vec::new();
            }
            Parsed::NotCommand => {}
        }
        match self.status.activity {
            Activity::Offline if self.first_run.as_ref().is_some_and(FirstRun::sets_up) => {
                return self.answer_setup(&text);
            }
            Activity::Offline => {
                let note = "No model is ready: configure one as the panel shows, then start \
                            again; your message is back in the box";
                self.notice(NoticeLevel::Warning, note);
                let folds = self.composer.take_folds();
                self.composer.restore_folded(&text, folds);
                return Vec::new();
            }
            Activity::Starting => {
                // Sent as soon as the session is ready (`release_waiting`).
                let folds = self.composer.take_folds();
                self.pending.push(PendingInput {
                    text,
                    kind: UserMessageKind::Prompt,
                    waiting: true,
                    folds,
                });
                return Vec::new();
            }
            Activity::Idle
            | Activity::Thinking
            | Activity::Responding
            | Activity::RunningTool
            | Activity::Retrying
            | Activity::Interrupting
            | Activity::AwaitingApproval
            | Activity::AwaitingAnswer => {}
        }
        let images = self.attached_images(&text);
        let (kind, op) = if self.is_busy() {
            match busy_kind {
                // Images go with a message of their own: one that waits for the turn.
                _ if !images.is_empty() => (
                    UserMessageKind::Queued,
                    Op::UserInput {
                        text: text.clone(),
                        images,
                    },
                ),
                UserMessageKind::Queued => (busy_kind, Op::user_input(text.clone())),
                UserMessageKind::Injected
                | UserMessageKind::Prompt
                | UserMessageKind::Continuation
                | UserMessageKind::StepLimit
                | UserMessageKind::SkillRequest => (busy_kind, Op::Inject { text: text.clone() }),
            }
        } else {
            self.status.activity = Activity::Thinking;
            self.status.turn_started = Some(now);
            (
                UserMessageKind::Prompt,
                Op::UserInput {
                    text: text.clone(),
                    images,
                },
            )
        };
        let folds = self.composer.take_folds();
        self.pending.push(PendingInput {
            text,
            kind,
            waiting: false,
            folds,
        });
        vec![Effect::Send(op)]
    }
}
