//! Work mnemo does while nobody watches, run by `mnemo serve` or by hand: heartbeats,
//! schedules and the dream cycle. Planning only: `mnemo serve`
//! runs the jobs through a [`scheduler::JobRunner`] of its own.

pub mod book;
pub mod cron;
pub mod delivery;
pub mod dream;
pub mod dream_batch;
pub mod dream_files;
mod dream_prompts;
pub mod heartbeat;
pub mod job;
pub mod listing;
pub mod plan;
pub mod schedule;
pub mod scheduler;
pub mod timing;

pub use dream::{DreamError, DreamReport, Dreamer};
