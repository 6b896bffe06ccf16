//! When the agent must ask before acting. The approval mode is one word the config, the flags and
//! `/approval` share; [`verdict`] turns it and one action into allow, ask or refuse, and
//! [`effective`] says which sandbox a command then runs in.

use super::policy::{SandboxConfig, SandboxPolicy};
pub use crate::protocol::{ApprovalMode, Escalation};

/// What the agent is about to do.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Action {
    /// A file tool writes a file in the workspace.
    Write,
    /// A remembered experience is added or removed: every later session sees it.
    Memory,
    /// A schedule is made or removed: `mnemo serve` runs it later with nobody watching.
    Schedule,
    /// A shell command, maybe with more than the sandbox allows.
    Command(Option<Escalation>),
    /// A tool of an MCP server that is not marked read-only: it acts outside mnemo's sandbox,
    /// so it counts as a write.
    External,
    /// A write outside the workspace that every later session reads (the person's own
    /// skills, a skill in `.mnemo/`): asked even under auto.
    Shared,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Verdict {
    Allow,
    Ask,
    Refuse(String),
}

/// What `mode` says about `action` when commands run under `base` (the configured sandbox).
pub fn verdict(mode: ApprovalMode, base: &SandboxConfig, action: Action) -> Verdict {
    let read_only = |what: &str| {
        Verdict::Refuse(format!(
            "{what} is not allowed: this session is read-only (approval mode read-only). Tell \
             the user what you would change instead; they can switch with /approval or \
             --approval"
        ))
    };
    if let Some(refused) = sandbox_refusal(mode, base, action) {
        return refused;
    }
    match (mode, action) {
        (ApprovalMode::Full, _) => Verdict::Allow,
        (ApprovalMode::ReadOnly, Action::Write) => read_only("writing files"),
        (ApprovalMode::ReadOnly, Action::Memory) => read_only("changing remembered experiences"),
        (ApprovalMode::ReadOnly, Action::Schedule) => read_only("changing schedules"),
        (ApprovalMode::ReadOnly, Action::External) => {
            read_only("an MCP tool that is not marked read-only")
        }
        (ApprovalMode::ReadOnly, Action::Shared) => read_only("writing the user's skills"),
        (ApprovalMode::ReadOnly, Action::Command(None)) => Verdict::Allow,
        (ApprovalMode::ReadOnly, Action::Command(Some(escalation))) => {
            read_only(escalation.label())
        }
        (ApprovalMode::Ask, _) | (ApprovalMode::Auto, Action::Shared) => Verdict::Ask,
        (
            ApprovalMode::Auto,
            Action::Write
            | Action::Memory
            | Action::Schedule
            | Action::External
            | Action::Command(None),
        ) => Verdict::Allow,
        (ApprovalMode::Auto, Action::Command(Some(escalation))) => {
            match already_granted(base, escalation) {
                true => Verdict::Allow,
                false => Verdict::Ask,
            }
        }
    }
}

/// Memory and schedules outlive the session; under a read-only sandbox the session may not
/// leave such writes behind, whatever the approval mode lets through.
fn sandbox_refusal(mode: ApprovalMode, base: &SandboxConfig, action: Action) -> Option<Verdict> {
    let what = match action {
        Action::Memory => "changing remembered experiences",
        Action::Schedule => "changing schedules",
        _ => return None,
    };
    (mode != ApprovalMode::ReadOnly && write_policy(mode, base) == SandboxPolicy::ReadOnly).then(
        || {
            Verdict::Refuse(format!(
                "{what} is not allowed: this session's sandbox is read-only (sandbox policy \
                 read_only). Tell the user what you would change instead; they can start mnemo \
                 with --sandbox workspace_write"
            ))
        },
    )
}

fn already_granted(base: &SandboxConfig, escalation: Escalation) -> bool {
    match escalation {
        Escalation::Network => base.network_allowed(),
        Escalation::FullAccess => !base.is_sandboxed(),
    }
}

/// The sandbox a command runs in under `mode`, with `escalation` granted.
pub fn effective(
    mode: ApprovalMode,
    base: &SandboxConfig,
    escalation: Option<Escalation>,
) -> SandboxConfig {
    let mut config = *base;
    match mode {
        ApprovalMode::ReadOnly => config.policy = SandboxPolicy::ReadOnly,
        ApprovalMode::Full => config.policy = SandboxPolicy::FullAccess,
        ApprovalMode::Ask | ApprovalMode::Auto => {}
    }
    match escalation {
        Some(Escalation::Network) => config.network = true,
        Some(Escalation::FullAccess) => config.policy = SandboxPolicy::FullAccess,
        None => {}
    }
    config
}

