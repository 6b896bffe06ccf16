//! The layering of `docs/architecture.md`, checked on the source: a top-level module of `src/`
//! imports only modules of layers below its own, so there are no cycles.

use std::collections::BTreeSet;
use std::path::Path;

/// Each top-level module and its layer, top (0) to bottom.
const LAYERS: &[(&str, u8)] = &[
    ("commands", 0),
    ("cli_args", 0),
    ("serve", 1),
    ("tui", 2),
    ("headless", 2),
    ("gateway", 2),
    ("channels", 2),
    ("acp", 2),
    ("present", 3),
    ("host", 4),
    ("agent", 5),
    ("tools", 6),
    ("capabilities", 7),
    ("skills", 7),
    ("jobs", 7),
    ("config", 8),
    ("memory", 9),
    ("hooks", 9),
    ("rewind", 9),
    ("user_commands", 9),
    ("llm", 10),
    ("mcp", 9),
    ("sandbox", 11),
    ("crash", 12),
    ("signals", 12),
    ("protocol", 13),
    ("text", 13),
];

fn layer(module: &str) -> Option<u8> {
    LAYERS.iter().find(|(m, _)| *m == module).map(|(_, l)| *l)
}

/// The top-level module a file of `src/` belongs to.
fn top_module(relative: &Path) -> Option<String> {
    let first = relative.components().next()?.as_os_str().to_str()?;
    Some(first.trim_end_matches(".rs").to_string())
}

/// The modules named as `crate::NAME` in the non-test part of `text`.
fn imported(text: &str) -> BTreeSet<String> {
    let code = text.split("#[cfg(test)]").next().unwrap_or(text);
    code.match_indices("crate::")
        .map(|(at, found)| {
            code[at + found.len()..]
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                .collect::<String>()
        })
        .collect()
}

fn walk(dir: &Path, files: &mut Vec<std::path::PathBuf>) {
    let entries = std::fs::read_dir(dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            walk(&path, files);
        } else if path.extension().is_some_and(|e| e == "rs") {
            files.push(path);
        }
    }
}

/// Every import edge between two top-level modules, outside tests.
fn edges() -> BTreeSet<(String, String)> {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    walk(&src, &mut files);
    let mut edges = BTreeSet::new();
    for file in files {
        let name = file.file_name().and_then(|n| n.to_str()).unwrap_or("");
        if name.ends_with("_tests.rs") || name == "tests.rs" {
            continue;
        }
        let relative = file.strip_prefix(&src).unwrap_or(&file);
        let Some(from) = top_module(relative) else {
            continue;
        };
        if from == "lib" || from == "main" {
            continue;
        }
        let text = std::fs::read_to_string(&file).unwrap_or_else(|e| panic!("{e}"));
        for to in imported(&text) {
            if to != from && layer(&to).is_some() {
                edges.insert((from.clone(), to));
            }
        }
    }
    edges
}

#[test]
fn every_top_level_module_has_a_layer() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let entries = std::fs::read_dir(&src).unwrap_or_else(|e| panic!("{e}"));
    let unplaced: Vec<String> = entries
        .flatten()
        .filter_map(|e| top_module(Path::new(&e.file_name())))
        .filter(|m| m != "lib" && m != "main" && layer(m).is_none())
        .collect();
    assert!(
        unplaced.is_empty(),
        "give these modules a layer in docs/architecture.md and here: {unplaced:?}"
    );
}

#[test]
fn modules_import_only_from_layers_below_theirs() {
    let edges = edges();
    let breaking: Vec<&(String, String)> = edges
        .iter()
        .filter(|(from, to)| layer(from).unwrap_or(0) >= layer(to).unwrap_or(0))
        .collect();
    assert!(
        breaking.is_empty(),
        "these imports go up or sideways (see docs/architecture.md): {breaking:?}"
    );
}

#[test]
fn the_protocol_imports_nothing_of_the_crate() {
    let imports: Vec<_> = edges()
        .into_iter()
        .filter(|(from, _)| from == "protocol" || from == "text")
        .collect();
    assert!(imports.is_empty(), "{imports:?}");
}
