//! The catalogue: the section of the system prompt that lists every skill by name and
//! description, so the model knows what it can load. It stays within a token budget: stale
//! skills are left out, and past the budget the least used ones (pinned count as most used),
//! with a closing line saying how many more can be loaded by name.

use std::collections::HashMap;

use super::{SkillSet, SkillSource};
use crate::llm::tokens::estimate_text;
use crate::memory::skills::SkillStats;

/// Said of a repository's skill in a workspace the person has not trusted.
const UNTRUSTED_NOTE: &str = "(from this repository, not trusted yet: its description is left \
                              out; load it only if the user asks for it)";

/// Said after a skill whose last two uses failed.
pub const SUSPECT_NOTE: &str = " (suspect: its last two uses failed)";

const HEADER: &str = "## Skills\n\nProcedures written down for work like this. When a task \
                      matches one, read it first with load_skill NAME and follow it.\n\n";

/// One catalogue line and what decides whether it makes the cut.
struct Entry {
    name: String,
    line: String,
    tokens: u32,
    pinned: bool,
    loads: u64,
    last_used: i64,
}

/// The catalogue section for the system prompt within `budget_tokens`, lines by name; empty
/// when there is no skill to list (or not even the heading fits). A repository's skills are
/// marked as such; until the person trusts the workspace (`repository_trusted`) their
/// descriptions, text the repository wrote, stay out of the prompt.
pub fn catalog(
    skills: &SkillSet,
    stats: &[SkillStats],
    budget_tokens: u32,
    repository_trusted: bool,
) -> String {
    let stats: HashMap<&str, &SkillStats> = stats.iter().map(|s| (s.name.as_str(), s)).collect();
    let mut entries: Vec<Entry> = skills
        .iter()
        .filter_map(|skill| {
            let stats = stats.get(skill.name.as_str()).copied();
            if stats.is_some_and(|s| s.stale) {
                return None;
            }
            let description = one_line(&skill.description);
            let suspect = if stats.is_some_and(|s| s.suspect) {
                SUSPECT_NOTE
            } else {
                ""
            };
            let line = match (skill.source, repository_trusted) {
                (SkillSource::User, _) => format!("- {}: {description}{suspect}\n", skill.name),
                (_, true) => format!(
                    "- {} (from this repository): {description}{suspect}\n",
                    skill.name
                ),
                (_, false) => format!("- {} {UNTRUSTED_NOTE}{suspect}\n", skill.name),
            };
            Some(Entry {
                name: skill.name.clone(),
                tokens: estimate_text(&line),
                line,
                pinned: stats.is_some_and(|s| s.pinned),
                loads: stats.map_or(0, |s| s.loads),
                last_used: stats.and_then(|s| s.last_used).unwrap_or(0),
            })
        })
        .collect();
    if entries.is_empty() {
        return String::new();
    }
    let header = estimate_text(HEADER);
    let all: u32 = entries.iter().map(|e| e.tokens).sum();
    let listed = match header.saturating_add(all) <= budget_tokens {
        true => entries.len(),
        false => {
            // The most used first; the closing line's room is kept free.
            entries.sort_by(|a, b| {
                b.pinned
                    .cmp(&a.pinned)
                    .then(b.loads.cmp(&a.loads))
                    .then(b.last_used.cmp(&a.last_used))
                    .then(a.name.cmp(&b.name))
            });
            let room = budget_tokens
                .saturating_sub(header)
                .saturating_sub(estimate_text(&more_line(entries.len())));
            let mut used = 0u32;
            entries
                .iter()
                .take_while(|e| {
                    used = used.saturating_add(e.tokens);
                    used <= room
                })
                .count()
        }
    };
    // The sum of line estimates is close to the whole's; the whole decides.
    let mut listed = listed;
    loop {
        let section = render(&entries[..listed], entries.len() - listed);
        if estimate_text(&section) <= budget_tokens {
            return section;
        }
        match listed.checked_sub(1) {
            Some(fewer) => listed = fewer,
            None => return String::new(),
        }
    }
}

/// The section listing `entries` by name, and the closing line when `omitted` were left out.
fn render(entries: &[Entry], omitted: usize) -> String {
    let mut listed: Vec<&Entry> = entries.iter().collect();
    listed.sort_unstable_by(|a, b| a.name.cmp(&b.name));
    let mut section = String::from(HEADER);
    for entry in listed {
        section.push_str(&entry.line);
    }
    if omitted > 0 {
        section.push_str(&more_line(omitted));
    }
    section
}

fn more_line(omitted: usize) -> String {
    let plural = if omitted == 1 { "" } else { "s" };
    format!("({omitted} more skill{plural} not listed; load_skill NAME loads any by name)\n")
}

/// `text` on one line, runs of whitespace as one space.
fn one_line(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

#[cfg(test)]
#[path = "catalog_tests.rs"]
mod tests;
