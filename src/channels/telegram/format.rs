//! The agent's markdown as Telegram messages in HTML parse mode. HTML needs only `<`, `>` and
//! `&` escaped (and `"` in attributes), so any reply can be sent intact, where MarkdownV2
//! rejects a message over one stray punctuation mark. Long replies are cut into messages
//! within Telegram's limit, each with its tags closed and reopened in the next.

mod layout;
mod split;

#[cfg(test)]
mod tests;

/// Telegram's limit on a message's text, in UTF-16 code units.
pub const MESSAGE_LIMIT: usize = 4096;

/// Limits below this are raised to it: a message must have room for the tags it reopens.
pub const MIN_LIMIT: usize = 32;

/// One Telegram message: `html` to send with parse mode HTML, `plain` the same text without
/// formatting, to send when Telegram refuses the HTML.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Chunk {
    pub html: String,
    pub plain: String,
}

/// Renders `markdown` as messages of at most `limit` UTF-16 code units each (Telegram's unit),
/// both `html` and `plain`. A reply with no visible text gives no message.
pub fn render(markdown: &str, limit: usize) -> Vec<Chunk> {
    let limit = limit.max(MIN_LIMIT);
    // Half the message at most goes to tags open at once, so every message has room for text.
    let rendered = layout::layout(markdown, limit / 2);
    split::split(&rendered, limit)
}

/// `text` made safe to send in parse mode HTML, shown exactly as written.
pub fn escape_html(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        push_escaped(&mut out, c);
    }
    out
}

/// A reply laid out for Telegram: tags and visible characters, before it is cut into messages.
#[derive(Debug, Default)]
struct Rendered {
    atoms: Vec<Atom>,
    tags: Vec<TagDef>,
}

/// One step of a rendered reply.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Atom {
    /// Opens `tags[i]`.
    Open(usize),
    /// Closes the innermost open tag.
    Close,
    /// One visible character, escaped when written.
    Char(char),
}

#[derive(Debug)]
struct TagDef {
    open: String,
    close: &'static str,
    /// Code blocks keep their indentation at the start of a message.
    preformatted: bool,
}

impl TagDef {
    /// What the tag adds to a message, opening and closing, in UTF-16 code units.
    fn cost(&self) -> usize {
        utf16_len(&self.open) + utf16_len(self.close)
    }
}

fn utf16_len(s: &str) -> usize {
    s.encode_utf16().count()
}

fn push_escaped(out: &mut String, c: char) {
    match c {
        '&' => out.push_str("&amp;"),
        '<' => out.push_str("&lt;"),
        '>' => out.push_str("&gt;"),
        c => out.push(c),
    }
}

fn escaped_len(c: char) -> usize {
    match c {
        '&' => 5,
        '<' | '>' => 4,
        c => c.len_utf16(),
    }
}

/// `value` escaped for a double-quoted attribute.
fn escape_attr(value: &str) -> String {
    escape_html(value).replace('"', "&quot;")
}
