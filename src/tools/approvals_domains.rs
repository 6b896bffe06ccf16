//! The domains a session reaches while its network is otherwise off: the configured
//! `[sandbox] allow_domains` and those the person allowed since, for this session only.

use super::Approvals;
use crate::sandbox::domains::{DomainList, DomainPattern};

impl Approvals {
    /// Whether `host` may be reached: listed in the config or allowed for the session. A
    /// sub-agent started without network reaches nothing.
    pub fn domain_allowed(&self, host: &str) -> bool {
        !self.offline
            && (self.confinement().domains.allows(host) || self.state().domains.allows(host))
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
