//! Keeps what the agent runs inside the workspace.
