//! Syntax highlighting of code blocks with syntect. Its syntax and theme sets take tens of
//! milliseconds to load, so they load on a background thread at startup and code renders
//! plain until they are ready: the first frame never waits for them.

use std::sync::OnceLock;

use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};
use syntect::easy::HighlightLines;
use syntect::highlighting::{FontStyle, Theme, ThemeSet};
use syntect::parsing::SyntaxSet;

const THEME: &str = "base16-ocean.dark";

struct Sets {
    syntaxes: SyntaxSet,
    theme: Theme,
}

static SETS: OnceLock<Sets> = OnceLock::new();

impl Sets {
    fn load() -> Self {
        let syntaxes = SyntaxSet::load_defaults_newlines();
        let mut themes = ThemeSet::load_defaults();
        let theme = themes.themes.remove(THEME).unwrap_or_default();
        Self { syntaxes, theme }
    }
}

/// Starts loading the syntax sets in the background.
pub fn preload() {
    if SETS.get().is_none() {
        std::thread::spawn(|| SETS.get_or_init(Sets::load));
    }
}

/// Loads the syntax sets now (benchmarks and tests that want colours from the first call).
pub fn load_now() {
    SETS.get_or_init(Sets::load);
}

/// Whether the syntax sets have loaded (until then everything renders plain).
pub fn is_ready() -> bool {
    SETS.get().is_some()
}

/// One styled line per line of `code`; plain when the language is unknown or the sets are
/// still loading.
pub fn highlight(code: &str, lang: &str) -> Vec<Line<'static>> {
    highlight_known(code, lang).unwrap_or_else(|| {
        let code_style = Style::default().fg(Color::Gray);
        code.lines()
            .map(|l| Line::from(Span::styled(l.to_string(), code_style)))
            .collect()
    })
}

/// One styled line per line of `code`, or `None` when the language is unknown or the sets
/// are still loading (callers that style plain code their own way need to know).
pub fn highlight_known(code: &str, lang: &str) -> Option<Vec<Line<'static>>> {
    let sets = SETS.get()?;
    let token = language_token(lang);
    let syntax = sets
        .syntaxes
        .find_syntax_by_token(token)
        .or_else(|| sets.syntaxes.find_syntax_by_extension(token))?;
    let mut highlighter = HighlightLines::new(syntax, &sets.theme);
    let mut lines = Vec::new();
    for source_line in code.split_inclusive('\n') {
        let ranges = highlighter
            .highlight_line(source_line, &sets.syntaxes)
            .ok()?;
        let spans: Vec<Span<'static>> = ranges
            .into_iter()
            .map(|(style, text)| {
                let text = text.trim_end_matches(['\n', '\r']).to_string();
                Span::styled(text, convert(style))
            })
            .filter(|span| !span.content.is_empty())
            .collect();
        lines.push(Line::from(spans));
    }
    Some(lines)
}

/// The language named by a code fence's info string (`rust` of "rust,ignore").
pub fn language_token(info: &str) -> &str {
    info.trim()
        .split([' ', ',', '{'])
        .next()
        .unwrap_or_default()
}

fn convert(style: syntect::highlighting::Style) -> Style {
    let fg = style.foreground;
    let mut out = Style::default().fg(Color::Rgb(fg.r, fg.g, fg.b));
    if style.font_style.contains(FontStyle::BOLD) {
        out = out.add_modifier(Modifier::BOLD);
    }
    if style.font_style.contains(FontStyle::ITALIC) {
        out = out.add_modifier(Modifier::ITALIC);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_languages_get_colours_and_keep_their_text() {
        load_now();
        let lines = highlight("fn main() {\n    let x = 1;\n}\n", "rust");
        let text: Vec<String> = lines.iter().map(|l| l.to_string()).collect();
        assert_eq!(text, ["fn main() {", "    let x = 1;", "}"]);
        let colours = lines
            .iter()
            .flat_map(|l| &l.spans)
            .filter_map(|s| s.style.fg)
            .collect::<std::collections::HashSet<_>>();
        assert!(
            colours.len() > 1,
            "expected several colours, got {colours:?}"
        );
    }

    #[test]
    fn unknown_languages_render_plain() {
        let lines = highlight("a\nb", "no-such-language");
        assert_eq!(lines.len(), 2);
    }
}
