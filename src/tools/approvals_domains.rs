//! The domains a session reaches while its network is otherwise off: the configured
//! `[sandbox] allow_domains` and those the person allowed since, for this session only.

use super::{ApprovalAction, ApprovalDecision, ApprovalMode, Approvals, ToolContext};
use crate::sandbox::domains::{DomainList, DomainPattern};
use crate::sandbox::egress::not_listed;

impl Approvals {
    /// Whether `host` may be reached: listed in the config or allowed for the session. A
    /// sub-agent started without network reaches nothing.
    pub fn domain_allowed(&self, host: &str) -> bool {
        !self.offline
            && (self.confinement().domains.allows(host) || self.state().domains.allows(host))
    }

    /// Whether this is a sub-agent started without network.
    pub fn offline(&self) -> bool {
        self.offline
    }

    /// Allows `pattern` for the rest of the session (its sub-agents with network too).
    pub fn allow_domain(&self, pattern: DomainPattern) {
        self.state().domains.add(pattern);
    }

    /// Every allowed domain, configured first; empty for a sub-agent without network.
    pub fn allowed_domains(&self) -> DomainList {
        if self.offline {
            return DomainList::default();
        }
        let mut all = self.confinement().domains.clone();
        for pattern in self.state().domains.patterns() {
            all.add(pattern.clone());
        }
        all
    }

    /// Puts a command's connection to `host`, which no list allows, to the person. Allowed
    /// for the session, the host joins the session's domains. The error is what the command
    /// hears from the proxy.
    pub async fn ask_domain(&self, ctx: &ToolContext, host: &str, port: u16) -> Result<(), String> {
        if self.offline || self.mode() == ApprovalMode::ReadOnly {
            return Err(not_listed(host));
        }
        let pattern = DomainPattern::parse(host).map_err(|_| not_listed(host))?;
        let action = ApprovalAction::Network {
            host: host.to_string(),
            port,
        };
        let reason = format!("{host} is not in [sandbox] allow_domains");
        let grant = Ok(format!("connections to {host}"));
        match self.ask(ctx, "network", action, reason, grant).await {
            Ok(ApprovalDecision::AllowOnce) => Ok(()),
            Ok(ApprovalDecision::AllowSession) => {
                self.allow_domain(pattern);
                Ok(())
            }
            Ok(ApprovalDecision::Deny) => Err(format!(
                "the user did not allow connections to {host}; do not try to reach it another way"
            )),
            Err(_) => Err(not_listed(host)),
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;
    use crate::sandbox::{ApprovalMode, Confinement, SandboxConfig, SandboxSection};

    fn pattern(text: &str) -> DomainPattern {
        DomainPattern::parse(text).unwrap_or_else(|e| panic!("{e}"))
    }

    #[test]
    fn configured_and_session_domains_are_allowed_but_not_to_offline_subagents() {
        let section = SandboxSection {
            allow_domains: DomainList::new(vec![pattern("crates.io")]),
            ..SandboxSection::default()
        };
        let approvals = Approvals::confined(
            SandboxConfig::default(),
            ApprovalMode::Auto,
            Arc::new(Confinement::from_section(&section)),
        );
        assert!(approvals.domain_allowed("crates.io"));
        assert!(!approvals.domain_allowed("example.com"));
        approvals.allow_domain(pattern("example.com"));
        assert!(approvals.domain_allowed("example.com"));
        let names: Vec<String> = approvals
            .allowed_domains()
            .patterns()
            .iter()
            .map(ToString::to_string)
            .collect();
        assert_eq!(names, ["crates.io", "example.com"]);
        let offline = approvals.for_subagent(false);
        assert!(!offline.domain_allowed("crates.io"));
        assert!(offline.allowed_domains().is_empty());
        assert!(approvals.for_subagent(true).domain_allowed("example.com"));
    }
}
