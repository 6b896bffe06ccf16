use std::fs;
use std::path::Path;

use super::{Before, Keeper, Limits};

type TestResult = Result<(), Box<dyn std::error::Error>>;

fn limits(file: u64, session: u64, total: u64) -> Limits {
    Limits {
        file_bytes: file,
        session_bytes: session,
        total_bytes: total,
    }
}

fn write(ws: &Path, name: &str, text: &str) {
    fs::write(ws.join(name), text).unwrap_or_else(|e| panic!("{e}"));
}

#[test]
fn a_file_over_the_size_limit_is_named_as_not_kept() -> TestResult {
    let (data, ws) = (tempfile::tempdir()?, tempfile::tempdir()?);
    let keeper = Keeper::new(data.path().join("rewind"), "s1", limits(8, 100, 1000));
    keeper.begin_turn(1, "grow it", 0, 0)?;
    write(ws.path(), "big.txt", "more than eight bytes");
    keeper.keep(1, ws.path(), Path::new("big.txt"))?;
    write(ws.path(), "big.txt", "changed");
    let turns = keeper.turns()?;
    assert_eq!(turns[0].files[0].before, Before::TooLarge { bytes: 21 });
    let done = keeper.restore_files(ws.path(), 1)?;
    assert_eq!(done.not_restored.len(), 1);
    assert!(done.not_restored[0].why.contains("too large"), "{done:?}");
    assert_eq!(fs::read_to_string(ws.path().join("big.txt"))?, "changed");
    Ok(())
}

#[test]
fn a_sessions_oldest_copies_are_pruned_beyond_its_limit() -> TestResult {
    let (data, ws) = (tempfile::tempdir()?, tempfile::tempdir()?);
    let keeper = Keeper::new(data.path().join("rewind"), "s1", limits(20, 25, 1000));
    for turn in 1..=3 {
        let name = format!("f{turn}.txt");
        write(ws.path(), &name, "0123456789");
        keeper.begin_turn(turn, "change", turn as i64, 0)?;
        keeper.keep(turn, ws.path(), Path::new(&name))?;
        write(ws.path(), &name, "changed");
    }
    let blobs = fs::read_dir(data.path().join("rewind/s1/blobs"))?.count();
    assert_eq!(
        blobs, 2,
        "the oldest copy was removed from the data directory"
    );
    let done = keeper.restore_files(ws.path(), 1)?;
    assert_eq!(done.restored, vec!["f2.txt", "f3.txt"]);
    assert_eq!(done.not_restored[0].path, "f1.txt");
    assert!(done.not_restored[0].why.contains("pruned"), "{done:?}");
    assert_eq!(fs::read_to_string(ws.path().join("f2.txt"))?, "0123456789");
    Ok(())
}

#[test]
fn other_sessions_are_pruned_least_recently_used_first_beyond_the_total() -> TestResult {
    let (data, ws) = (tempfile::tempdir()?, tempfile::tempdir()?);
    let root = data.path().join("rewind");
    write(ws.path(), "f.txt", "0123456789");
    for session in ["old", "newer"] {
        let keeper = Keeper::new(root.clone(), session, limits(100, 100, 1000));
        keeper.begin_turn(1, "change", 0, 0)?;
        keeper.keep(1, ws.path(), Path::new("f.txt"))?;
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let keeper = Keeper::new(root.clone(), "current", limits(100, 100, 15));
    keeper.begin_turn(1, "change", 0, 0)?;
    assert!(
        !root.join("old").exists(),
        "the least recently used went first"
    );
    assert!(
        root.join("newer").exists(),
        "only as much as needed is pruned"
    );
    Ok(())
}

#[test]
fn a_created_file_is_removed_and_a_symlink_is_never_followed() -> TestResult {
    let (data, ws, outside) = (
        tempfile::tempdir()?,
        tempfile::tempdir()?,
        tempfile::tempdir()?,
    );
    let keeper = Keeper::new(data.path().join("rewind"), "s1", Limits::default());
    keeper.begin_turn(1, "make files", 0, 0)?;
    keeper.keep(1, ws.path(), Path::new("new.txt"))?;
    write(ws.path(), "new.txt", "made by the agent");
    write(outside.path(), "secret", "outside");
    std::os::unix::fs::symlink(outside.path().join("secret"), ws.path().join("link"))?;
    keeper.keep(1, ws.path(), Path::new("link"))?;
    let turns = keeper.turns()?;
    assert!(matches!(
        turns[0].files[1].before,
        Before::Unreadable { .. }
    ));
    let done = keeper.restore_files(ws.path(), 1)?;
    assert_eq!(done.removed, vec!["new.txt"]);
    assert!(!ws.path().join("new.txt").exists());
    assert_eq!(
        fs::read_to_string(outside.path().join("secret"))?,
        "outside"
    );
    assert!(
        ws.path().join("link").is_symlink(),
        "the link itself is left alone"
    );
    Ok(())
}
