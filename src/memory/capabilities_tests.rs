//! Tests of `capabilities.rs`: versions, the full-text index of latest versions, hybrid
//! ranking, stats and pins.

use serde_json::json;

use super::*;

type TestResult = Result<(), Box<dyn std::error::Error>>;

fn new_capability(name: &str, description: &str) -> NewCapability {
    NewCapability {
        name: name.to_owned(),
        description: description.to_owned(),
        input_schema: json!({"type": "object", "properties": {"path": {"type": "string"}}}),
        language: "bash".to_owned(),
        code: format!("echo {name}"),
        ..NewCapability::default()
    }
}

fn names(found: &[Capability]) -> Vec<&str> {
    found.iter().map(|c| c.name.as_str()).collect()
}

fn search(db: &Db, query: &str) -> Result<Vec<String>, StoreError> {
    let found = db.search_capabilities(query, None, 10)?;
    Ok(found.into_iter().map(|c| c.name).collect())
}

#[test]
fn versions_increase_and_old_versions_are_kept() -> TestResult {
    let mut db = Db::open_in_memory()?;
    let first = db.create_capability(NewCapability {
        session_id: Some("s1".to_owned()),
        turn: Some(3),
        ..new_capability("sha256-hash", "hash a file")
    })?;
    assert_eq!((first.version, first.turn), (1, Some(3)));
    let mut second = new_capability("sha256-hash", "hash a file or a string");
    second.code = "sha256sum \"$1\"".to_owned();
    let second = db.create_capability(second)?;
    assert_eq!(second.version, 2);
    assert_eq!(db.capability("sha256-hash")?, Some(second.clone()));
    let old = db.capability_version("sha256-hash", 1)?.ok_or("v1 lost")?;
    assert_eq!(old.description, "hash a file");
    assert_eq!(old.session_id.as_deref(), Some("s1"));
    let versions = db.capability_versions("sha256-hash")?;
    let numbers: Vec<u32> = versions.iter().map(|v| v.version).collect();
    assert_eq!(numbers, vec![1, 2]);
    assert_eq!(versions[1].code_bytes, "sha256sum \"$1\"".len());
    assert_eq!(db.capability_count()?, 1);
    assert_eq!(db.capability_version("sha256-hash", 3)?, None);
    assert_eq!(db.capability("unknown")?, None);
    Ok(())
}

#[test]
fn every_field_round_trips() -> TestResult {
    let mut db = Db::open_in_memory()?;
    let new = NewCapability {
        tags: vec!["csv".to_owned(), "json".to_owned()],
        examples: vec![json!({"input": {"path": "a.csv"}, "output": "[{}]"})],
        language: "python3".to_owned(),
        embedding: Some(vec![3.0, 4.0]),
        ..new_capability("csv-to-json", "convert CSV to JSON")
    };
    let stored = db.create_capability(new.clone())?;
    assert_eq!(stored.tags, new.tags);
    assert_eq!(stored.examples, new.examples);
    assert_eq!(stored.input_schema, new.input_schema);
    assert_eq!(
        (stored.language.as_str(), stored.code.as_str()),
        ("python3", "echo csv-to-json")
    );
    assert_eq!(
        (stored.access_count, stored.last_access, stored.pinned),
        (0, None, false)
    );
    Ok(())
}

#[test]
fn the_list_holds_the_latest_version_of_each_name() -> TestResult {
    let mut db = Db::open_in_memory()?;
    db.create_capability(new_capability("zip-dir", "zip a directory"))?;
    db.create_capability(new_capability("add-numbers", "first"))?;
    db.create_capability(new_capability("add-numbers", "second"))?;
    let listed = db.list_capabilities()?;
    assert_eq!(names(&listed), vec!["add-numbers", "zip-dir"]);
    assert_eq!(
        (listed[0].version, listed[0].description.as_str()),
        (2, "second")
    );
    assert_eq!(db.capability_count()?, 2);
    Ok(())
}

#[test]
fn search_finds_name_parts_description_tags_and_example_text() -> TestResult {
    let mut db = Db::open_in_memory()?;
    db.create_capability(NewCapability {
        tags: vec!["crypto".to_owned()],
        examples: vec![json!({"input": {"text": "abracadabra"}, "output": "9f2c"})],
        ..new_capability("sha256-hash", "compute a digest")
    })?;
    db.create_capability(new_capability("resize_image", "scale pictures down"))?;
    for query in [
        "sha256",
        "hash",
        "hashing",
        "digest",
        "crypto",
        "abracadabra",
        "SHA256-hash!",
    ] {
        assert_eq!(search(&db, query)?, vec!["sha256-hash"], "{query}");
    }
    assert_eq!(search(&db, "image")?, vec!["resize_image"]);
    assert_eq!(search(&db, "pictures")?, vec!["resize_image"]);
    // Keys of the example JSON are not words of the capability.
    assert!(search(&db, "output")?.is_empty());
    Ok(())
}

#[test]
fn only_the_latest_version_is_searched() -> TestResult {
    let mut db = Db::open_in_memory()?;
    db.create_capability(new_capability("fetch-page", "download with curl"))?;
    db.create_capability(new_capability("fetch-page", "download with wget"))?;
    assert!(search(&db, "curl")?.is_empty());
    let found = db.search_capabilities("wget", None, 10)?;
    assert_eq!((found.len(), found[0].version), (1, 2));
    Ok(())
}

