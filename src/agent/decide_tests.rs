use super::*;
use serde_json::json;

const LIMITS: Limits = Limits {
    max_steps: 3,
    max_continuations: 2,
};

fn answer(stop: &StopReason) -> Reply<'_> {
    Reply {
        stop,
        tool_calls: 0,
        inbox_empty: true,
        worth_a_skill: false,
    }
}

fn ran() -> ToolsRan {
    ToolsRan {
        looped: false,
        cancelled: false,
        only_reported: false,
        inbox_empty: true,
        worth_a_skill: false,
    }
}

#[test]
fn the_step_limit_ends_with_one_last_call_after_the_allowed_calls() {
    let mut state = TurnState::new(3);
    assert_eq!(state.before_call(LIMITS), BeforeCall::Call { step: 1 });
    assert_eq!(state.before_call(LIMITS), BeforeCall::Call { step: 2 });
    assert_eq!(state.before_call(LIMITS), BeforeCall::Call { step: 3 });
    assert_eq!(state.before_call(LIMITS), BeforeCall::LastWord { steps: 3 });
    assert_eq!(state.steps, 3);
}

#[test]
fn tool_calls_are_run_and_counted() {
    let mut state = TurnState::new(3);
    let stop = StopReason::ToolUse;
    let reply = Reply {
        tool_calls: 2,
        ..answer(&stop)
    };
    assert_eq!(state.on_reply(&reply, LIMITS), Next::RunTools);
    assert_eq!(state.on_reply(&reply, LIMITS), Next::RunTools);
    assert_eq!(state.tool_calls, 4);
    assert_eq!(state.after_tools(ran()), Next::Step);
}

#[test]
fn tool_calls_cut_by_the_output_limit_still_run() {
    let mut state = TurnState::new(3);
    let stop = StopReason::MaxTokens;
    let reply = Reply {
        tool_calls: 1,
        ..answer(&stop)
    };
    assert_eq!(state.on_reply(&reply, LIMITS), Next::RunTools);
    assert_eq!(state.continuations, 0);
}

#[test]
fn the_third_identical_call_stops_the_turn_as_a_loop() {
    let mut state = TurnState::new(3);
    let input = json!({"path": "a"});
    assert!(!state.guard.observe("read_file", &input));
    assert!(!state.guard.observe("read_file", &input));
    let looped = state.guard.observe("read_file", &input);
    assert!(looped);
    let next = state.after_tools(ToolsRan { looped, ..ran() });
    assert_eq!(next, Next::End(TurnStatus::LoopDetected));
}

#[test]
fn an_interrupt_during_the_tools_ends_the_turn_interrupted() {
    let mut state = TurnState::new(3);
    let next = state.after_tools(ToolsRan {
        cancelled: true,
        ..ran()
    });
    assert_eq!(next, Next::End(TurnStatus::Interrupted));
}

#[test]
fn an_answer_with_injections_waiting_goes_round_instead_of_ending() {
    let mut state = TurnState::new(3);
    let stop = StopReason::EndTurn;
    let reply = Reply {
        inbox_empty: false,
        ..answer(&stop)
    };
    assert_eq!(state.on_reply(&reply, LIMITS), Next::Step);
    assert_eq!(
        state.on_reply(&answer(&stop), LIMITS),
        Next::End(TurnStatus::Completed)
    );
}

#[test]
fn injections_drain_in_order_and_take_the_compaction_request() {
    let mut pending = InboxState::default();
    pending.texts.push_back("first".into());
    pending.texts.push_back("second".into());
    pending.compact = true;
    let (texts, compact) = drain_inbox(&mut pending);
    assert_eq!(texts, ["first", "second"]);
    assert!(compact);
    assert!(pending.texts.is_empty());
    assert_eq!(drain_inbox(&mut pending), (Vec::new(), false));
}

#[test]
fn a_cut_off_reply_is_continued_up_to_the_maximum_then_ends_cut_off() {
    let mut state = TurnState::new(3);
    let stop = StopReason::MaxTokens;
    assert_eq!(state.on_reply(&answer(&stop), LIMITS), Next::AskToContinue);
    assert_eq!(state.on_reply(&answer(&stop), LIMITS), Next::AskToContinue);
    assert_eq!(
        state.on_reply(&answer(&stop), LIMITS),
        Next::End(TurnStatus::CutOff)
    );
    assert_eq!(state.continuations, 2);
}

