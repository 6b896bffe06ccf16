//! What the sub-agent tools need of the session that calls them, taken as the call starts:
//! the tools reach it through their `ToolContext`, so they are ordinary registry tools.

use std::sync::Arc;

use super::{AgentRuns, Mailbox};
use crate::agent::services::Services;
use crate::agent::{Session, SessionSettings};
use crate::llm::Message;
use crate::llm::fallback::FallbackChain;
use crate::tools::ToolRegistry;
use crate::tools::services::SubAgents;

pub struct AgentHost {
    pub(super) id: String,
    pub(super) settings: SessionSettings,
    pub(super) chain: Arc<FallbackChain>,
    pub(super) tools: ToolRegistry,
    pub(super) services: Arc<Services>,
    pub(super) runs: Arc<AgentRuns>,
    pub(super) mailbox: Mailbox,
    /// The conversation as the model last saw it, for forks and full-context sub-agents.
    pub(super) snapshot: Vec<Arc<Message>>,
}

impl SubAgents for AgentHost {
    fn as_any(&self) -> &dyn std::any::Any {
        self
    }
}

impl Session {
    /// The sub-agent tools' view of this session, as it is now.
    pub(in crate::agent) fn agent_host(&self) -> Arc<AgentHost> {
        Arc::new(AgentHost {
            id: self.id.clone(),
            settings: self.settings.clone(),
            chain: self.chain.clone(),
            tools: self.tools.clone(),
            services: self.services.clone(),
            runs: self.runs.clone(),
            mailbox: self.mailbox.clone(),
            snapshot: self.context_snapshot(),
        })
    }
}
