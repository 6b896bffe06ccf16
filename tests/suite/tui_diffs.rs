//! Snapshots of file changes as the user reviews them: the diff of a finished `edit_file` or
//! `write_file` call (line numbers, several hunks, a long diff folded with its count) and the
//! diff of a write waiting for approval. The diffs are made by the tools' own diff writer,
//! so they are what the agent really sends.

use crate::tui_support;

use crossterm::event::{KeyCode, KeyModifiers};
use mnemo::protocol::{ApprovalAction, Event, ToolStatus};
use mnemo::tools::diff_report::{change_report, unified};
use mnemo::tui::highlight;
use mnemo::tui::pager_view;
use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::style::{Color, Modifier};
use ratatui::text::Line;
use serde_json::json;
use tui_support::{Harness, TestResult, text_of};

/// A numbered file of `count` lines, as a Rust source.
fn source(count: usize) -> String {
    (1..=count).map(|n| format!("let v{n} = {n};\n")).collect()
}

/// A session in which `name` finished with `output` for `path`.
fn finished(name: &str, path: &str, output: String) -> Harness {
    let mut harness = Harness::started();
    harness.prompt("change the file");
    harness.events([
        Event::ToolCallStarted {
            call_id: "c1".into(),
            name: name.into(),
            arguments: json!({"path": path}),
        },
        Event::ToolCallFinished {
            call_id: "c1".into(),
            name: name.into(),
            status: ToolStatus::Ok,
            output,
            duration_ms: 12,
        },
    ]);
    harness
}

#[test]
fn a_small_edit_shows_old_and_new_line_numbers() {
    let old = "use std::io;\n\nfn old_name() {}\n\nfn main() {}\n";
    let new = "use std::io;\n\nfn new_name() {}\n\nfn main() {}\n";
    let output = change_report("edited", "src/lib.rs", old, new);
    let mut harness = finished("edit_file", "src/lib.rs", output);
    insta::assert_snapshot!(harness.screen(80, 18));
}

#[test]
fn each_hunk_is_numbered_from_its_own_header() {
    let old = source(30);
    let new = old
        .replace("let v3 = 3;\n", "let v3 = 33;\nlet extra = 0;\n")
        .replace("let v25 = 25;\n", "");
    let output = change_report("edited", "src/lib.rs", &old, &new);
    assert!(output.contains("@@ -1,6 +1,7 @@") && output.contains("@@ -22,7 +23,6 @@"));
    let mut harness = finished("edit_file", "src/lib.rs", output);
    insta::assert_snapshot!(harness.screen(80, 28));
}

#[test]
fn a_long_diff_is_folded_with_a_count_until_expanded_in_the_pager() -> TestResult {
    let output = change_report("wrote", "src/big.rs", "", &source(120));
    let mut harness = finished("write_file", "src/big.rs", output);
    let screen = harness.screen(80, 52);
    assert!(!screen.contains("let v40 ="), "{screen}");
    insta::assert_snapshot!(screen);

    harness.key(KeyCode::Char('t'), KeyModifiers::CONTROL);
    let area = Rect::new(0, 0, 80, 12);
    let render = |harness: &mut Harness| -> Result<String, String> {
        let mut buf = Buffer::empty(area);
        let pager = harness
            .state
            .pager
            .as_mut()
            .ok_or("the pager is not open")?;
        pager_view::render(pager, &harness.state.transcript, area, &mut buf);
        Ok(text_of(&buf))
    };
    let collapsed = render(&mut harness)?;
    assert!(
        collapsed.contains("… 82 more lines (Ctrl+T to see all)"),
        "{collapsed}"
    );
    harness.key(KeyCode::BackTab, KeyModifiers::NONE);
    harness.key(KeyCode::Enter, KeyModifiers::NONE);
    let expanded = render(&mut harness)?;
    assert!(!expanded.contains("more lines"), "{expanded}");
    assert!(
        expanded.contains("120 + let v120 = 120;"),
        "the expanded cell ends with the last line: {expanded}"
    );
    Ok(())
}

#[test]
fn a_write_waiting_for_approval_shows_its_numbered_diff_folded() {
    let mut harness = Harness::started();
    harness.prompt("add a script");
    let text: String = (1..=20).map(|n| format!("print({n})\n")).collect();
    harness.events([
        Event::ToolCallStarted {
            call_id: "c1".into(),
            name: "write_file".into(),
            arguments: json!({"path": "tools/count.py"}),
        },
        Event::ApprovalRequested {
            id: "approval-1".into(),
            call_id: "c1".into(),
            tool: "write_file".into(),
            action: ApprovalAction::Write {
                path: "tools/count.py".into(),
                diff: unified("tools/count.py", "", &text),
            },
            reason: "approval mode is ask".into(),
            session_grant: Some("writes to tools/count.py".into()),
            only_once: None,
        },
    ]);
    insta::assert_snapshot!(harness.screen(80, 29));
}

/// The spans of the code of `line` (after the indent, the gutter and the sign).
fn code_of<'a>(line: &'a Line<'static>) -> &'a [ratatui::text::Span<'static>] {
    line.spans.get(3..).unwrap_or_default()
}

fn find<'a>(lines: &'a [Line<'static>], text: &str) -> Result<&'a Line<'static>, String> {
    lines
        .iter()
        .find(|line| line.to_string().contains(text))
        .ok_or_else(|| format!("no line with {text:?}"))
}

#[test]
fn added_lines_are_green_and_tinted_removed_red_and_context_dim() -> TestResult {
    highlight::load_now();
    let old = "fn main() {\n    let a = 1;\n    println!(\"{a}\");\n}\n";
    let new = "fn main() {\n    let b = \"two\";\n    println!(\"{a}\");\n}\n";
    let output = change_report("edited", "src/main.rs", old, new);
    let mut harness = finished("edit_file", "src/main.rs", output);
    harness.screen(80, 20);
    let lines = &harness.history;

    let added = find(lines, "+     let b")?;
    assert_eq!(added.spans[2].style.fg, Some(Color::Green), "{added:?}");
    let code = code_of(added);
    assert!(code.iter().all(|s| s.style.bg.is_some()), "{added:?}");
    let colours: std::collections::HashSet<_> = code.iter().filter_map(|s| s.style.fg).collect();
    assert!(colours.len() > 1, "the code is highlighted: {added:?}");

    let removed = find(lines, "-     let a")?;
    assert_eq!(removed.spans[2].style.fg, Some(Color::Red), "{removed:?}");
    let (added_bg, removed_bg) = (code[0].style.bg, code_of(removed)[0].style.bg);
    assert_ne!(
        added_bg, removed_bg,
        "additions and removals are told apart"
    );

    let context = find(lines, "1 1   fn main")?;
    assert!(code_of(context).len() > 1, "{context:?}");
    for span in code_of(context) {
        assert!(
            span.style.add_modifier.contains(Modifier::DIM),
            "{context:?}"
        );
        assert_eq!(span.style.bg, None, "{context:?}");
        assert!(![Some(Color::Green), Some(Color::Red)].contains(&span.style.fg));
    }
    Ok(())
}