#[test]
fn a_refusal_ends_the_turn_refused_even_with_injections_waiting() {
    let mut state = TurnState::new(3);
    let stop = StopReason::Refusal;
    let reply = Reply {
        inbox_empty: false,
        ..answer(&stop)
    };
    assert_eq!(
        state.on_reply(&reply, LIMITS),
        Next::End(TurnStatus::Refused)
    );
}

#[test]
fn a_turn_worth_a_skill_asks_for_it_once_before_completing() {
    let mut state = TurnState::new(3);
    let stop = StopReason::EndTurn;
    let reply = Reply {
        worth_a_skill: true,
        ..answer(&stop)
    };
    assert_eq!(state.on_reply(&reply, LIMITS), Next::AskForSkill);
    assert_eq!(
        state.on_reply(&reply, LIMITS),
        Next::End(TurnStatus::Completed)
    );
}

#[test]
fn an_answer_whose_only_call_is_its_report_completes_the_turn() {
    let mut state = TurnState::new(3);
    let reported = ToolsRan {
        only_reported: true,
        ..ran()
    };
    assert_eq!(
        state.after_tools(reported),
        Next::End(TurnStatus::Completed)
    );
    let with_injection = ToolsRan {
        inbox_empty: false,
        ..reported
    };
    assert_eq!(state.after_tools(with_injection), Next::Step);
}

#[test]
fn a_context_refused_by_the_provider_is_compacted_once_then_fails() {
    let mut state = TurnState::new(3);
    assert_eq!(
        state.on_failure(CallFailure::ContextTooLong),
        Next::CompactAndRetry
    );
    assert_eq!(
        state.on_failure(CallFailure::ContextTooLong),
        Next::End(TurnStatus::Failed)
    );
    assert_eq!(
        state.on_failure(CallFailure::Other),
        Next::End(TurnStatus::Failed)
    );
    assert_eq!(
        state.on_failure(CallFailure::Cancelled),
        Next::End(TurnStatus::Interrupted)
    );
}

#[test]
fn compaction_is_due_when_asked_or_past_the_threshold() {
    let fill = |used| Fill {
        used,
        budget: 1000.0,
        threshold: 0.8,
    };
    assert_eq!(compaction_due(false, fill(799.0)), None);
    assert_eq!(
        compaction_due(false, fill(800.0)),
        Some(CompactReason::Threshold)
    );
    assert_eq!(
        compaction_due(true, fill(10.0)),
        Some(CompactReason::Requested)
    );
    assert!(!tokenizer_needed(fill(249.0)));
    assert!(tokenizer_needed(fill(250.0)));
    assert!(!over_message_limit(99, 100));
    assert!(over_message_limit(100, 100));
}

#[test]
fn during_a_turn_an_injection_goes_to_it_and_user_input_waits_queued() {
    let inject = Op::Inject {
        text: "also".into(),
    };
    assert_eq!(on_op(Some(inject), true), OpAction::Deliver("also".into()));
    let input = Op::user_input("next");
    assert_eq!(
        on_op(Some(input), true),
        OpAction::Queue(Queued::text("next".into(), UserMessageKind::Queued))
    );
}

#[test]
fn the_images_of_user_input_wait_with_its_text() {
    let image = Attachment {
        name: "shot.png".into(),
        data: "iVBORw0KGgo=".into(),
    };
    let input = Op::UserInput {
        text: "what is this?".into(),
        images: vec![image.clone()],
    };
    let OpAction::Queue(queued) = on_op(Some(input), true) else {
        panic!("not queued");
    };
    assert_eq!(queued.images, [image]);
    assert_eq!(queued.kind, UserMessageKind::Queued);
}

#[test]
fn between_turns_an_injection_or_user_input_opens_a_turn_as_a_prompt() {
    for op in [Op::Inject { text: "go".into() }, Op::user_input("go")] {
        assert_eq!(
            on_op(Some(op), false),
            OpAction::Queue(Queued::text("go".into(), UserMessageKind::Prompt))
        );
    }
}

#[test]
fn withdraw_takes_back_the_latest_queued_message_only_during_a_turn() {
    let op = || Some(Op::Withdraw { text: "b".into() });
    assert_eq!(on_op(op(), true), OpAction::Withdraw("b".into()));
    assert_eq!(on_op(op(), false), OpAction::Ignore);

    let mut queued: VecDeque<Queued> = VecDeque::new();
    for (text, kind) in [
        ("b", UserMessageKind::Injected),
        ("b", UserMessageKind::Queued),
        ("c", UserMessageKind::Queued),
        ("b", UserMessageKind::Queued),
    ] {
        queued.push_back(Queued::text(text.into(), kind));
    }
    assert!(withdraw(&mut queued, "b"));
    assert!(withdraw(&mut queued, "b"));
    assert!(!withdraw(&mut queued, "b"));
    let left: Vec<_> = queued.iter().map(|q| (q.text.as_str(), q.kind)).collect();
    assert_eq!(
        left,
        [
            ("b", UserMessageKind::Injected),
            ("c", UserMessageKind::Queued)
        ]
    );
}

