//! Reading and writing `SKILL.md`: YAML frontmatter between `---` lines, then the markdown
//! body. The checks are the Agent Skills specification's: `name` is 1–64 lowercase letters,
//! digits and single hyphens (not first or last) and equals the folder's name; `description`
//! is 1–1024 characters; `compatibility` at most 500. `allowed-tools` may be the spec's
//! space-separated string or a list; `metadata` is a map (the spec wants strings; other
//! values are kept as they are). Unknown fields are ignored, as other clients add their own.
//! A plain value holding `: ` (invalid YAML, common in hand-written skills) is read leniently,
//! as the text it plainly is.
//! The only module that names the YAML crate's types.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::{SKILL_FILE, SkillError};

const MAX_NAME_CHARS: usize = 64;
const MAX_DESCRIPTION_CHARS: usize = 1024;
const MAX_COMPATIBILITY_CHARS: usize = 500;
const DELIMITER: &str = "---";

/// The content of one `SKILL.md`.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ParsedSkill {
    pub name: String,
    pub description: String,
    pub body: String,
    pub license: Option<String>,
    pub compatibility: Option<String>,
    pub allowed_tools: Vec<String>,
    pub metadata: Map<String, Value>,
}

#[derive(Deserialize)]
#[serde(rename_all = "kebab-case")]
struct Frontmatter {
    name: Option<String>,
    description: Option<String>,
    license: Option<String>,
    compatibility: Option<String>,
    allowed_tools: Option<AllowedTools>,
    metadata: Option<Map<String, Value>>,
}

#[derive(Deserialize)]
#[serde(untagged)]
enum AllowedTools {
    Spaced(String),
    List(Vec<String>),
}

/// What `write_skill` puts in the frontmatter.
#[derive(Serialize)]
struct NewFrontmatter<'a> {
    name: &'a str,
    description: &'a str,
    #[serde(skip_serializing_if = "Map::is_empty")]
    metadata: &'a Map<String, Value>,
}

/// `yaml` with each top-level plain scalar that holds `: ` single-quoted, or `None` when there
/// is none to quote.
fn quote_plain_values(yaml: &str) -> Option<String> {
    let mut changed = false;
    let lines: Vec<String> = yaml
        .lines()
        .map(|line| {
            let Some((key, value)) = line.split_once(": ") else {
                return line.to_string();
            };
            let value = value.trim();
            let plain = !key.starts_with([' ', '\t', '-', '#'])
                && !key.contains(['"', '\''])
                && !value.starts_with(['"', '\'', '[', '{', '|', '>', '&', '*', '!'])
                && value.contains(": ");
            if !plain {
                return line.to_string();
            }
            changed = true;
            format!("{key}: '{}'", value.replace('\'', "''"))
        })
        .collect();
    changed.then(|| lines.join("\n"))
}

fn invalid(folder: &str, problem: impl Into<String>) -> SkillError {
    SkillError::Invalid {
        file: PathBuf::from(folder).join(SKILL_FILE),
        problem: problem.into(),
    }
}

