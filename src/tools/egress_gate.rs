//! The session's gate for the sandbox's proxy: the configured domains and the session's grants
//! pass; another domain is put to the person once per command, who may allow it for the
//! session.

use std::collections::HashSet;
use std::sync::{Mutex, PoisonError};

use futures_util::future::BoxFuture;

use super::ToolContext;
use crate::sandbox::egress::{Gate, listed_exactly, not_listed};

pub struct SessionGate {
    ctx: ToolContext,
    /// Hosts the person refused during this command: not asked again for its next connection.
    refused: Mutex<HashSet<String>>,
    /// One question at a time: a command opening ten connections to one host asks once.
    asking: tokio::sync::Mutex<()>,
}

impl SessionGate {
    pub fn new(ctx: ToolContext) -> Self {
        Self {
            ctx,
            refused: Mutex::default(),
            asking: tokio::sync::Mutex::new(()),
        }
    }

    fn refused(&self) -> std::sync::MutexGuard<'_, HashSet<String>> {
        self.refused.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl std::fmt::Debug for SessionGate {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SessionGate")
            .field("session", &self.ctx.session_id)
            .finish_non_exhaustive()
    }
}

impl Gate for SessionGate {
    fn allowed(&self) -> crate::sandbox::domains::DomainList {
        self.ctx.approvals.allowed_domains()
    }

    fn allow<'a>(&'a self, host: &'a str, port: u16) -> BoxFuture<'a, Result<(), String>> {
        Box::pin(async move {
            let approvals = &self.ctx.approvals;
            if approvals.domain_allowed(host) {
                return Ok(());
            }
            let _turn = self.asking.lock().await;
            if approvals.domain_allowed(host) {
                return Ok(());
            }
            if self.refused().contains(host) {
                return Err(not_listed(host));
            }
            let answer = approvals.ask_domain(&self.ctx, host, port).await;
            if answer.is_err() {
                self.refused().insert(host.to_string());
            }
            answer
        })
    }

    fn listed_exactly(&self, host: &str) -> bool {
        listed_exactly(&self.ctx.approvals.confinement().domains, host)
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use tokio::sync::mpsc;

    use super::*;
    use crate::protocol::{ApprovalAction, ApprovalDecision, Event};
    use crate::sandbox::{ApprovalMode, SandboxConfig};
    use crate::tools::Approvals;
    use crate::tools::builtin::test_support::{context, workspace};

    fn gate_asking(mode: ApprovalMode) -> (SessionGate, Arc<Approvals>, mpsc::Receiver<Event>) {
        let approvals = Arc::new(Approvals::new(SandboxConfig::default(), mode));
        let (tx, rx) = mpsc::channel(8);
        approvals.attach(tx);
        approvals.enable_questions();
        let (_dir, ws) = workspace().unwrap_or_else(|e| panic!("{e}"));
        let mut ctx = context(&ws);
        ctx.approvals = approvals.clone();
        (SessionGate::new(ctx), approvals, rx)
    }

    /// Answers the next question with `decision`, giving what it asked.
    async fn answer(
        questions: &mut mpsc::Receiver<Event>,
        approvals: &Approvals,
        decision: ApprovalDecision,
    ) -> ApprovalAction {
        loop {
            let event = tokio::time::timeout(std::time::Duration::from_secs(10), questions.recv())
                .await
                .ok()
                .flatten();
            match event {
                Some(Event::ApprovalRequested { id, action, .. }) => {
                    approvals.resolve(&id, decision);
                    return action;
                }
                Some(_) => {}
                None => panic!("no question was asked"),
            }
        }
    }

    /// Whether another question is waiting (other events, such as the answer's, are not).
    fn asked_more(questions: &mut mpsc::Receiver<Event>) -> bool {
        std::iter::from_fn(|| questions.try_recv().ok())
            .any(|event| matches!(event, Event::ApprovalRequested { .. }))
    }

    #[tokio::test]
    async fn an_unlisted_host_is_asked_once_and_a_session_grant_keeps_it_open() {
        let (gate, approvals, mut questions) = gate_asking(ApprovalMode::Auto);
        let gate = Arc::new(gate);
        let first = tokio::spawn({
            let gate = gate.clone();
            async move { gate.allow("example.org", 443).await }
        });
        let asked = answer(&mut questions, &approvals, ApprovalDecision::AllowSession).await;
        assert_eq!(
            asked,
            ApprovalAction::Network {
                host: "example.org".into(),
                port: 443
            }
        );
        assert_eq!(first.await.ok(), Some(Ok(())));
        assert_eq!(gate.allow("example.org", 443).await, Ok(()));
        assert!(!asked_more(&mut questions), "asked twice");
        assert!(approvals.domain_allowed("example.org"));
        assert!(
            gate.active(),
            "a grant turns the proxy on for later commands"
        );
    }

    #[tokio::test]
    async fn a_refused_host_stays_refused_for_the_command_and_read_only_never_asks() {
        let (gate, approvals, mut questions) = gate_asking(ApprovalMode::Ask);
        let gate = Arc::new(gate);
        let first = tokio::spawn({
            let gate = gate.clone();
            async move { gate.allow("example.org", 80).await }
        });
        answer(&mut questions, &approvals, ApprovalDecision::Deny).await;
        let first = first.await.ok();
        assert!(
            matches!(&first, Some(Err(why)) if why.contains("did not allow")),
            "{first:?}"
        );
        assert!(gate.allow("example.org", 80).await.is_err());
        approvals.set_mode(ApprovalMode::ReadOnly);
        assert!(gate.allow("other.org", 80).await.is_err());
        assert!(!asked_more(&mut questions), "asked again");
    }
}