#[test]
fn interrupt_stops_the_turn_or_between_turns_the_background_agents() {
    assert_eq!(on_op(Some(Op::Interrupt), true), OpAction::CancelTurn);
    assert_eq!(
        on_op(Some(Op::Interrupt), false),
        OpAction::CancelBackground
    );
}

#[test]
fn compact_waits_for_the_next_call_during_a_turn_and_runs_at_once_between() {
    assert_eq!(
        on_op(Some(Op::Compact), true),
        OpAction::CompactBeforeNextCall
    );
    assert_eq!(on_op(Some(Op::Compact), false), OpAction::CompactNow);
}

#[test]
fn shutdown_or_a_closed_channel_shuts_down() {
    assert_eq!(on_op(Some(Op::Shutdown), true), OpAction::Shutdown);
    assert_eq!(on_op(None, false), OpAction::Shutdown);
}

#[test]
fn arrived_injections_go_ahead_of_queued_messages_in_order() {
    let mut queued: VecDeque<Queued> = VecDeque::new();
    queued.push_back(Queued::text("later".into(), UserMessageKind::Queued));
    queue_arrived(&mut queued, vec!["one".into(), "two".into()]);
    let order: Vec<_> = queued.iter().map(|q| q.text.as_str()).collect();
    assert_eq!(order, ["one", "two", "later"]);
    assert_eq!(queued[0].kind, UserMessageKind::Injected);
}

#[test]
fn approvals_and_the_approval_mode_act_alike_during_and_between_turns() {
    for running in [true, false] {
        let approval = Op::Approval {
            id: "call-1".into(),
            decision: ApprovalDecision::Deny,
        };
        assert_eq!(
            on_op(Some(approval), running),
            OpAction::Answer("call-1".into(), ApprovalDecision::Deny)
        );
        let mode = Op::SetApprovalMode {
            mode: ApprovalMode::ReadOnly,
        };
        assert_eq!(
            on_op(Some(mode), running),
            OpAction::SetApprovalMode(ApprovalMode::ReadOnly)
        );
        // A tool waits for the front end's reply during a turn; an offer may come any time.
        let reply = Op::FrontEndReply {
            id: "front-end-1".into(),
            reply: FrontEndReply::Written,
        };
        assert_eq!(
            on_op(Some(reply), running),
            OpAction::Reply("front-end-1".into(), FrontEndReply::Written)
        );
        let services = FrontEndServices {
            terminal: true,
            ..FrontEndServices::default()
        };
        assert_eq!(
            on_op(Some(Op::OfferServices { services }), running),
            OpAction::Offer(services)
        );
    }
}

#[test]
fn a_model_switch_applies_at_once_between_turns_and_before_the_next_call_during_one() {
    let switch = || Op::SetModel {
        model: "gpt".into(),
    };
    assert_eq!(
        on_op(Some(switch()), false),
        OpAction::SwitchModelNow("gpt".into())
    );
    assert_eq!(
        on_op(Some(switch()), true),
        OpAction::SwitchModelBeforeNextCall("gpt".into())
    );
}

#[test]
fn a_rewind_is_refused_while_a_turn_runs_and_carried_out_between_turns() {
    let rewind = || {
        Some(Op::Rewind {
            turn: 2,
            what: RewindWhat::Both,
        })
    };
    assert_eq!(on_op(rewind(), true), OpAction::RefuseRewind);
    assert_eq!(on_op(Some(Op::ListTurns), true), OpAction::RefuseRewind);
    assert_eq!(
        on_op(rewind(), false),
        OpAction::Rewind(2, RewindWhat::Both)
    );
    assert_eq!(on_op(Some(Op::ListTurns), false), OpAction::ListTurns);
}

#[test]
fn a_paused_reply_is_sent_back_for_the_provider_to_resume_within_the_step_limit() {
    let mut state = TurnState::new(3);
    let stop = StopReason::Paused;
    assert_eq!(state.on_reply(&answer(&stop), LIMITS), Next::Step);
    assert_eq!(state.before_call(LIMITS), BeforeCall::Call { step: 1 });
}
