//! Telegram's parse mode HTML: the text a message shows and its formatting, or the error
//! Telegram answers with. Tags, attributes and nesting follow Telegram's parser; a `&` that
//! starts no entity is refused, where Telegram lets it through as text, because a stray `&`
//! means the sender's escaping is broken even when Telegram forgives it.

/// One piece of formatting: its kind (a tag's canonical name), where it covers the visible
/// text (UTF-16 units) and its attribute (a link's address, a code block's language).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entity {
    pub kind: &'static str,
    pub offset: usize,
    pub length: usize,
    pub attr: Option<String>,
}

/// Visible text and formatting of `html`, or the part of Telegram's error description after
/// "can't parse entities: ".
pub fn parse(html: &str) -> Result<(String, Vec<Entity>), String> {
    let mut text = String::new();
    let mut units = 0;
    let mut open: Vec<(&'static str, &str, usize, Option<String>)> = Vec::new();
    let mut entities = Vec::new();
    let mut i = 0;
    while i < html.len() {
        let rest = &html[i..];
        if rest.starts_with('&') {
            let (c, used) = entity(rest).ok_or_else(|| {
                format!("Character entity expected at byte offset {i}, use &amp; for a bare &")
            })?;
            text.push(c);
            units += c.len_utf16();
            i += used;
            continue;
        }
        if !rest.starts_with('<') {
            let c = rest.chars().next().unwrap_or_default();
            text.push(c);
            units += c.len_utf16();
            i += c.len_utf8();
            continue;
        }
        let end = rest
            .find('>')
            .ok_or_else(|| format!("Unclosed start tag at byte offset {i}"))?;
        let tag = &rest[1..end];
        if let Some(name) = tag.strip_prefix('/') {
            let name = name.trim_end();
            let Some((kind, opened_as, start, attr)) = open.pop() else {
                return Err(format!("Unexpected end tag at byte offset {i}"));
            };
            if !name.eq_ignore_ascii_case(opened_as) {
                return Err(format!(
                    "Unmatched end tag at byte offset {i}, expected \"</{opened_as}>\", found \"</{name}>\""
                ));
            }
            entities.push(Entity {
                kind,
                offset: start,
                length: units - start,
                attr,
            });
        } else {
            let name_end = tag
                .find(|c: char| !(c.is_ascii_alphanumeric() || c == '-'))
                .unwrap_or(tag.len());
            let name = &tag[..name_end];
            let attrs = attributes(&tag[name_end..])
                .ok_or_else(|| format!("Bad attributes of tag \"{name}\" at byte offset {i}"))?;
            let (kind, attr) =
                start_tag(name, &attrs).map_err(|e| format!("{e} at byte offset {i}"))?;
            open.push((kind, name, units, attr));
        }
        i += end + 1;
    }
    if let Some((_, name, ..)) = open.last() {
        return Err(format!(
            "Can't find end tag corresponding to start tag \"{name}\""
        ));
    }
    entities.sort_by_key(|e| (e.offset, std::cmp::Reverse(e.length)));
    Ok((text, entities))
}

/// The formatting a start tag opens, or why Telegram refuses it.
fn start_tag(
    name: &str,
    attrs: &[(String, String)],
) -> Result<(&'static str, Option<String>), String> {
    let attr = |key: &str| attrs.iter().find(|(k, _)| k == key).map(|(_, v)| v.clone());
    let kind = match name.to_ascii_lowercase().as_str() {
        "b" | "strong" => "bold",
        "i" | "em" => "italic",
        "u" | "ins" => "underline",
        "s" | "strike" | "del" => "strikethrough",
        "tg-spoiler" => "spoiler",
        "span" if attr("class").as_deref() == Some("tg-spoiler") => "spoiler",
        "span" => return Err("Tag \"span\" must have class \"tg-spoiler\"".into()),
        "blockquote" => "blockquote",
        "pre" => "pre",
        "code" => {
            let language =
                attr("class").and_then(|c| c.strip_prefix("language-").map(str::to_string));
            return Ok(("code", language));
        }
        "a" => return Ok(("text_link", attr("href"))),
        _ => return Err(format!("Unsupported start tag \"{name}\"")),
    };
    Ok((kind, None))
}

/// `name="value"` pairs (quoted either way or bare), with entities decoded in values.
fn attributes(mut rest: &str) -> Option<Vec<(String, String)>> {
    let mut attrs = Vec::new();
    loop {
        rest = rest.trim_start();
        if rest.is_empty() || rest == "/" {
            return Some(attrs);
        }
        let eq = rest.find('=')?;
        let key = rest[..eq].trim().to_ascii_lowercase();
        rest = rest[eq + 1..].trim_start();
        let (raw, after) = match rest.chars().next()? {
            q @ ('"' | '\'') => {
                let close = rest[1..].find(q)? + 1;
                (&rest[1..close], &rest[close + 1..])
            }
            _ => {
                let end = rest.find(char::is_whitespace).unwrap_or(rest.len());
                (&rest[..end], &rest[end..])
            }
        };
        attrs.push((key, decode(raw)?));
        rest = after;
    }
}

fn decode(raw: &str) -> Option<String> {
    let mut out = String::new();
    let mut i = 0;
    while i < raw.len() {
        let rest = &raw[i..];
        if rest.starts_with('&') {
            let (c, used) = entity(rest)?;
            out.push(c);
            i += used;
        } else {
            let c = rest.chars().next()?;
            out.push(c);
            i += c.len_utf8();
        }
    }
    Some(out)
}

/// The character an entity at the start of `text` stands for, and its length in bytes.
fn entity(text: &str) -> Option<(char, usize)> {
    let end = text.find(';')?;
    let name = &text[1..end];
    let c = match name {
        "lt" => '<',
        "gt" => '>',
        "amp" => '&',
        "quot" => '"',
        _ => {
            let number = name.strip_prefix('#')?;
            let code = match number.strip_prefix(['x', 'X']) {
                Some(hex) => u32::from_str_radix(hex, 16).ok()?,
                None => number.parse().ok()?,
            };
            char::from_u32(code)?
        }
    };
    Some((c, end + 1))
}
