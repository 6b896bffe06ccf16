//! `[schedules]`: how far the agent's schedules may go. A session that could make thousands of
//! schedules, each firing every second, or a daemon running all of them at once, would use up
//! the machine for nobody.

use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ScheduleLimits {
    /// Most schedules one workspace may have.
    pub max_per_workspace: u32,
    /// The shortest period of a repeating schedule (`in 30s` with repeat), in seconds.
    pub min_interval_secs: u64,
    /// Most schedule runs `mnemo serve` has going at once; the others wait their turn.
    pub max_running: u32,
    /// How many stored runs (sessions) each heartbeat and schedule keeps; older ones are
    /// deleted when a run ends.
    pub keep_runs: u32,
}

impl Default for ScheduleLimits {
    fn default() -> Self {
        Self {
            max_per_workspace: 50,
            min_interval_secs: 60,
            max_running: 4,
            keep_runs: 20,
        }
    }
}
