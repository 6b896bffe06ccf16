//! mnemo: a terminal coding and ops assistant. The library holds everything; the binary only
//! parses flags and picks a front end.

pub mod acp;
pub mod agent;
pub mod capabilities;
pub mod channels;
pub mod commands;
pub mod config;
pub mod crash;
pub mod gateway;
pub mod headless;
pub mod hooks;
pub mod host;
pub mod jobs;
pub mod llm;
pub mod mcp;
pub mod memory;
pub mod present;
pub mod protocol;
pub mod rewind;
pub mod sandbox;
pub mod serve;
pub mod signals;
pub mod skills;
pub mod text;
pub mod tools;
pub mod tui;
pub mod user_commands;
