//! Memory: mnemo's SQLite store and everything built on it. The working set, the archive with
//! its full-text and semantic search, experiences, capabilities and settings all live in one
//! database file, owned by one thread (`store`); every SQL statement of the program is in
//! this module.

pub mod archive;
pub mod capabilities;
pub mod db;
pub mod dream_held;
pub mod dream_notes;
pub mod embed;
pub mod error;
pub mod experiences;
pub mod fts_query;
pub mod importance;
pub mod keyword;
pub mod leases;
pub mod local_embed;
pub mod messages;
mod piece_file;
pub mod piece_index;
pub mod pieces;
pub mod ranking;
pub mod recall;
mod recall_hits;
pub mod recall_store;
pub mod schedules;
pub mod schema;
pub mod session_events;
pub mod session_lease;
pub mod sessions;
pub mod skill_drafts;
pub mod skills;
pub mod store;
pub mod summary;
pub mod telegram;
pub mod tool_index;
pub mod types;
pub mod vectors;

#[cfg(test)]
mod test_server;
#[cfg(test)]
mod test_support;

pub use capabilities::{Capability, CapabilityVersion, NewCapability};
pub use db::Db;
pub use embed::{
    ArchiveSearch, EmbedError, EmbeddingClient, EmbeddingConfig, EmbeddingKind, search_archive,
};
pub use error::StoreError;
pub use importance::importance;
pub use store::Store;
pub use summary::mechanical_summary;
pub use types::{
    ArchiveEntry, Experience, Millis, NewArchiveEntry, NewSession, Scope, SearchHit, SessionRow,
    SessionTotals, StoredMessage, TurnRecord,
};