/// The policy the file tools write under: `.git/` needs full access.
pub fn write_policy(mode: ApprovalMode, base: &SandboxConfig) -> SandboxPolicy {
    effective(mode, base, None).policy
}

/// Programs whose first argument does not say what they will do (shells, interpreters,
/// wrappers that run another command, `find` with its `-exec`/`-delete`): "allow for this
/// session" covers only the exact command for them.
const OPEN_ENDED: &[&str] = &[
    "bash", "sh", "zsh", "dash", "fish", "ksh", "env", "sudo", "doas", "su", "xargs", "nohup",
    "time", "timeout", "nice", "ionice", "exec", "eval", "command", "builtin", "watch", "find",
    "python", "python3", "node", "perl", "ruby", "php", "awk", "sed",
];

/// What "allow for this session" remembers of a command.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum CommandGrant {
    /// The program and its subcommand (`cargo test`): every command that starts with them.
    Prefix(String),
    /// Only this command (whitespace normalised).
    Exact(String),
}

impl CommandGrant {
    /// How the grant reads to the user.
    pub fn describe(&self) -> String {
        match self {
            CommandGrant::Prefix(prefix) => format!("commands starting with `{prefix}`"),
            CommandGrant::Exact(_) => "this exact command".to_string(),
        }
    }
}

/// Why "allow for this session" is not offered for a command: what in it a grant could not
/// vouch for.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum NoGrant {
    Empty,
    Lines,
    UnclosedQuote,
    /// Shell syntax outside single quotes: what it is and the characters found.
    Syntax {
        what: &'static str,
        found: String,
    },
    /// An environment assignment before the program (`FOO=1 cargo test`).
    Assignment(String),
}

impl NoGrant {
    /// What was found, as the question says it: "it has a pipe `|`".
    pub fn describe(&self) -> String {
        match self {
            NoGrant::Empty => "the command is empty".into(),
            NoGrant::Lines => "it has several lines".into(),
            NoGrant::UnclosedQuote => "it has an unclosed quote".into(),
            NoGrant::Syntax { what, found } => format!("it has {what} `{found}`"),
            NoGrant::Assignment(word) => format!("it sets a variable first (`{word}`)"),
        }
    }
}

/// The grant "allow for this session" gives for `command`: its program and subcommand when the
/// command reads `program subcommand [args]`, otherwise the exact command. Two commands share
/// a grant when their grants are equal. Refused for anything a grant cannot vouch for: pipes,
/// chains, redirections, substitutions, several lines, environment assignments. Quotes are
/// read as the shell reads them: `grep "(a|b)" f` has no pipe.
pub fn command_grant(command: &str) -> Result<CommandGrant, NoGrant> {
    let words = shell_words(command.trim())?;
    let Some(program) = words.first() else {
        return Err(NoGrant::Empty);
    };
    if program.contains('=') {
        return Err(NoGrant::Assignment(program.clone()));
    }
    let is_subcommand = |word: &str| {
        !word.starts_with('-')
            && word
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_' || c == ':')
    };
    let plain_program = !program.contains(['\'', '"']);
    Ok(match words.get(1) {
        Some(sub)
            if plain_program && is_subcommand(sub) && !OPEN_ENDED.contains(&program.as_str()) =>
        {
            CommandGrant::Prefix(format!("{program} {sub}"))
        }
        _ => CommandGrant::Exact(words.join(" ")),
    })
}

