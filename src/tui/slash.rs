//! Slash commands. Every command is one variant of `SlashCommand` and runs through
//! `execute`; commands whose back end is not wired yet share one "not available" branch, so
//! wiring one means replacing a single match arm.

use super::cells::NoticeLevel;
use super::state::{AppState, Effect};
use super::status::compact_count;
use crate::protocol::Op;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SlashCommand {
    Help,
    Model,
    Compact,
    Clear,
    Sessions,
    Resume,
    Memory,
    Cost,
    Quit,
}

impl SlashCommand {
    pub const ALL: [SlashCommand; 9] = [
        SlashCommand::Help,
        SlashCommand::Model,
        SlashCommand::Compact,
        SlashCommand::Clear,
        SlashCommand::Sessions,
        SlashCommand::Resume,
        SlashCommand::Memory,
        SlashCommand::Cost,
        SlashCommand::Quit,
    ];

    pub fn name(self) -> &'static str {
        match self {
            SlashCommand::Help => "help",
            SlashCommand::Model => "model",
            SlashCommand::Compact => "compact",
            SlashCommand::Clear => "clear",
            SlashCommand::Sessions => "sessions",
            SlashCommand::Resume => "resume",
            SlashCommand::Memory => "memory",
            SlashCommand::Cost => "cost",
            SlashCommand::Quit => "quit",
        }
    }

    pub fn description(self) -> &'static str {
        match self {
            SlashCommand::Help => "keys and commands",
            SlashCommand::Model => "switch the model",
            SlashCommand::Compact => "summarise the conversation to free context",
            SlashCommand::Clear => "start a new session",
            SlashCommand::Sessions => "list past sessions",
            SlashCommand::Resume => "resume a past session",
            SlashCommand::Memory => "search the memory archive",
            SlashCommand::Cost => "tokens and cost of this session",
            SlashCommand::Quit => "leave mnemo",
        }
    }

    /// Commands whose name starts with `prefix` (without the slash).
    pub fn matching(prefix: &str) -> Vec<SlashCommand> {
        Self::ALL
            .into_iter()
            .filter(|c| c.name().starts_with(prefix))
            .collect()
    }
}

/// What a line starting with `/` asks for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Parsed<'a> {
    Command(SlashCommand, &'a str),
    /// Looks like a command but names none.
    Unknown(&'a str),
    /// Not a command (e.g. a path such as `/usr/bin`): send it as a message.
    NotCommand,
}

pub fn parse(text: &str) -> Parsed<'_> {
    let Some(rest) = text.trim().strip_prefix('/') else {
        return Parsed::NotCommand;
    };
    let (name, args) = rest.split_once(char::is_whitespace).unwrap_or((rest, ""));
    if name.is_empty() || name.contains('/') {
        return Parsed::NotCommand;
    }
    match SlashCommand::ALL.into_iter().find(|c| c.name() == name) {
        Some(command) => Parsed::Command(command, args.trim()),
        None => Parsed::Unknown(name),
    }
}

/// Runs one command against the app state.
pub fn execute(command: SlashCommand, state: &mut AppState) -> Vec<Effect> {
    match command {
        SlashCommand::Help => {
            state.notice(NoticeLevel::Info, &help_text());
            Vec::new()
        }
        SlashCommand::Cost => {
            let text = cost_text(state);
            state.notice(NoticeLevel::Info, &text);
            Vec::new()
        }
        SlashCommand::Clear => vec![Effect::NewSession],
        SlashCommand::Compact => vec![Effect::Send(Op::Compact)],
        SlashCommand::Quit => vec![Effect::Quit],
        SlashCommand::Model
        | SlashCommand::Sessions
        | SlashCommand::Resume
        | SlashCommand::Memory => {
            let text = format!("/{} is not available yet", command.name());
            state.notice(NoticeLevel::Warning, &text);
            Vec::new()
        }
    }
}

fn help_text() -> String {
    let mut text = String::from(
        "Enter send (while the agent works: inject into the running turn) · Tab queue as the \
         next message\nShift+Enter or Alt+Enter new line · Up/Down history · Esc interrupt · \
         Ctrl+C interrupt, twice to quit · Ctrl+T transcript pager",
    );
    for command in SlashCommand::ALL {
        text.push_str(&format!(
            "\n/{:<9} {}",
            command.name(),
            command.description()
        ));
    }
    text
}

fn cost_text(state: &AppState) -> String {
    let status = &state.status;
    let usage = status.total;
    format!(
        "Session cost ${:.4} · input {} tokens (cache read {}, cache write {}) · output {} \
         tokens · context {:.0}% used",
        status.cost_usd,
        compact_count(usage.input_tokens),
        compact_count(usage.cache_read_tokens),
        compact_count(usage.cache_write_tokens),
        compact_count(usage.output_tokens),
        status.context_percent
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_commands_arguments_and_paths() {
        assert_eq!(parse("/cost"), Parsed::Command(SlashCommand::Cost, ""));
        assert_eq!(
            parse("/model gpt-5 "),
            Parsed::Command(SlashCommand::Model, "gpt-5")
        );
        assert_eq!(parse("/nope"), Parsed::Unknown("nope"));
        assert_eq!(parse("/usr/bin is odd"), Parsed::NotCommand);
        assert_eq!(parse("hello"), Parsed::NotCommand);
    }

    #[test]
    fn completion_matches_by_prefix() {
        assert_eq!(
            SlashCommand::matching("c"),
            [
                SlashCommand::Compact,
                SlashCommand::Clear,
                SlashCommand::Cost
            ]
        );
        assert_eq!(SlashCommand::matching("").len(), SlashCommand::ALL.len());
    }
}
