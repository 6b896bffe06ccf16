//! A yes-or-no question to the person that no approval mode answers for them.

use super::{ApprovalAction, ApprovalDecision, ApprovalMode, Approvals, ToolContext};

impl Approvals {
    /// Asks the person about `action`, whatever the mode; `false` when they say no, when
    /// nobody can answer, and in a read-only session.
    pub async fn confirm(
        &self,
        ctx: &ToolContext,
        tool: &str,
        action: ApprovalAction,
        reason: String,
    ) -> bool {
        if self.mode() == ApprovalMode::ReadOnly {
            return false;
        }
        let once = Err("each is confirmed on its own".to_string());
        matches!(
            self.ask(ctx, tool, action, reason, once).await,
            Ok(ApprovalDecision::AllowOnce | ApprovalDecision::AllowSession)
        )
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use tokio::sync::mpsc;

    use super::*;
    use crate::protocol::Event;
    use crate::sandbox::SandboxConfig;
    use crate::tools::builtin::test_support::{context, workspace};

    fn action() -> ApprovalAction {
        ApprovalAction::Write {
            path: "skill".into(),
            diff: "+step".into(),
        }
    }

    #[tokio::test]
    async fn only_the_persons_yes_confirms() {
        let (_dir, ws) = workspace().unwrap_or_else(|e| panic!("{e}"));
        let mut ctx = context(&ws);
        let nobody = Arc::new(Approvals::new(SandboxConfig::default(), ApprovalMode::Full));
        ctx.approvals = nobody.clone();
        assert!(!nobody.confirm(&ctx, "t", action(), "why".into()).await);

        for (decision, expected) in [
            (ApprovalDecision::AllowOnce, true),
            (ApprovalDecision::Deny, false),
        ] {
            let approvals = Arc::new(Approvals::new(SandboxConfig::default(), ApprovalMode::Auto));
            let (tx, mut rx) = mpsc::channel(8);
            approvals.attach(tx);
            approvals.enable_questions();
            ctx.approvals = approvals.clone();
            let answering = approvals.clone();
            tokio::spawn(async move {
                while let Some(event) = rx.recv().await {
                    if let Event::ApprovalRequested { id, .. } = event {
                        answering.resolve(&id, decision);
                    }
                }
            });
            assert_eq!(
                approvals.confirm(&ctx, "t", action(), "why".into()).await,
                expected
            );
            approvals.set_mode(ApprovalMode::ReadOnly);
            assert!(!approvals.confirm(&ctx, "t", action(), "why".into()).await);
        }
    }
}