#[test]
fn removal_removes_every_version_and_the_search_entry() -> TestResult {
    let mut db = Db::open_in_memory()?;
    db.create_capability(new_capability("git-stats", "count commits"))?;
    db.create_capability(new_capability("git-stats", "count commits per author"))?;
    db.touch_capability("git-stats")?;
    assert!(db.remove_capability("git-stats")?);
    assert!(!db.remove_capability("git-stats")?);
    assert!(search(&db, "commits")?.is_empty());
    assert!(db.capability_versions("git-stats")?.is_empty());
    assert_eq!(db.capability_count()?, 0);
    // A new capability of the same name starts again, without the old stats.
    let again = db.create_capability(new_capability("git-stats", "again"))?;
    assert_eq!((again.version, again.access_count), (1, 0));
    db.conn.execute(
        "INSERT INTO capabilities_fts(capabilities_fts, rank) VALUES ('integrity-check', 1)",
        [],
    )?;
    Ok(())
}

#[test]
fn hostile_queries_do_not_error() -> TestResult {
    let mut db = Db::open_in_memory()?;
    db.create_capability(new_capability("foo-bar", "does foo"))?;
    for query in [
        "\"foo\" AND (",
        "*",
        "NEAR(",
        "-x",
        "a:b",
        "\"",
        "^foo*",
        "OR",
        "",
    ] {
        db.search_capabilities(query, None, 5)?;
        db.search_capabilities(query, Some(&[1.0, 0.0]), 5)?;
    }
    assert_eq!(search(&db, "\"foo\" AND (")?, vec!["foo-bar"]);
    Ok(())
}

#[test]
fn a_query_without_words_returns_the_most_used_first() -> TestResult {
    let mut db = Db::open_in_memory()?;
    for name in ["a-one", "b-two", "c-three"] {
        db.create_capability(new_capability(name, "something"))?;
    }
    db.touch_capability("b-two")?;
    db.touch_capability("b-two")?;
    db.touch_capability("c-three")?;
    assert_eq!(search(&db, "   ")?, vec!["b-two", "c-three", "a-one"]);
    assert_eq!(names(&db.search_capabilities("*", None, 1)?), vec!["b-two"]);
    Ok(())
}

#[test]
fn hybrid_search_puts_the_semantically_closer_first_when_keywords_tie() -> TestResult {
    let mut db = Db::open_in_memory()?;
    let with = |name: &str, embedding: Option<Vec<f32>>| NewCapability {
        embedding,
        ..new_capability(name, "convert a file")
    };
    db.create_capability(with("convert-a", Some(vec![0.0, 1.0])))?;
    db.create_capability(with("convert-b", Some(vec![1.0, 0.1])))?;
    db.create_capability(with("convert-c", None))?;
    db.create_capability(NewCapability {
        embedding: Some(vec![0.9, 0.0]),
        ..new_capability("unrelated-words", "nothing in common")
    })?;
    let query = [1.0, 0.0];
    let found = db.search_capabilities("convert file", Some(&query), 10)?;
    assert_eq!(names(&found)[0], "convert-b");
    // Without an embedding a capability still ranks by its keywords; a close vector with no
    // keyword match is found too.
    assert!(names(&found).contains(&"convert-c"));
    assert!(names(&found).contains(&"unrelated-words"));
    let flipped = db.search_capabilities("convert file", Some(&[0.0, 2.0]), 1)?;
    assert_eq!(names(&flipped), vec!["convert-a"]);
    Ok(())
}

#[test]
fn touch_counts_uses_and_records_the_time() -> TestResult {
    let mut db = Db::open_in_memory()?;
    db.create_capability(new_capability("lint-fix", "run the linter"))?;
    db.touch_capability("lint-fix")?;
    db.touch_capability("lint-fix")?;
    let used = db.capability("lint-fix")?.ok_or("missing")?;
    assert_eq!(used.access_count, 2);
    assert!(used.last_access.is_some_and(|at| at >= used.created_at));
    assert!(matches!(
        db.touch_capability("nope"),
        Err(StoreError::NotFound {
            what: "capability",
            ..
        })
    ));
    Ok(())
}

#[test]
fn a_pin_survives_a_new_version_and_can_be_taken_back() -> TestResult {
    let mut db = Db::open_in_memory()?;
    db.create_capability(new_capability("deploy-check", "check a deploy"))?;
    db.create_capability(new_capability("other", "other"))?;
    assert!(db.pin_capability("deploy-check", true)?);
    assert!(!db.pin_capability("missing", true)?);
    let newer = db.create_capability(new_capability("deploy-check", "check a deploy again"))?;
    assert!(newer.pinned);
    let pinned = db.pinned_capabilities()?;
    assert_eq!(
        (names(&pinned), pinned[0].version),
        (vec!["deploy-check"], 2)
    );
    assert!(db.pin_capability("deploy-check", false)?);
    assert!(db.pinned_capabilities()?.is_empty());
    Ok(())
}

#[test]
fn a_match_on_a_minority_of_the_words_or_a_distant_meaning_is_not_found() -> TestResult {
    let mut db = Db::open_in_memory()?;
    let with = |name: &str, description: &str, embedding: Vec<f32>| NewCapability {
        embedding: Some(embedding),
        ..new_capability(name, description)
    };
    db.create_capability(with("weather", "forecast for tomorrow", vec![0.0, 1.0]))?;
    db.create_capability(with("ledger", "book keeping from a csv", vec![0.2, 1.0]))?;
    db.create_capability(with("rooms", "book a meeting room", vec![1.0, 0.3]))?;
    db.create_capability(with(
        "calendar",
        "add an event to the calendar",
        vec![1.0, 0.1],
    ))?;
    let query = "book a meeting room for tomorrow";
    assert_eq!(search(&db, query)?, vec!["rooms"]);
    let found = db.search_capabilities(query, Some(&[1.0, 0.0]), 10)?;
    assert_eq!(
        names(&found),
        vec!["rooms", "calendar"],
        "the calendar is close in meaning; the one-word matches are not"
    );
    Ok(())
}
