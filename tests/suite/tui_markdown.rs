//! Snapshots of assistant replies as the transcript draws them: tables laid out for the
//! terminal's width (a grid when it fits, wrapped columns or `header: value` lines when it
//! does not), framed code blocks with their language, headings drawn by style, the reply
//! marker and margin, and a table that arrives in pieces while the reply streams.

use crate::tui_support;

use mnemo::protocol::{Event, TurnStatus};
use mnemo::tui::live::render_screen;
use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::style::{Color, Modifier};
use tui_support::{Harness, text};

const TABLE: &str = "\
The commands you will use most:

| Command | What it does | Default |
|:--|:--|--:|
| `mnemo` | Opens the interactive terminal front end in this folder | on |
| `mnemo run \"task\"` | Runs one task headless and prints the answer | off |
| `mnemo doctor` | Checks the sandbox, keys, the data directory and the database | — |

| Model | Provider | Context | Output | Price in | Price out |
|---|---|:-:|--:|--:|--:|
| claude-sonnet | anthropic | 200k | 64k | $3.00 | $15.00 |
| gpt-4.1-mini | openai | 1M | 32k | $0.40 | $1.60 |

Pick one with `/model`.";

/// A started session in a terminal `width` columns wide, as the app knows it from its first
/// frame on.
fn sized(width: u16) -> Harness {
    let mut harness = Harness::started();
    harness.state.set_width(width);
    harness
}

fn reply(harness: &mut Harness, prompt: &str, answer: &str) {
    harness.prompt(prompt);
    harness.event(Event::AssistantMessage {
        text: answer.into(),
    });
}

#[test]
fn a_table_at_120_columns_is_an_aligned_grid() {
    let mut harness = sized(120);
    reply(&mut harness, "which commands?", TABLE);
    let screen = harness.screen(120, 30);
    assert!(!screen.contains("|--"), "raw table syntax left:\n{screen}");
    insta::assert_snapshot!(screen);
}

#[test]
fn the_same_table_at_60_columns_wraps_cells_or_becomes_header_value_lines() {
    let mut harness = sized(60);
    reply(&mut harness, "which commands?", TABLE);
    let screen = harness.screen(60, 42);
    for row in screen.lines().filter(|l| l.contains('│')) {
        assert!(
            row.trim_end().ends_with('│'),
            "a grid row wrapped past its border: {row:?}"
        );
    }
    insta::assert_snapshot!(screen);
}

#[test]
fn a_code_block_is_framed_and_labelled_with_its_language() {
    let mut harness = sized(80);
    let answer = "Run it like this:\n\n```python\nimport sys\n\ndef main():\n    \
                  print(sys.argv[1:])\n```\n\nThat prints the arguments.";
    reply(&mut harness, "a python example", answer);
    insta::assert_snapshot!(harness.screen(80, 18));
}

#[test]
fn headings_are_drawn_by_style_without_their_hashes() {
    let mut harness = sized(40);
    let answer = "# Release notes\n\n## Fixed\n\nThe pager scrolls.\n\n### Details\n\nNone.";
    reply(&mut harness, "notes", answer);
    let screen = harness.screen(40, 18);
    assert!(!screen.contains('#'), "{screen}");
    insta::assert_snapshot!(screen);
    // The styles the text snapshot cannot show: the level-1 heading underlined, the second
    // coloured, every level bold.
    let area = Rect::new(0, 0, 40, 18);
    let mut buf = Buffer::empty(area);
    render_screen(
        &harness.state,
        &harness.history,
        area,
        &mut buf,
        harness.now,
    );
    let style_of = |word: &str| {
        let row = (0..area.height).find(|&y| row_text(&buf, y).contains(word))?;
        let x = row_text(&buf, row).find(word)? as u16;
        Some(buf[(x, row)].style())
    };
    let h1 = style_of("Release").unwrap_or_default();
    let h2 = style_of("Fixed").unwrap_or_default();
    let h3 = style_of("Details").unwrap_or_default();
    assert!(
        h1.add_modifier
            .contains(Modifier::BOLD | Modifier::UNDERLINED)
    );
    assert_eq!(h2.fg, Some(Color::Magenta));
    assert!(h3.add_modifier.contains(Modifier::BOLD));
    let body = style_of("pager").unwrap_or_default();
    assert!(!body.add_modifier.contains(Modifier::BOLD));
}

fn row_text(buf: &Buffer, y: u16) -> String {
    (0..buf.area.width).map(|x| buf[(x, y)].symbol()).collect()
}

#[test]
fn a_table_streamed_in_pieces_is_drawn_once_when_it_is_complete() {
    let source = "Here is the comparison:\n\n| Model | Context |\n|---|--:|\n\
                  | claude-sonnet | 200k |\n| gpt-4.1-mini | 1M |\n\n\
                  The second one has the larger window.";
    let mut harness = sized(80);
    harness.prompt("compare the models");
    harness.events([
        text("Here is the compari"),
        text("son:\n\n| Model | Con"),
        text("text |\n|---|--"),
        text(":|\n| claude-sonnet | 200k |\n| gpt-4.1"),
    ]);
    // Mid-table: the live area counts the rows so far; nothing of the table is committed.
    let mid = harness.screen(80, 20);
    insta::assert_snapshot!("streamed_table_mid_stream", mid);
    assert!(harness.history.iter().all(|l| !l.to_string().contains('┌')));
    harness.events([
        text("-mini | 1M |\n"),
        text("\nThe second one has the larger window."),
        Event::AssistantMessage {
            text: source.into(),
        },
        finished(),
    ]);
    let done = harness.screen(80, 20);
    insta::assert_snapshot!("streamed_table_finished", done);
    let tops = done.lines().filter(|l| l.contains('┌')).count();
    assert_eq!(tops, 1, "the table is drawn once:\n{done}");
    // The streamed reply looks exactly like the same reply arriving whole.
    let mut whole = sized(80);
    reply(&mut whole, "compare the models", source);
    whole.event(finished());
    assert_eq!(whole.screen(80, 20), done);
}

fn finished() -> Event {
    Event::TurnFinished {
        turn: 1,
        status: TurnStatus::Completed,
        message: None,
        usage: Default::default(),
        cost_usd: 0.0,
    }
}

#[test]
fn a_code_block_streamed_in_pieces_matches_the_whole_reply() {
    let source = "Try:\n\n```rust\nfn main() {\n    println!(\"hi\");\n}\n```\n\nThen run it.";
    let mut harness = sized(80);
    harness.prompt("an example");
    // A frame after every few characters commits the code block while it is still open.
    let chars: Vec<char> = source.chars().collect();
    for piece in chars.chunks(5) {
        harness.event(text(&piece.iter().collect::<String>()));
        harness.screen(80, 20);
    }
    harness.events([
        Event::AssistantMessage {
            text: source.into(),
        },
        finished(),
    ]);
    let streamed = harness.screen(80, 20);
    let mut whole = sized(80);
    reply(&mut whole, "an example", source);
    whole.event(finished());
    assert_eq!(streamed, whole.screen(80, 20));
    assert_eq!(streamed.matches('╭').count(), 1, "{streamed}");
    assert_eq!(streamed.matches('╰').count(), 1, "{streamed}");
}
