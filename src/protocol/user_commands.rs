//! The person's own slash commands as the protocol lists them.

use serde::{Deserialize, Serialize};

/// One of the person's own slash commands (a Markdown file), as `/` and `/help` list it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct UserCommandInfo {
    pub name: String,
    pub description: String,
    /// Where it was found: ".mnemo/commands", ".claude/commands" or "your commands".
    pub source: String,
}
