//! Plan mode in the terminal: Shift+Tab cycles ask → auto → plan, the status line says when
//! plan mode is on, and a proposed plan is offered above the input box: 1 carries it out,
//! 2 puts it in the box to edit first (Enter then carries out the edited plan), 3 keeps
//! planning (what is typed next goes to the agent as usual).

use crossterm::event::{KeyCode, KeyEvent};
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};

use super::cells::NoticeLevel;
use super::state::{AppState, Effect};
use crate::protocol::{ApprovalMode, Op};

impl AppState {
    /// The keys plan mode answers before the input box: Shift+Tab, and the offer's choices
    /// while the box is empty.
    pub(super) fn plan_key(&mut self, key: &KeyEvent) -> Option<Vec<Effect>> {
        if key.code == KeyCode::BackTab {
            return Some(self.cycle_mode());
        }
        let offered = self.plan_offer.clone()?;
        if !self.composer.is_empty() {
            return None;
        }
        match key.code {
            KeyCode::Char('1') => {
                self.plan_offer = None;
                Some(vec![Effect::Send(Op::ApprovePlan { plan: None })])
            }
            KeyCode::Char('2') => {
                self.plan_offer = None;
                self.editing_plan = true;
                self.composer.restore(&offered);
                let note = "Edit the plan; Enter carries out the edited plan";
                self.notice(NoticeLevel::Info, note);
                Some(Vec::new())
            }
            KeyCode::Char('3') => {
                self.plan_offer = None;
                let note = "Still in plan mode: write what to change in the plan";
                self.notice(NoticeLevel::Info, note);
                Some(Vec::new())
            }
            _ => None,
        }
    }

    /// Text sent from the box while the person edits a proposed plan: the plan to carry out.
    pub(super) fn submit_edited_plan(&mut self, text: &str) -> Option<Vec<Effect>> {
        if !std::mem::take(&mut self.editing_plan) {
            return None;
        }
        let plan = Some(text.to_string());
        Some(vec![Effect::Send(Op::ApprovePlan { plan })])
    }

    /// ask → auto → plan → ask; from read-only or full, ask. Full access is never a
    /// keystroke away.
    fn cycle_mode(&mut self) -> Vec<Effect> {
        if self.status.planning {
            return vec![
                Effect::Send(Op::SetPlanMode { on: false }),
                Effect::Send(Op::SetApprovalMode {
                    mode: ApprovalMode::Ask,
                }),
            ];
        }
        match self.status.approval_mode {
            ApprovalMode::Ask => vec![Effect::Send(Op::SetApprovalMode {
                mode: ApprovalMode::Auto,
            })],
            ApprovalMode::Auto => vec![Effect::Send(Op::SetPlanMode { on: true })],
            ApprovalMode::ReadOnly | ApprovalMode::Full => {
                vec![Effect::Send(Op::SetApprovalMode {
                    mode: ApprovalMode::Ask,
                })]
            }
        }
    }
}

/// The offer of a proposed plan, above the input box.
pub fn offer_lines() -> Vec<Line<'static>> {
    let bold = Style::default()
        .fg(Color::Blue)
        .add_modifier(Modifier::BOLD);
    let dim = Style::default().fg(Color::DarkGray);
    vec![
        Line::from(vec![
            Span::styled("? ", bold),
            Span::styled("Carry out the plan above?", bold),
        ]),
        Line::from(vec![
            Span::raw("  1 carry it out   2 edit it first   3 keep planning"),
            Span::styled("  (or type what to change)", dim),
        ]),
    ]
}
