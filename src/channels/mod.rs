//! Remote front ends besides the gateway: chat services that reach the daemon's sessions.

pub mod telegram;
