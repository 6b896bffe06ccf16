//! Syntax highlighting of code blocks with syntect. Its syntax and theme sets take tens of
//! milliseconds to load, so they load on a background thread at startup and code renders
//! plain until they are ready: the first frame never waits for them.

use std::cell::RefCell;
use std::sync::OnceLock;

use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};
use syntect::highlighting::{
    FontStyle, HighlightIterator, HighlightState, Highlighter, Theme, ThemeSet,
};
use syntect::parsing::{ParseState, ScopeStack, SyntaxSet};

const THEME: &str = "base16-ocean.dark";
/// Code longer than this is not kept for resuming (a file in the pager, not a streamed block).
const RESUME_MAX: usize = 64 * 1024;

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

/// Where the last code highlighted stopped after its last complete line. A code block in a
/// streamed reply is highlighted again at every line that completes; it goes on from here
/// instead of parsing its earlier lines again.
struct Resume {
    token: String,
    code: String,
    lines: Vec<Line<'static>>,
    highlight: HighlightState,
    parse: ParseState,
}

thread_local! {
    static LAST: RefCell<Option<Resume>> = const { RefCell::new(None) };
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
    let highlighter = Highlighter::new(&sets.theme);
    let resumed = LAST
        .with_borrow_mut(Option::take)
        .filter(|last| last.token == token && code.starts_with(&last.code));
    let (mut highlight, mut parse, mut lines, done) = match resumed {
        Some(last) => (last.highlight, last.parse, last.lines, last.code.len()),
        None => (
            HighlightState::new(&highlighter, ScopeStack::new()),
            ParseState::new(syntax),
            Vec::new(),
            0,
        ),
    };
    let mut complete = None;
    for source_line in code[done..].split_inclusive('\n') {
        if !source_line.ends_with('\n') {
            complete = Some((highlight.clone(), parse.clone(), lines.clone()));
        }
        let ops = parse.parse_line(source_line, &sets.syntaxes).ok()?;
        let spans: Vec<Span<'static>> =
            HighlightIterator::new(&mut highlight, &ops, source_line, &highlighter)
                .map(|(style, text)| {
                    let text = text.trim_end_matches(['\n', '\r']).to_string();
                    Span::styled(text, convert(style))
                })
                .filter(|span| !span.content.is_empty())
                .collect();
        lines.push(Line::from(spans));
    }
    if code.len() <= RESUME_MAX {
        let (highlight, parse, kept) =
            complete.unwrap_or_else(|| (highlight, parse, lines.clone()));
        LAST.set(Some(Resume {
            token: token.to_string(),
            code: code[..code.rfind('\n').map_or(0, |i| i + 1)].to_string(),
            lines: kept,
            highlight,
            parse,
        }));
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
    fn a_block_that_grows_is_coloured_as_if_highlighted_whole() {
        load_now();
        let whole = "/* a comment\nstill the comment */\nfn main() {\n    let s = \"text\";\n}\n";
        highlight("x = 1\n", "python");
        let fresh = highlight(whole, "rust");
        // Grown as a stream commits it: a line at a time, once cut inside a string literal.
        for end in [13, 34, 46, 60, whole.len()] {
            let complete = whole[..end].matches('\n').count();
            let grown = highlight(&whole[..end], "rust");
            assert_eq!(grown[..complete], fresh[..complete], "after {end} bytes");
        }
        assert_eq!(highlight(whole, "rust"), fresh);
    }

    #[test]
    fn unknown_languages_render_plain() {
        let lines = highlight("a\nb", "no-such-language");
        assert_eq!(lines.len(), 2);
    }
}
