//! Slash commands. Every command is one variant of `SlashCommand` and runs through
//! `execute`: what the model alone can answer (help, cost, the model list) becomes a note;
//! what needs the agent or the store becomes an effect for the app loop.

use super::cells::NoticeLevel;
use super::model_picker::ModelPicker;
use super::state::{AppState, Effect};
use crate::present::compact_count;
use crate::protocol::Op;
use crate::sandbox::ApprovalMode;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SlashCommand {
    Help,
    Model,
    Compact,
    Clear,
    Sessions,
    Resume,
    Memory,
    Capabilities,
    Skills,
    Schedule,
    Mcp,
    Approval,
    Plan,
    Cost,
    Rewind,
    Quit,
}

impl SlashCommand {
    pub const ALL: [SlashCommand; 16] = [
        SlashCommand::Help,
        SlashCommand::Model,
        SlashCommand::Compact,
        SlashCommand::Clear,
        SlashCommand::Sessions,
        SlashCommand::Resume,
        SlashCommand::Memory,
        SlashCommand::Capabilities,
        SlashCommand::Skills,
        SlashCommand::Schedule,
        SlashCommand::Mcp,
        SlashCommand::Approval,
        SlashCommand::Plan,
        SlashCommand::Cost,
        SlashCommand::Rewind,
        SlashCommand::Quit,
    ];

    /// The longest name, so descriptions line up in lists.
    pub const NAME_WIDTH: usize = 12;

    pub fn name(self) -> &'static str {
        match self {
            SlashCommand::Help => "help",
            SlashCommand::Model => "model",
            SlashCommand::Compact => "compact",
            SlashCommand::Clear => "clear",
            SlashCommand::Sessions => "sessions",
            SlashCommand::Resume => "resume",
            SlashCommand::Memory => "memory",
            SlashCommand::Capabilities => "capabilities",
            SlashCommand::Skills => "skills",
            SlashCommand::Schedule => "schedule",
            SlashCommand::Mcp => "mcp",
            SlashCommand::Approval => "approval",
            SlashCommand::Plan => "plan",
            SlashCommand::Cost => "cost",
            SlashCommand::Rewind => "rewind",
            SlashCommand::Quit => "quit",
        }
    }

    pub fn description(self) -> &'static str {
        match self {
            SlashCommand::Help => "keys and commands",
            SlashCommand::Model => "switch the model",
            SlashCommand::Compact => "summarise the conversation to free context",
            SlashCommand::Clear => "clear the screen and start a new session",
            SlashCommand::Sessions => "recent sessions of every directory",
            SlashCommand::Resume => "pick a session of this directory",
            SlashCommand::Memory => "search the memory archive",
            SlashCommand::Capabilities => "tools the agent made: offered now, stored",
            SlashCommand::Skills => "skills: origin, uses, state",
            SlashCommand::Schedule => "schedules and heartbeats run by mnemo serve",
            SlashCommand::Mcp => "MCP servers and their state",
            SlashCommand::Approval => "when to ask before acting: read-only, ask, auto, full",
            SlashCommand::Plan => "plan mode on or off: read, change nothing, end with a plan",
            SlashCommand::Cost => "tokens and cost of this session",
            SlashCommand::Rewind => "take back turns: files, conversation or both (Esc Esc)",
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

/// One line of the `/` popup: mnemo's own command or one of the person's.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PopupItem {
    pub name: String,
    pub description: String,
}

