//! Keeps what the agent runs inside the workspace.

pub mod path_guard;
