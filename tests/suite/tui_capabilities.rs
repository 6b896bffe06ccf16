//! What a person sees of capabilities in the TUI: a one-line notice when capability tools
//! enter or leave the agent's tool list.

use crate::tui_support;

use mnemo::protocol::Event;
use tui_support::{Harness, TestResult};

#[test]
fn tools_entering_and_leaving_show_as_one_line_notices() -> TestResult {
    let mut harness = Harness::started();
    harness.prompt("hash this file");
    harness.events([
        Event::ToolsChanged {
            added: vec!["cap_sha256_hash".into(), "cap_csv_to_json".into()],
            removed: Vec::new(),
        },
        Event::ToolsChanged {
            added: Vec::new(),
            removed: vec!["cap_csv_to_json".into()],
        },
    ]);
    let screen = harness.screen(80, 16);
    insta::assert_snapshot!(screen);
    assert!(screen.contains("tools: + cap_sha256_hash, cap_csv_to_json"));
    assert!(screen.contains("tools: − cap_csv_to_json"));
    assert_eq!(
        harness.state.offered_tools,
        ["cap_sha256_hash"],
        "/capabilities lists what is offered now"
    );
    Ok(())
}
