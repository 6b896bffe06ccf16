//! What tools reach beyond their session, through whoever runs it: `mnemo serve` tells its
//! scheduler in process, a standalone session tells a running daemon over its socket. Tools
//! know only this trait, never the daemon or the gateway.

use std::any::Any;

use futures_util::future::BoxFuture;

pub trait ToolServices: Send + Sync {
    /// Tells the scheduler that schedules were made or removed; whether one heard it.
    fn jobs_changed(&self) -> BoxFuture<'_, bool>;
    /// Whether a scheduler runs the schedules (else they wait until `mnemo serve` starts).
    fn scheduler_running(&self) -> bool;
}

/// No scheduler anywhere.
pub struct NoServices;

impl ToolServices for NoServices {
    fn jobs_changed(&self) -> BoxFuture<'_, bool> {
        Box::pin(async { false })
    }

    fn scheduler_running(&self) -> bool {
        false
    }
}

/// The calling session's sub-agents, carried to the sub-agent tools. The agent implements it
/// and registers those tools, which alone know what is inside; tools/ never names the agent.
pub trait SubAgents: Send + Sync {
    fn as_any(&self) -> &dyn Any;
}
