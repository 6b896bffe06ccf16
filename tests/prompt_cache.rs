//! What a session costs in prompt-cache terms, on both wires: the real binary runs a scripted
//! 30-step session (reads, shell commands, edits, greps, an answer) against an in-test server
//! that accounts caching as the APIs document it (`cache_support::sim`).

mod cache_support;

use cache_support::session::{STEPS, plain_step, project, run};
use cache_support::{Totals, Wire};

#[test]
fn a_plain_session_is_read_from_the_cache_on_both_wires() {
    for wire in [Wire::Anthropic, Wire::OpenAi] {
        let project = project();
        let exchanges = run(wire, project.path(), Box::new(|step, _| plain_step(step)));
        assert_eq!(
            exchanges.len(),
            STEPS,
            "{wire:?}: every step reached the model"
        );
        let totals = Totals::of(&exchanges);
        assert!(
            totals.read_share() > 0.9,
            "{wire:?}: only {:.1} % of the input was read from the cache: {totals:?}",
            totals.read_share() * 100.0
        );
        let edited = std::fs::read_to_string(project.path().join("src/part4.rs"))
            .unwrap_or_else(|e| panic!("{e}"));
        assert!(edited.contains("pub fn value"), "{edited}");
    }
}
