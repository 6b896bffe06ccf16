//! The person's own slash commands: Markdown files in `.mnemo/commands/` and `.claude/commands/`
//! (the workspace's, read-only, only in a trusted workspace) and in mnemo's config directory's
//! `commands/`. `NAME.md` becomes `/NAME`; its body, with `$ARGUMENTS` (everything after the
//! name) and `$1`…`$9` (the words, "quoted" ones kept whole) filled in, is sent as the prompt.
//! Optional YAML frontmatter gives a `description`, `allowed-tools` and a `model`. Expanded in
//! the session, so every front end (TUI, `mnemo run`, gateway, Telegram) gets the same.

mod expand;
mod load;

pub use expand::expand_body;
pub use load::load;

use crate::protocol::UserCommandInfo;

/// mnemo's own command names, in the terminal and in Telegram: a file cannot take one.
pub const BUILT_IN: &[&str] = &[
    "help",
    "model",
    "compact",
    "clear",
    "sessions",
    "resume",
    "memory",
    "capabilities",
    "skills",
    "schedule",
    "mcp",
    "approval",
    "plan",
    "cost",
    "rewind",
    "quit",
    "start",
    "stop",
    "new",
    "approve",
];

/// Where a command was found; the first place that has a name wins, in this order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Source {
    /// `.mnemo/commands/` of the workspace.
    Workspace,
    /// `.claude/commands/` of the workspace.
    Claude,
    /// `commands/` in mnemo's config directory.
    Person,
}

impl Source {
    pub fn label(self) -> &'static str {
        match self {
            Source::Workspace => ".mnemo/commands",
            Source::Claude => ".claude/commands",
            Source::Person => "your commands",
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UserCommand {
    pub name: String,
    pub description: String,
    pub body: String,
    /// Tools the command means to use (Claude Code's `allowed-tools`): listed, not granted;
    /// mnemo's approval mode still decides.
    pub allowed_tools: Vec<String>,
    /// The model its turn runs on.
    pub model: Option<String>,
    pub source: Source,
}

/// The commands a session offers, and the workspace's ones it does not (untrusted).
#[derive(Debug, Clone, Default)]
pub struct UserCommands {
    pub commands: Vec<UserCommand>,
    /// Names of the workspace's commands not loaded because the workspace is not trusted.
    pub untrusted: Vec<String>,
    /// Files that could not be used, and why (said at the start of the session).
    pub notices: Vec<String>,
}

/// What a prompt turned out to be.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Expansion<'a> {
    /// Not one of the person's commands: sent as typed.
    Plain,
    Command {
        command: &'a UserCommand,
        prompt: String,
    },
    /// A command of a workspace the person has not trusted.
    Untrusted(String),
}

impl UserCommands {
    pub fn find(&self, name: &str) -> Option<&UserCommand> {
        self.commands.iter().find(|c| c.name == name)
    }

    /// `text` expanded when it starts with `/NAME` of one of the commands.
    pub fn expand(&self, text: &str) -> Expansion<'_> {
        let Some(rest) = text.trim_start().strip_prefix('/') else {
            return Expansion::Plain;
        };
        let (name, args) = rest.split_once(char::is_whitespace).unwrap_or((rest, ""));
        if let Some(command) = self.find(name) {
            let prompt = expand_body(&command.body, args.trim());
            return Expansion::Command { command, prompt };
        }
        match self.untrusted.iter().any(|n| n == name) {
            true => Expansion::Untrusted(name.to_string()),
            false => Expansion::Plain,
        }
    }

    /// The commands as front ends list them.
    pub fn infos(&self) -> Vec<UserCommandInfo> {
        self.commands
            .iter()
            .map(|c| UserCommandInfo {
                name: c.name.clone(),
                description: c.description.clone(),
                source: c.source.label().to_string(),
            })
            .collect()
    }
}

/// Why a workspace command is not run.
pub fn untrusted_message(name: &str) -> String {
    format!(
        "/{name} is a command of this workspace (.mnemo/commands or .claude/commands), which you \
         have not trusted, so it is not run; `mnemo trust` trusts the workspace"
    )
}

#[cfg(test)]
mod tests;
