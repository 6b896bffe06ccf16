use super::*;

fn hooks(event: &str, matcher: &str, command: &str, timeout: Option<u64>) -> Hooks {
    let group = MatcherGroup {
        matcher: Some(matcher.into()),
        hooks: vec![HookCommand {
            kind: "command".into(),
            command: command.into(),
            timeout,
        }],
    };
    let config = HooksConfig::from([(event.to_string(), vec![group])]);
    let (hooks, notes) = Hooks::build(std::env::temp_dir(), &[("test".into(), config)]);
    assert!(notes.is_empty(), "{notes:?}");
    hooks
}

async fn pre(hooks: &Hooks, tool: &str) -> Outcome {
    let names: Vec<&str> = [tool].into_iter().chain(claude_tool_name(tool)).collect();
    hooks
        .run(
            HookEvent::PreToolUse,
            &names,
            "s",
            ApprovalMode::Auto,
            Map::new(),
        )
        .await
}

#[tokio::test]
async fn claude_matchers_reach_mnemo_tools_by_their_claude_names() {
    let hooks = hooks("PreToolUse", "Edit|Write", "exit 2", None);
    assert_eq!(
        pre(&hooks, "write_file").await.permission,
        Some(Permission::Deny)
    );
    assert_eq!(
        pre(&hooks, "edit_file").await.permission,
        Some(Permission::Deny)
    );
    // Anchored: `Write` does not match `write_file`'s other half, nor `shell`.
    assert_eq!(pre(&hooks, "shell").await.permission, None);
}

#[tokio::test]
async fn exit_two_blocks_with_stderr_and_json_decides() {
    let hooks = hooks("PreToolUse", "Bash", "echo 'no rm here' >&2; exit 2", None);
    let outcome = pre(&hooks, "shell").await;
    assert_eq!(outcome.block.as_deref(), Some("no rm here"));
    let ask = r#"echo '{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"ask","permissionDecisionReason":"check it"}}'"#;
    let outcome = pre(&hooks_of(ask), "shell").await;
    assert_eq!(outcome.permission, Some(Permission::Ask));
    assert_eq!(outcome.reason.as_deref(), Some("check it"));
}

fn hooks_of(command: &str) -> Hooks {
    hooks("PreToolUse", "*", command, None)
}

#[tokio::test]
async fn a_failing_or_slow_hook_is_a_note_not_a_decision() {
    let outcome = pre(&hooks("PreToolUse", "", "sleep 5", Some(0)), "shell").await;
    assert_eq!(outcome.permission, None);
    assert!(
        outcome.notes[0].contains("timed out"),
        "{:?}",
        outcome.notes
    );
    let outcome = pre(&hooks_of("echo oops >&2; exit 1"), "shell").await;
    assert_eq!(outcome.permission, None);
    assert!(outcome.notes[0].contains("exit 1") && outcome.notes[0].contains("oops"));
}

#[test]
fn unknown_events_and_bad_matchers_are_reported() {
    let group = MatcherGroup {
        matcher: Some("(".into()),
        hooks: Vec::new(),
    };
    let config = HooksConfig::from([
        ("PreToolUse".to_string(), vec![group]),
        ("PreCompact".to_string(), Vec::new()),
    ]);
    let (hooks, notes) = Hooks::build(std::env::temp_dir(), &[("f".into(), config)]);
    assert!(!hooks.has(HookEvent::PreToolUse));
    assert_eq!(notes.len(), 2, "{notes:?}");
}
