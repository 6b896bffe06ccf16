//! Plan mode's part of the approvals: while it is on the mode is read-only, and the mode
//! before it is kept to come back to.

use super::{ApprovalMode, Approvals};

impl Approvals {
    /// The mode plan mode returns to, while plan mode is on.
    pub fn planning(&self) -> Option<ApprovalMode> {
        self.state().planning
    }

    /// Plan mode on: nothing is written until it ends. False when it was on already.
    pub fn enter_plan(&self) -> bool {
        let mut state = self.state();
        if state.planning.is_some() {
            return false;
        }
        state.planning = Some(state.mode);
        state.mode = ApprovalMode::ReadOnly;
        true
    }

    /// Plan mode off: the mode before it is back (returned); `None` when it was not on.
    pub fn leave_plan(&self) -> Option<ApprovalMode> {
        let mut state = self.state();
        let before = state.planning.take()?;
        state.mode = before;
        Some(before)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sandbox::SandboxConfig;

    #[test]
    fn plan_mode_writes_nothing_and_gives_back_the_mode_before_it() {
        let approvals = Approvals::new(SandboxConfig::default(), ApprovalMode::Auto);
        assert!(approvals.enter_plan());
        assert!(!approvals.enter_plan(), "already on");
        assert_eq!(approvals.mode(), ApprovalMode::ReadOnly);
        assert_eq!(approvals.planning(), Some(ApprovalMode::Auto));
        assert_eq!(approvals.leave_plan(), Some(ApprovalMode::Auto));
        assert_eq!(approvals.mode(), ApprovalMode::Auto);
        assert_eq!(approvals.leave_plan(), None);
        // Choosing a mode while planning ends plan mode.
        approvals.enter_plan();
        approvals.set_mode(ApprovalMode::Ask);
        assert_eq!(approvals.planning(), None);
        assert_eq!(approvals.mode(), ApprovalMode::Ask);
    }
}
