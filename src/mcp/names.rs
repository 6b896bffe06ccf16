//! The names MCP tools are offered under: `mcp__<server>__<tool>`, made of the characters
//! every provider accepts, at most 64 long. A name that had to be cut, or that two tools would
//! share, gets a short hash of the original pair, so names stay stable across restarts.

use std::collections::BTreeMap;

use sha2::{Digest, Sha256};

pub const MAX_NAME_LEN: usize = 64;
const HASH_LEN: usize = 6;

/// The name for each `(server, tool)` pair, in the order given.
pub fn assign(pairs: &[(String, String)]) -> Vec<String> {
    let plain: Vec<String> = pairs
        .iter()
        .map(|(server, tool)| format!("mcp__{}__{}", sanitise(server), sanitise(tool)))
        .collect();
    let mut counts: BTreeMap<&str, usize> = BTreeMap::new();
    for name in &plain {
        *counts.entry(name.as_str()).or_default() += 1;
    }
    plain
        .iter()
        .zip(pairs)
        .map(|(name, (server, tool))| {
            let shared = counts.get(name.as_str()).copied().unwrap_or(0) > 1;
            if !shared && name.len() <= MAX_NAME_LEN {
                return name.clone();
            }
            let suffix = short_hash(server, tool);
            let keep = MAX_NAME_LEN - HASH_LEN - 1;
            let head: String = name.chars().take(keep).collect();
            format!("{head}_{suffix}")
        })
        .collect()
}

/// ASCII letters, digits, `_` and `-`; every other character becomes `_`.
fn sanitise(part: &str) -> String {
    part.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                c
            } else {
                '_'
            }
        })
        .collect()
}

fn short_hash(server: &str, tool: &str) -> String {
    let digest = Sha256::digest(format!("{server}\0{tool}").as_bytes());
    digest
        .iter()
        .take(HASH_LEN / 2)
        .map(|b| format!("{b:02x}"))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pairs(list: &[(&str, &str)]) -> Vec<(String, String)> {
        list.iter()
            .map(|(s, t)| (s.to_string(), t.to_string()))
            .collect()
    }

    #[test]
    fn plain_names_join_server_and_tool() {
        let names = assign(&pairs(&[("fs", "read_file"), ("every thing", "get-env")]));
        assert_eq!(names, ["mcp__fs__read_file", "mcp__every_thing__get-env"]);
    }

    #[test]
    fn colliding_names_get_distinct_hash_suffixes() {
        let names = assign(&pairs(&[("a", "x.y"), ("a", "x y")]));
        assert_ne!(names[0], names[1]);
        assert!(names.iter().all(|n| n.starts_with("mcp__a__x_y_")));
        assert!(names.iter().all(|n| n.len() <= MAX_NAME_LEN));
    }

    #[test]
    fn long_names_are_cut_to_64_with_a_stable_suffix() {
        let long = "t".repeat(100);
        let first = assign(&pairs(&[("srv", &long)]));
        let again = assign(&pairs(&[("srv", &long)]));
        assert_eq!(first, again);
        assert_eq!(first[0].len(), MAX_NAME_LEN);
    }
}