/// The words of `command` as written (quotes kept), split where the shell splits them;
/// refused at the first piece of shell syntax outside single quotes.
fn shell_words(command: &str) -> Result<Vec<String>, NoGrant> {
    #[derive(PartialEq)]
    enum Quote {
        None,
        Single,
        Double,
    }
    let syntax = |what: &'static str, found: &str| NoGrant::Syntax {
        what,
        found: found.to_string(),
    };
    let mut words = Vec::new();
    let mut word = String::new();
    let mut quote = Quote::None;
    let mut chars = command.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '\n' {
            return Err(NoGrant::Lines);
        }
        match quote {
            Quote::Single => {
                if c == '\'' {
                    quote = Quote::None;
                }
                word.push(c);
                continue;
            }
            Quote::Double => {
                match c {
                    '"' => quote = Quote::None,
                    '$' => return Err(syntax("an expansion", "$")),
                    '`' => return Err(syntax("a substitution", "`")),
                    '\\' => return Err(syntax("an escape", "\\")),
                    _ => {}
                }
                word.push(c);
                continue;
            }
            Quote::None => {}
        }
        let next = chars.peek().copied();
        match c {
            '\'' => quote = Quote::Single,
            '"' => quote = Quote::Double,
            '|' if next == Some('|') => return Err(syntax("a chain", "||")),
            '|' => return Err(syntax("a pipe", "|")),
            '&' if next == Some('&') => return Err(syntax("a chain", "&&")),
            '&' => return Err(syntax("a background job", "&")),
            ';' => return Err(syntax("a chain", ";")),
            '<' | '>' => return Err(syntax("a redirection", &c.to_string())),
            '$' if next == Some('(') => return Err(syntax("a substitution", "$(")),
            '$' => return Err(syntax("an expansion", "$")),
            '`' => return Err(syntax("a substitution", "`")),
            '(' | ')' => return Err(syntax("a subshell", &c.to_string())),
            '\\' => return Err(syntax("an escape", "\\")),
            c if c.is_whitespace() => {
                if !word.is_empty() {
                    words.push(std::mem::take(&mut word));
                }
                continue;
            }
            _ => {}
        }
        word.push(c);
    }
    if quote != Quote::None {
        return Err(NoGrant::UnclosedQuote);
    }
    if !word.is_empty() {
        words.push(word);
    }
    Ok(words)
}

#[cfg(test)]
mod tests {
    use super::*;

    const BASE: SandboxConfig = SandboxConfig {
        policy: SandboxPolicy::WorkspaceWrite,
        network: false,
    };

    #[test]
    fn a_write_every_workspace_reads_is_asked_even_under_auto() {
        let shared = |mode| verdict(mode, &BASE, Action::Shared);
        assert_eq!(shared(ApprovalMode::Auto), Verdict::Ask);
        assert_eq!(shared(ApprovalMode::Ask), Verdict::Ask);
        assert_eq!(shared(ApprovalMode::Full), Verdict::Allow);
        assert!(matches!(shared(ApprovalMode::ReadOnly), Verdict::Refuse(_)));
    }

    #[test]
    fn ask_asks_for_everything_and_auto_only_for_more_than_the_sandbox() {
        for action in [
            Action::Write,
            Action::External,
            Action::Command(None),
            Action::Command(Some(Escalation::Network)),
        ] {
            assert_eq!(verdict(ApprovalMode::Ask, &BASE, action), Verdict::Ask);
            assert_eq!(verdict(ApprovalMode::Full, &BASE, action), Verdict::Allow);
        }
        let auto = |action| verdict(ApprovalMode::Auto, &BASE, action);
        assert_eq!(auto(Action::Write), Verdict::Allow);
        assert_eq!(auto(Action::External), Verdict::Allow);
        assert_eq!(auto(Action::Command(None)), Verdict::Allow);
        assert_eq!(
            auto(Action::Command(Some(Escalation::Network))),
            Verdict::Ask
        );
        assert_eq!(
            auto(Action::Command(Some(Escalation::FullAccess))),
            Verdict::Ask
        );
        let networked = SandboxConfig {
            network: true,
            ..BASE
        };
        let action = Action::Command(Some(Escalation::Network));
        assert_eq!(
            verdict(ApprovalMode::Auto, &networked, action),
            Verdict::Allow
        );
    }

    #[test]
    fn read_only_refuses_writes_and_escalations_without_asking() {
        let mode = ApprovalMode::ReadOnly;
        assert!(matches!(
            verdict(mode, &BASE, Action::Write),
            Verdict::Refuse(reason) if reason.contains("read-only")
        ));
        assert!(matches!(
            verdict(mode, &BASE, Action::External),
            Verdict::Refuse(reason) if reason.contains("MCP tool")
        ));
        assert_eq!(verdict(mode, &BASE, Action::Command(None)), Verdict::Allow);
        let escalated = Action::Command(Some(Escalation::FullAccess));
        assert!(matches!(
            verdict(mode, &BASE, escalated),
            Verdict::Refuse(_)
        ));
        assert_eq!(effective(mode, &BASE, None).policy, SandboxPolicy::ReadOnly);
    }

