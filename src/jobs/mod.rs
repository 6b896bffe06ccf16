//! Work mnemo does while nobody watches, run by `mnemo serve` or by hand: the dream cycle.

pub mod dream;
pub mod dream_batch;
mod dream_prompts;

pub use dream::{DreamError, DreamReport, Dreamer};