/// The popup's lines for `prefix`: mnemo's commands, then the person's own.
pub fn popup_items(prefix: &str, own: &[crate::protocol::UserCommandInfo]) -> Vec<PopupItem> {
    let builtin = SlashCommand::matching(prefix)
        .into_iter()
        .map(|c| PopupItem {
            name: c.name().to_string(),
            description: c.description().to_string(),
        });
    let own = own
        .iter()
        .filter(|c| c.name.starts_with(prefix))
        .map(|c| PopupItem {
            name: c.name.clone(),
            description: format!("{} ({})", c.description, c.source),
        });
    builtin.chain(own).collect()
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

/// Runs one command (with the text after its name) against the app state.
pub fn execute(command: SlashCommand, args: &str, state: &mut AppState) -> Vec<Effect> {
    match command {
        SlashCommand::Help => {
            let text = help_text(state.composer.user_commands());
            state.notice(NoticeLevel::Info, &text);
            Vec::new()
        }
        SlashCommand::Cost => {
            let text = cost_text(state);
            state.notice(NoticeLevel::Info, &text);
            Vec::new()
        }
        SlashCommand::Clear => vec![Effect::ClearSession],
        SlashCommand::Compact => vec![Effect::Send(Op::Compact)],
        SlashCommand::Capabilities => vec![Effect::ListCapabilities],
        SlashCommand::Skills => vec![Effect::ListSkills],
        SlashCommand::Schedule => vec![Effect::ListSchedules],
        SlashCommand::Mcp => vec![Effect::Send(Op::ListMcpServers)],
        SlashCommand::Rewind => {
            if refuse_while_busy(state, "rewinding") {
                return Vec::new();
            }
            vec![Effect::Send(Op::ListTurns)]
        }
        SlashCommand::Quit => vec![Effect::Quit],
        SlashCommand::Sessions => vec![Effect::ListSessions],
        SlashCommand::Resume => {
            if refuse_while_busy(state, "switching sessions") {
                return Vec::new();
            }
            match args {
                "" => vec![Effect::OpenPicker],
                id => vec![Effect::Resume(id.to_string())],
            }
        }
        SlashCommand::Model => model(args, state),
        SlashCommand::Approval => approval(args, state),
        SlashCommand::Plan => {
            let on = !state.status.planning;
            vec![Effect::Send(Op::SetPlanMode { on })]
        }
        SlashCommand::Memory => {
            if args.is_empty() {
                let text = "/memory QUERY searches the archive of earlier conversations";
                state.notice(NoticeLevel::Warning, text);
                return Vec::new();
            }
            vec![Effect::SearchMemory(args.to_string())]
        }
    }
}

/// What `/mcp` shows of the servers.
pub fn mcp_text(servers: &[crate::protocol::McpServerStatus]) -> String {
    if servers.is_empty() {
        return "no MCP servers are configured: add [mcp_servers.NAME] to your config.toml \
                (docs/mcp.md)"
            .to_string();
    }
    let width = servers.iter().map(|s| s.name.len()).max().unwrap_or(0);
    let mut text = String::from("MCP servers:");
    for server in servers {
        let found = match server.deferred {
            true => " · too many to list: found with mcp_tool_search",
            false => "",
        };
        text.push_str(&format!(
            "\n  {:width$}  {}{found}",
            server.name, server.state
        ));
    }
    text
}

/// `/model` lists the configured models; `/model NAME` switches to one of them (or to a
/// `scripted:PATH` model) and the session goes on with it.
fn model(name: &str, state: &mut AppState) -> Vec<Effect> {
    let current = state.status.model.clone();
    if name.is_empty() && !state.model_info.is_empty() {
        let picker = ModelPicker::new(state.model_info.clone(), current);
        state.model_picker = Some(picker);
        return Vec::new();
    }
    if name.is_empty() {
        let mut text = String::from("Models (/model NAME switches; the session goes on):");
        for model in &state.models {
            let mark = if *model == current { "  (current)" } else { "" };
            text.push_str(&format!("\n  {model}{mark}"));
        }
        if !state.models.contains(&current) && !current.is_empty() {
            text.push_str(&format!("\n  {current}  (current)"));
        }
        state.notice(NoticeLevel::Info, &text);
        return Vec::new();
    }
    if name == current {
        state.notice(NoticeLevel::Info, &format!("Already using {name}"));
        return Vec::new();
    }
    if !state.models.iter().any(|m| m == name) && !name.starts_with("scripted:") {
        let known = match state.models.join(", ") {
            list if list.is_empty() => "none".to_string(),
            list => list,
        };
        let text = format!("Unknown model {name}; the configured models are: {known}");
        state.notice(NoticeLevel::Error, &text);
        return Vec::new();
    }
    // The agent switches at its next model call, so a running turn need not end first.
    vec![Effect::Send(Op::SetModel {
        model: name.to_string(),
    })]
}

/// `/approval` shows the modes; `/approval MODE` switches from the next tool call on.
fn approval(name: &str, state: &mut AppState) -> Vec<Effect> {
    if name.is_empty() {
        let mut text = String::from("Approval modes (/approval MODE switches):");
        for mode in ApprovalMode::ALL {
            let mark = if mode == state.status.approval_mode {
                "  (current)"
            } else {
                ""
            };
            text.push_str(&format!("\n  {}{mark}", mode.explain()));
        }
        state.notice(NoticeLevel::Info, &text);
        return Vec::new();
    }
    let Some(mode) = ApprovalMode::parse(name) else {
        let text = format!("Unknown approval mode {name}; choose read-only, ask, auto or full");
        state.notice(NoticeLevel::Error, &text);
        return Vec::new();
    };
    state.status.approval_mode = mode;
    vec![Effect::Send(Op::SetApprovalMode { mode })]
}

/// A running turn would be cut off by a restart of the agent: ask for an interrupt first.
fn refuse_while_busy(state: &mut AppState, what: &str) -> bool {
    let busy = state.is_busy();
    if busy {
        let text = format!("A turn is running; interrupt it (Esc) before {what}");
        state.notice(NoticeLevel::Warning, &text);
    }
    busy
}

fn help_text(own: &[crate::protocol::UserCommandInfo]) -> String {
    let mut text = String::from(
        "Enter send (while the agent works: inject into the running turn) · Tab queue as the \
         next message\nShift+Enter or Alt+Enter new line · Up/Down history (Up on an empty \
         box takes a queued message back) · Ctrl+U delete to line start · Ctrl+Z/Ctrl+Y undo/redo \
         · Ctrl+O expand pasted text\nEsc interrupt · Ctrl+C interrupt, twice to quit · Ctrl+T \
         transcript pager\nWhen the agent asks: 1 allow once · 2 allow for this session · 3 or \
         Esc deny (letters are typed; Alt+y/a/n answer while typing)",
    );
    for command in SlashCommand::ALL {
        text.push_str(&format!(
            "\n/{:<width$} {}",
            command.name(),
            command.description(),
            width = SlashCommand::NAME_WIDTH
        ));
    }
    if !own.is_empty() {
        text.push_str("\nYour commands (/NAME arguments):");
    }
    for command in own {
        text.push_str(&format!(
            "\n/{:<width$} {} ({})",
            command.name,
            command.description,
            command.source,
            width = SlashCommand::NAME_WIDTH
        ));
    }
    text
}

fn cost_text(state: &AppState) -> String {
    let status = &state.status;
    let usage = status.total;
    let mut text = format!(
        "Session cost ${:.4} · input {} tokens (cache read {}, cache write {}) · output {} \
         tokens · context {:.0}% used",
        status.cost_usd,
        compact_count(usage.input_tokens),
        compact_count(usage.cache_read_tokens),
        compact_count(usage.cache_write_tokens),
        compact_count(usage.output_tokens),
        status.context_percent
    );
    for turn in &status.turns {
        let usage = turn.usage;
        text.push_str(&format!(
            "\nturn {}: ${:.4} · cache read {}, cache write {}, uncached {} · output {}",
            turn.turn,
            turn.cost_usd,
            compact_count(usage.cache_read_tokens),
            compact_count(usage.cache_write_tokens),
            compact_count(usage.input_tokens),
            compact_count(usage.output_tokens),
        ));
    }
    text
}

#[cfg(test)]
mod tests {

    #[test]
    fn no_file_can_take_the_name_of_a_built_in_command() {
        for command in SlashCommand::ALL {
            assert!(
                crate::user_commands::BUILT_IN.contains(&command.name()),
                "/{} is missing from the reserved names",
                command.name()
            );
        }
    }

    use super::*;
    use crate::tui::cells::Cell;
    use crate::tui::status::Activity;

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
                SlashCommand::Capabilities,
                SlashCommand::Cost
            ]
        );
        assert_eq!(SlashCommand::matching("").len(), SlashCommand::ALL.len());
    }

    fn notes(state: &AppState) -> Vec<String> {
        state
            .transcript
            .iter()
            .map(|cell| match cell {
                Cell::Notice { text, .. } => text.clone(),
                other => format!("{other:?}"),
            })
            .collect()
    }

    #[test]
    fn model_lists_switches_and_rejects_unknown_names() {
        let mut state = AppState::new();
        state.models = vec!["fast".into(), "smart".into()];
        state.status.model = "smart".into();
        state.status.activity = Activity::Idle;
        assert!(execute(SlashCommand::Model, "", &mut state).is_empty());
        assert_eq!(
            execute(SlashCommand::Model, "fast", &mut state),
            [Effect::Send(Op::SetModel {
                model: "fast".into()
            })]
        );
        assert!(execute(SlashCommand::Model, "nope", &mut state).is_empty());
        assert_eq!(
            notes(&state),
            [
                "Models (/model NAME switches; the session goes on):\n  fast\n  smart  (current)",
                "Unknown model nope; the configured models are: fast, smart"
            ]
        );
    }

    #[test]
    fn approval_lists_modes_switches_and_rejects_unknown_ones() {
        let mut state = AppState::new();
        assert!(execute(SlashCommand::Approval, "", &mut state).is_empty());
        assert_eq!(
            execute(SlashCommand::Approval, "read-only", &mut state),
            [Effect::Send(Op::SetApprovalMode {
                mode: ApprovalMode::ReadOnly
            })]
        );
        assert_eq!(state.status.approval_mode, ApprovalMode::ReadOnly);
        assert!(execute(SlashCommand::Approval, "sometimes", &mut state).is_empty());
        let notes = notes(&state);
        assert!(notes[0].contains("auto: sandboxed actions run, anything more asks  (current)"));
        assert_eq!(
            notes[1],
            "Unknown approval mode sometimes; choose read-only, ask, auto or full"
        );
    }

    #[test]
    fn session_and_memory_commands_become_effects() {
        let mut state = AppState::new();
        state.status.activity = Activity::Idle;
        assert_eq!(
            execute(SlashCommand::Sessions, "", &mut state),
            [Effect::ListSessions]
        );
        assert_eq!(
            execute(SlashCommand::Resume, "", &mut state),
            [Effect::OpenPicker]
        );
        assert_eq!(
            execute(SlashCommand::Resume, "0f3c", &mut state),
            [Effect::Resume("0f3c".into())]
        );
        assert_eq!(
            execute(SlashCommand::Memory, "sqlite wal", &mut state),
            [Effect::SearchMemory("sqlite wal".into())]
        );
        assert_eq!(
            parse("/schedule"),
            Parsed::Command(SlashCommand::Schedule, "")
        );
        assert_eq!(
            execute(SlashCommand::Schedule, "", &mut state),
            [Effect::ListSchedules]
        );
        state.status.activity = Activity::Responding;
        assert!(execute(SlashCommand::Resume, "", &mut state).is_empty());
    }

    #[test]
    fn cost_lists_each_turns_cache_reads_and_writes() {
        let mut state = AppState::new();
        for (turn, read, write) in [(1, 0, 4_200), (2, 3_900, 8_100), (3, 12_000, 300)] {
            state.handle_event(
                crate::protocol::Event::TurnFinished {
                    turn,
                    status: crate::protocol::TurnStatus::Completed,
                    message: None,
                    usage: crate::protocol::Usage {
                        input_tokens: 20,
                        output_tokens: 50,
                        cache_read_tokens: read,
                        cache_write_tokens: write,
                    },
                    cost_usd: 0.01 * turn as f64,
                },
                std::time::Instant::now(),
            );
        }
        assert!(execute(SlashCommand::Cost, "", &mut state).is_empty());
        let notes = notes(&state);
        let cost = notes.last().map(String::as_str).unwrap_or_default();
        let lines: Vec<&str> = cost.lines().skip(1).collect();
        assert_eq!(lines.len(), 3, "{cost}");
        assert!(lines[1].starts_with("turn 2: $0.0200"), "{cost}");
        assert!(
            lines[1].contains("cache read 3.9k, cache write 8.1k"),
            "{cost}"
        );
    }
}
