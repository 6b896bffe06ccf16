use super::*;

type TestResult = Result<(), Box<dyn std::error::Error>>;

const INBOX: &str = "---
name: inbox
every: 30m
active_hours: 09:00-18:00
timezone: Europe/Berlin
deliver: [log, telegram]
---
- [ ] anything new in ./inbox?
";

struct Fixture {
    _root: tempfile::TempDir,
    dirs: Dirs,
    workspace: PathBuf,
}

fn fixture() -> Result<Fixture, Box<dyn std::error::Error>> {
    let root = tempfile::tempdir()?;
    let base = root.path().canonicalize()?;
    let workspace = base.join("ws");
    std::fs::create_dir_all(workspace.join(".mnemo").join(DIR))?;
    std::fs::create_dir_all(base.join("config").join(DIR))?;
    Ok(Fixture {
        dirs: Dirs {
            config: Some(base.join("config")),
            data: None,
        },
        workspace,
        _root: root,
    })
}

#[test]
fn a_heartbeat_file_gives_its_timing_workspace_channels_and_checklist() -> TestResult {
    let fx = fixture()?;
    let origin = Origin::Workspace(fx.workspace.clone());
    let beat = parse(Path::new("/x/inbox.md"), INBOX, &origin)?;
    assert_eq!(beat.name, "inbox");
    assert!(beat.enabled);
    assert_eq!(beat.workspace, fx.workspace);
    assert_eq!(
        beat.deliver,
        [Channel::Log, Channel::Telegram { chat: None }]
    );
    assert_eq!(beat.checklist, "- [ ] anything new in ./inbox?");
    assert_eq!(beat.timing.zone, Zone::parse("Europe/Berlin")?);
    assert!(beat.timing.hours.is_some());
    let job = beat.job(Utc::now());
    assert_eq!(job.key, "heartbeat:/x/inbox.md");
    assert!(job.prompt.contains("HEARTBEAT_OK") && job.prompt.ends_with("./inbox?"));
    let cron = "---\ncron: 0 9 * * 1-5\nenabled: false\n---\nreport\n";
    let beat = parse(Path::new("/x/morning.md"), cron, &origin)?;
    assert_eq!((beat.name.as_str(), beat.enabled), ("morning", false));
    assert!(matches!(beat.timing.rule, Rule::Cron(_)));
    Ok(())
}

#[test]
fn interval_is_a_synonym_of_every() -> TestResult {
    let fx = fixture()?;
    let origin = Origin::Workspace(fx.workspace.clone());
    let beat = parse(
        Path::new("/x/memoo.md"),
        "---\ninterval: 20s\n---\ncheck\n",
        &origin,
    )?;
    let Rule::Every { every, first } = beat.timing.rule else {
        return Err(format!("not an interval: {:?}", beat.timing.rule).into());
    };
    assert_eq!((every, first), (std::time::Duration::from_secs(20), None));
    let both = "---\ninterval: 20s\nevery: 30s\n---\ncheck\n";
    let err = parse(Path::new("/x/both.md"), both, &origin)
        .err()
        .ok_or("both accepted")?;
    assert!(err.contains("duplicate field `every`"), "{err}");
    Ok(())
}

#[test]
fn bad_files_say_what_is_wrong() -> TestResult {
    let fx = fixture()?;
    let origin = Origin::Workspace(fx.workspace.clone());
    let cases = [
        ("no frontmatter\n", "no YAML frontmatter"),
        ("---\nevery: 30m\nbody\n", "no closing"),
        ("---\nevery: [30m\n---\nx\n", "frontmatter:"),
        (
            "---\nevery: 30m\ncolour: red\n---\nx\n",
            "unknown field `colour`",
        ),
        ("---\nevery: 30m\ncron: 0 9 * * *\n---\nx\n", "not both"),
        ("---\nname: x\n---\nx\n", "say when it runs"),
        (
            "---\ncron: 0 99 * * *\n---\nx\n",
            "cron `0 99 * * *` is not valid",
        ),
        ("---\nevery: soon\n---\nx\n", "not a duration"),
        (
            "---\nevery: 1h\ndeliver: pigeon\n---\nx\n",
            "unknown delivery channel",
        ),
        (
            "---\nevery: 1h\ntimezone: Mars/Base\n---\nx\n",
            "unknown time zone",
        ),
        ("---\nevery: 1h\n---\n\n", "body"),
        (
            "---\nevery: 1h\nworkspace: /\n---\nx\n",
            "runs in that workspace",
        ),
    ];
    for (text, expected) in cases {
        let err = parse(Path::new("/x/bad.md"), text, &origin)
            .err()
            .ok_or(format!("accepted: {text}"))?;
        assert!(err.contains(expected), "{text:?}: {err}");
    }
    let err = parse(
        Path::new("/x/u.md"),
        "---\nevery: 1h\n---\nx\n",
        &Origin::User,
    )
    .err();
    assert!(err.is_some_and(|e| e.contains("which `workspace`")));
    Ok(())
}

#[test]
fn loading_reports_bad_files_one_by_one_and_ignores_untrusted_workspaces() -> TestResult {
    let fx = fixture()?;
    let user_dir = fx.dirs.config.clone().ok_or("config")?.join(DIR);
    let user_beat = format!(
        "---\nevery: 1h\nworkspace: {}\n---\ncheck disk\n",
        fx.workspace.display()
    );
    std::fs::write(user_dir.join("disk.md"), user_beat)?;
    std::fs::write(
        user_dir.join("broken.md"),
        "---\nevery: 1h\ncron: x\n---\nx\n",
    )?;
    std::fs::write(user_dir.join("notes.txt"), "not a heartbeat")?;
    let own_dir = fx.workspace.join(".mnemo").join(DIR);
    std::fs::write(own_dir.join("inbox.md"), INBOX)?;

    let found = load(&fx.dirs, std::slice::from_ref(&fx.workspace));
    let names: Vec<&str> = found.found.iter().map(|h| h.name.as_str()).collect();
    assert_eq!(names, ["disk"]);
    assert_eq!(found.errors.len(), 1);
    assert!(
        found.errors[0]
            .to_string()
            .contains("broken.md: give either")
    );
    assert_eq!(found.untrusted, std::slice::from_ref(&fx.workspace));

    trust::trust(&fx.dirs, &fx.workspace)?;
    let found = load(&fx.dirs, &[]);
    let names: Vec<&str> = found.found.iter().map(|h| h.name.as_str()).collect();
    assert_eq!(names, ["disk", "inbox"]);
    assert!(found.untrusted.is_empty());
    // A workspace config changed since it was trusted takes the trust away.
    std::fs::write(fx.workspace.join(".mnemo/config.toml"), "[agent]\n")?;
    assert!(!is_trusted(&fx.dirs, &fx.workspace));
    let untrusted = load(&fx.dirs, &[]).untrusted;
    assert_eq!(untrusted, std::slice::from_ref(&fx.workspace));
    Ok(())
}
