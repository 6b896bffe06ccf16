//! `/schedule` in the TUI: the command asks the app for the list, and the notice it shows
//! (the text `mnemo schedule list` prints) reaches the screen.

use crate::tui_support;

use crossterm::event::{KeyCode, KeyModifiers};
use mnemo::jobs::heartbeat::{HeartbeatError, Heartbeats};
use mnemo::jobs::listing;
use mnemo::memory::Db;
use mnemo::memory::schedules::{NewSchedule, StoredWhen};
use mnemo::tui::cells::NoticeLevel;
use mnemo::tui::state::Effect;
use tui_support::{Harness, TestResult};

#[test]
fn slash_schedule_lists_schedules_heartbeat_errors_and_whether_serve_runs() -> TestResult {
    let mut harness = Harness::started();
    harness.type_text("/schedule");
    let effects = harness.state.handle_key(
        crossterm::event::KeyEvent::new(KeyCode::Enter, KeyModifiers::NONE),
        harness.now,
    );
    assert_eq!(effects, [Effect::ListSchedules]);

    let mut db = Db::open_in_memory()?;
    db.create_schedule(&NewSchedule {
        session_id: None,
        workspace: "/home/ada/project".into(),
        when: StoredWhen::Cron("0 9 * * 1-5".into()),
        prompt: "summarise yesterday's commits".into(),
        deliver: Vec::new(),
        rights: Default::default(),
    })?;
    let found = Heartbeats {
        errors: vec![HeartbeatError {
            path: "/home/ada/.config/mnemo/heartbeat/inbox.md".into(),
            message: "give either `every` or `cron`, not both".into(),
        }],
        ..Heartbeats::default()
    };
    let text = listing::overview(
        &db.list_schedules()?,
        &db.job_runs()?,
        &found,
        false,
        chrono::Utc::now(),
    );
    harness.state.notice(NoticeLevel::Info, &text);
    let screen = harness.screen(100, 16);
    assert!(screen.contains("Schedules (1):"), "{screen}");
    assert!(
        screen.contains("#1  cron `0 9 * * 1-5` · next "),
        "{screen}"
    );
    assert!(
        screen.contains("in /home/ada/project: summarise yesterday's commits"),
        "{screen}"
    );
    assert!(
        screen.contains("✗ /home/ada/.config/mnemo/heartbeat/inbox.md: give either"),
        "{screen}"
    );
    assert!(
        screen.contains("mnemo serve is not running: nothing runs until it is started."),
        "{screen}"
    );
    Ok(())
}
