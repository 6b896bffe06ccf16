//! The non-interactive subcommands (`mnemo sessions …`, `mnemo memory …`,
//! `mnemo capabilities …`, `mnemo skills …`, `mnemo schedule …`, `mnemo trust`,
//! `mnemo doctor`, `mnemo config`). Each writes its answer to a writer so that it can be
//! tested without a process.

pub mod capabilities;
pub mod config;
pub mod doctor;
pub mod dream;
pub mod mcp;
pub mod memory;
pub mod rewind;
pub mod schedules;
pub mod sessions;
pub mod skill_drafts;
pub mod skills;
pub mod status;
pub mod telegram;
pub mod trust;

use crate::host::LaunchError;
use crate::memory::StoreError;

#[derive(Debug, thiserror::Error)]
pub enum CommandError {
    #[error(transparent)]
    Launch(#[from] LaunchError),
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error(transparent)]
    Skill(#[from] crate::skills::SkillError),
    #[error(transparent)]
    Dream(#[from] crate::jobs::DreamError),
    #[error(transparent)]
    Rewind(#[from] crate::rewind::RewindError),
    #[error("cannot write the output: {0}")]
    Output(#[from] std::io::Error),
    #[error("{0}")]
    Usage(String),
}

/// A local date and time for listings.
pub(crate) fn local_time(millis: i64) -> String {
    chrono::DateTime::from_timestamp_millis(millis)
        .map(|t| {
            t.with_timezone(&chrono::Local)
                .format("%Y-%m-%d %H:%M")
                .to_string()
        })
        .unwrap_or_else(|| "-".into())
}

/// The width of a column holding `names` under `heading`.
pub(crate) fn column_width<'a>(names: impl Iterator<Item = &'a str>, heading: &str) -> usize {
    names
        .map(|name| name.chars().count())
        .fold(heading.chars().count(), usize::max)
}