/// Parses one `SKILL.md` whose folder is named `folder`. Errors name `<folder>/SKILL.md`;
/// callers that know the whole path put it in with `SkillError::in_file`.
pub fn parse(text: &str, folder: &str) -> Result<ParsedSkill, SkillError> {
    let (yaml, body) = split(text).ok_or_else(|| {
        invalid(
            folder,
            "it does not start with YAML frontmatter between `---` lines",
        )
    })?;
    if yaml.trim().is_empty() {
        return Err(invalid(
            folder,
            "the frontmatter is empty; it needs `name` and `description`",
        ));
    }
    let front: Frontmatter = serde_yaml_ng::from_str(yaml)
        .or_else(|strict| {
            // Skills written by hand often say `description: Use when: …` unquoted, which
            // strict YAML refuses; such a value is read as the text it plainly is.
            let lenient = quote_plain_values(yaml).ok_or(strict)?;
            serde_yaml_ng::from_str(&lenient)
        })
        .map_err(|e| invalid(folder, format!("the frontmatter is not valid: {e}")))?;
    let name = front
        .name
        .ok_or_else(|| invalid(folder, "the frontmatter has no `name`"))?;
    // A folded or literal block (`>`, `|`) ends with a newline that means nothing here.
    let description = front
        .description
        .ok_or_else(|| invalid(folder, "the frontmatter has no `description`"))?
        .trim()
        .to_owned();
    validate_name(&name).map_err(|problem| invalid(folder, problem))?;
    if name != folder {
        return Err(invalid(
            folder,
            format!("the name `{name}` does not match its folder `{folder}`"),
        ));
    }
    validate_description(&description).map_err(|problem| invalid(folder, problem))?;
    if let Some(compatibility) = &front.compatibility {
        let chars = compatibility.chars().count();
        if chars == 0 || chars > MAX_COMPATIBILITY_CHARS {
            return Err(invalid(
                folder,
                format!(
                    "`compatibility` has {chars} characters; it must have 1 to \
                     {MAX_COMPATIBILITY_CHARS}"
                ),
            ));
        }
    }
    let allowed_tools = match front.allowed_tools {
        None => Vec::new(),
        Some(AllowedTools::Spaced(text)) => text.split_whitespace().map(str::to_owned).collect(),
        Some(AllowedTools::List(list)) => list,
    };
    Ok(ParsedSkill {
        name,
        description,
        body: body.trim_start_matches(['\r', '\n']).to_owned(),
        license: front.license,
        compatibility: front.compatibility,
        allowed_tools,
        metadata: front.metadata.unwrap_or_default(),
    })
}

/// The frontmatter and the body of `text`, or `None` when it has no frontmatter.
fn split(text: &str) -> Option<(&str, &str)> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let mut lines = text.split_inclusive('\n');
    let first = lines.next()?;
    if first.trim_end() != DELIMITER {
        return None;
    }
    let start = first.len();
    let mut at = start;
    for line in lines {
        if line.trim_end() == DELIMITER {
            return Some((&text[start..at], &text[at + line.len()..]));
        }
        at += line.len();
    }
    None
}

/// `Ok` for a name the specification allows, else what is wrong with it.
pub fn validate_name(name: &str) -> Result<(), String> {
    let chars = name.chars().count();
    if chars == 0 || chars > MAX_NAME_CHARS {
        return Err(format!(
            "the name has {chars} characters; it must have 1 to {MAX_NAME_CHARS}"
        ));
    }
    if let Some(bad) = name
        .chars()
        .find(|c| !(c.is_ascii_lowercase() || c.is_ascii_digit() || *c == '-'))
    {
        return Err(format!(
            "the name `{name}` contains {bad:?}; use lowercase letters, digits and `-`"
        ));
    }
    if name.starts_with('-') || name.ends_with('-') || name.contains("--") {
        return Err(format!(
            "the name `{name}` must not start or end with `-` or contain `--`"
        ));
    }
    Ok(())
}

/// `Ok` for a description of 1 to 1024 characters, else what is wrong with it.
pub fn validate_description(description: &str) -> Result<(), String> {
    let chars = description.chars().count();
    if description.trim().is_empty() || chars > MAX_DESCRIPTION_CHARS {
        return Err(format!(
            "the description has {chars} characters; it must have 1 to \
             {MAX_DESCRIPTION_CHARS} (say what the skill does and when to use it)"
        ));
    }
    Ok(())
}

/// A new `SKILL.md`: frontmatter with `name`, `description` and `metadata` (when not empty),
/// then `body`.
pub(super) fn render(
    name: &str,
    description: &str,
    body: &str,
    metadata: &Map<String, Value>,
) -> Result<String, SkillError> {
    let front = NewFrontmatter {
        name,
        description,
        metadata,
    };
    let yaml = serde_yaml_ng::to_string(&front)
        .map_err(|e| invalid(name, format!("cannot write the frontmatter: {e}")))?;
    Ok(format!(
        "{DELIMITER}\n{yaml}{DELIMITER}\n\n{}\n",
        body.trim_matches(['\r', '\n'])
    ))
}

#[cfg(test)]
#[path = "parse_tests.rs"]
mod tests;
