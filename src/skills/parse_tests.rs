use super::*;

fn problem(text: &str, folder: &str) -> String {
    match parse(text, folder) {
        Ok(parsed) => panic!("accepted: {parsed:?}"),
        Err(e) => e.to_string(),
    }
}

#[test]
fn every_field_of_the_specification_is_read() {
    let text = "---\nname: pdf-tools\ndescription: Fill PDF forms.\nlicense: MIT\n\
                compatibility: needs poppler\nallowed-tools: Bash(pdftotext:*) Read\n\
                metadata:\n  author: me\n  verify: pdftotext -v\nmodel: ignored\n---\n\n\
                # Steps\n1. Do it.\n";
    let parsed = parse(text, "pdf-tools").unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(parsed.name, "pdf-tools");
    assert_eq!(parsed.description, "Fill PDF forms.");
    assert_eq!(parsed.license.as_deref(), Some("MIT"));
    assert_eq!(parsed.compatibility.as_deref(), Some("needs poppler"));
    assert_eq!(parsed.allowed_tools, ["Bash(pdftotext:*)", "Read"]);
    assert_eq!(parsed.metadata["verify"], "pdftotext -v");
    assert_eq!(parsed.body, "# Steps\n1. Do it.\n");
}

#[test]
fn crlf_a_bom_and_a_list_of_allowed_tools_are_accepted() {
    let text =
        "\u{feff}---\r\nname: a1\r\ndescription: x\r\nallowed-tools: [Read, Grep]\r\n---\r\nbody";
    let parsed = parse(text, "a1").unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(parsed.allowed_tools, ["Read", "Grep"]);
    assert_eq!(parsed.body, "body");
}

#[test]
fn a_folded_description_loses_its_final_newline() -> Result<(), SkillError> {
    let text = "---\nname: a\ndescription: >\n  Two\n  lines.\n---\n";
    assert_eq!(parse(text, "a")?.description, "Two lines.");
    Ok(())
}

#[test]
fn broken_files_say_what_is_wrong() {
    assert!(problem("# no frontmatter", "a").contains("does not start with YAML frontmatter"));
    assert!(problem("---\nname: a\n", "a").contains("does not start with YAML frontmatter"));
    assert!(problem("---\n---\nbody", "a").contains("frontmatter is empty"));
    assert!(problem("---\nname: [a\n---\n", "a").contains("frontmatter is not valid"));
    assert!(problem("---\ndescription: d\n---\n", "a").contains("no `name`"));
    assert!(problem("---\nname: a\n---\n", "a").contains("no `description`"));
    assert!(problem("---\nname: b\ndescription: d\n---\n", "a").contains("does not match"));
    let long = format!("---\nname: a\ndescription: {}\n---\n", "x".repeat(1025));
    assert!(problem(&long, "a").contains("1025 characters"));
    let message = problem("---\nname: Bad\ndescription: d\n---\n", "Bad");
    assert!(message.starts_with("Bad/SKILL.md: "), "{message}");
}

#[test]
fn names_follow_the_specification() {
    for good in ["a", "pdf-tools", "x9", &"a".repeat(64)] {
        assert_eq!(validate_name(good), Ok(()), "{good}");
    }
    for bad in [
        "",
        "-a",
        "a-",
        "a--b",
        "A",
        "a_b",
        "a b",
        "é",
        &"a".repeat(65),
    ] {
        assert!(validate_name(bad).is_err(), "{bad}");
    }
}

#[test]
fn a_rendered_skill_parses_back_even_with_awkward_text() -> Result<(), SkillError> {
    let mut metadata = Map::new();
    metadata.insert("verify".into(), Value::from("test -f x && echo 'ok: yes'"));
    let description = "Deploy: the app\n---\nwith \"quotes\" and # hashes";
    let text = render("deploy-app", description, "\n\n# Body\n---\n", &metadata)?;
    let parsed = parse(&text, "deploy-app")?;
    assert_eq!(parsed.description, description);
    assert_eq!(parsed.metadata, metadata);
    assert_eq!(parsed.body, "# Body\n---\n");
    Ok(())
}

#[test]
fn a_description_with_an_unquoted_colon_is_read_as_the_text_it_is() -> Result<(), SkillError> {
    let text = "---\nname: deploy\ndescription: Use when: the person says ship it. Steps: build, push\nmetadata:\n  verify: make check\n---\nbody";
    let parsed = parse(text, "deploy")?;
    assert_eq!(
        parsed.description,
        "Use when: the person says ship it. Steps: build, push"
    );
    assert_eq!(parsed.metadata["verify"], "make check");
    let quoted = "---\nname: a\ndescription: It's: fine\n---\n";
    assert_eq!(parse(quoted, "a")?.description, "It's: fine");
    // What is not valid for another reason still says so.
    let broken = problem("---\nname: [a\ndescription: x: y\n---\n", "a");
    assert!(broken.contains("not valid"), "{broken}");
    Ok(())
}
