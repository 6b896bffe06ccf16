//! Desktop notifications from the terminal, for a schedule's result that arrives while the
//! person looks elsewhere. Terminals that raise one for OSC 9 (`ESC ] 9 ; text BEL`: iTerm2,
//! WezTerm, kitty, ghostty) get that; the others get OSC 777 (`ESC ] 777 ; notify ; title ;
//! body BEL`: foot, rxvt, VTE terminals), which a terminal that does not know it ignores. The
//! Linux console, which would print it, gets neither.

/// Which sequence the terminal understands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Terminal {
    Osc9,
    Osc777,
}

impl Terminal {
    /// From `TERM_PROGRAM`, `TERM` and kitty's own variable; `None` for the Linux console.
    pub fn from_env() -> Option<Terminal> {
        let var = |name| std::env::var(name).unwrap_or_default();
        Self::detect(
            &var("TERM_PROGRAM"),
            &var("TERM"),
            std::env::var_os("KITTY_WINDOW_ID").is_some(),
        )
    }

    pub fn detect(term_program: &str, term: &str, kitty: bool) -> Option<Terminal> {
        if term == "linux" || term == "dumb" {
            return None;
        }
        let program = term_program.to_ascii_lowercase();
        let osc9 = ["iterm.app", "wezterm", "ghostty", "kitty"].contains(&program.as_str())
            || term.contains("kitty")
            || term.contains("ghostty")
            || kitty;
        Some(match osc9 {
            true => Terminal::Osc9,
            false => Terminal::Osc777,
        })
    }
}

/// The sequence that asks `terminal` for a notification.
pub fn desktop(terminal: Terminal, title: &str, body: &str) -> String {
    // Control characters would end the sequence early; `;` separates OSC 777's fields.
    let clean = |text: &str, max: usize| -> String {
        text.chars()
            .map(|c| if c.is_control() || c == ';' { ' ' } else { c })
            .take(max)
            .collect::<String>()
            .trim()
            .to_string()
    };
    let (title, body) = (clean(title, 80), clean(body, 240));
    match terminal {
        Terminal::Osc9 => format!("\x1b]9;{title}: {body}\x07"),
        Terminal::Osc777 => format!("\x1b]777;notify;{title};{body}\x07"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn iterm_wezterm_kitty_and_ghostty_get_osc_9_and_the_others_osc_777() {
        for (program, term, kitty) in [
            ("iTerm.app", "xterm-256color", false),
            ("WezTerm", "xterm-256color", false),
            ("ghostty", "xterm-ghostty", false),
            ("", "xterm-kitty", false),
            ("", "xterm-256color", true),
        ] {
            assert_eq!(Terminal::detect(program, term, kitty), Some(Terminal::Osc9));
        }
        let other = Some(Terminal::Osc777);
        assert_eq!(Terminal::detect("", "foot", false), other);
        assert_eq!(Terminal::detect("vscode", "xterm", false), other);
        assert_eq!(Terminal::detect("", "linux", false), None);
    }

    #[test]
    fn the_text_cannot_end_the_sequence_or_add_fields() {
        let nine = desktop(Terminal::Osc9, "schedule #1", "Stretch\x07 now\x1b]");
        assert_eq!(nine, "\x1b]9;schedule #1: Stretch  now ]\x07");
        let seven = desktop(Terminal::Osc777, "a;b", "c;d\nnext");
        assert_eq!(seven, "\x1b]777;notify;a b;c d next\x07");
    }
}