    #[test]
    fn the_effective_sandbox_follows_mode_and_escalation() {
        let auto = ApprovalMode::Auto;
        assert_eq!(effective(auto, &BASE, None), BASE);
        assert!(effective(auto, &BASE, Some(Escalation::Network)).network_allowed());
        let full = effective(auto, &BASE, Some(Escalation::FullAccess));
        assert!(!full.is_sandboxed());
        assert!(!effective(ApprovalMode::Full, &BASE, None).is_sandboxed());
        assert_eq!(
            write_policy(ApprovalMode::Full, &BASE),
            SandboxPolicy::FullAccess
        );
    }

    #[test]
    fn grants_cover_program_and_subcommand_and_otherwise_only_the_exact_command() {
        let prefix = |p: &str| Ok(CommandGrant::Prefix(p.into()));
        let exact = |c: &str| Ok(CommandGrant::Exact(c.into()));
        assert_eq!(command_grant("cargo test --all"), prefix("cargo test"));
        assert_eq!(command_grant("  git status"), prefix("git status"));
        assert_eq!(command_grant("ls  -la src"), exact("ls -la src"));
        assert_eq!(command_grant("cat src/main.rs"), exact("cat src/main.rs"));
        // An option before the subcommand hides what runs: only the exact command.
        assert_eq!(
            command_grant("git --no-pager log"),
            exact("git --no-pager log")
        );
        // Shells, interpreters and wrappers run whatever follows; so may a quoted program.
        for open in [
            "bash build.sh",
            "sudo apt update",
            "xargs rm",
            "find src -delete",
            "\"bash\" build",
        ] {
            assert!(
                matches!(command_grant(open), Ok(CommandGrant::Exact(_))),
                "{open}"
            );
        }
        assert_eq!(
            command_grant("cargo test").map(|g| g.describe()),
            Ok("commands starting with `cargo test`".into())
        );
    }

    #[test]
    fn a_command_without_a_grant_says_what_was_found() {
        let why = |command: &str| command_grant(command).map_err(|e| e.describe());
        assert_eq!(
            why("cargo test && rm -rf ~"),
            Err("it has a chain `&&`".into())
        );
        assert_eq!(why("ls | sh"), Err("it has a pipe `|`".into()));
        assert_eq!(
            why("echo $(whoami)"),
            Err("it has a substitution `$(`".into())
        );
        assert_eq!(why("echo hi > f"), Err("it has a redirection `>`".into()));
        assert_eq!(why("a\nb"), Err("it has several lines".into()));
        assert_eq!(
            why("FOO=1 cargo test"),
            Err("it sets a variable first (`FOO=1`)".into())
        );
        assert_eq!(why(""), Err("the command is empty".into()));
        assert_eq!(why("echo 'open"), Err("it has an unclosed quote".into()));
        // The shell still expands inside double quotes, not inside single ones.
        assert_eq!(why("echo \"$HOME\""), Err("it has an expansion `$`".into()));
        assert!(why("echo '$HOME'").is_ok());
    }

    #[test]
    fn quoted_parentheses_and_bars_are_not_shell_syntax() {
        assert_eq!(
            command_grant("grep -rn \"fn (a|b)\" src"),
            Ok(CommandGrant::Exact("grep -rn \"fn (a|b)\" src".into()))
        );
        assert_eq!(
            command_grant("git commit -m 'fix (again); really'"),
            Ok(CommandGrant::Prefix("git commit".into()))
        );
        // Spaces inside quotes are part of the command a grant covers exactly.
        assert_ne!(command_grant("echo 'a  b'"), command_grant("echo 'a b'"));
    }

    #[test]
    fn modes_parse_both_spellings() {
        assert_eq!(
            ApprovalMode::parse("read_only"),
            Some(ApprovalMode::ReadOnly)
        );
        assert_eq!(
            ApprovalMode::parse("read-only"),
            Some(ApprovalMode::ReadOnly)
        );
        assert_eq!(ApprovalMode::parse("full"), Some(ApprovalMode::Full));
        assert_eq!(ApprovalMode::parse("yolo"), None);
    }
}
