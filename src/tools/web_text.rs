//! What a fetched body becomes for the model: HTML as markdown (the only module that names
//! htmd's types), text as it is, anything else described by its type and size. The text is cut
//! to the characters the call allows, saying so.

/// A body as read: at most `web_fetch::MAX_BODY` bytes.
pub struct Body {
    pub bytes: Vec<u8>,
    /// Whether more followed that was not read.
    pub cut: bool,
    /// The length the server declared, if it did.
    pub declared: Option<u64>,
}

/// Tags whose content is no reading matter.
const SKIPPED_TAGS: &[&str] = &[
    "script", "style", "noscript", "template", "svg", "iframe", "head",
];

/// The text the model gets for a body of `content_type`, at most `limit` characters.
pub fn describe(content_type: &str, body: &Body, limit: usize) -> String {
    let kind = content_type
        .split(';')
        .next()
        .unwrap_or_default()
        .trim()
        .to_ascii_lowercase();
    let mut notes = Vec::new();
    if body.cut {
        notes.push(match body.declared {
            Some(total) => format!(
                "[the body was cut after {} of its {}: the rest was not read]",
                size(body.bytes.len() as u64),
                size(total)
            ),
            None => format!(
                "[the body was cut after {}: the rest was not read]",
                size(body.bytes.len() as u64)
            ),
        });
    }
    let text = match kind.as_str() {
        "text/html" | "application/xhtml+xml" => markdown(&String::from_utf8_lossy(&body.bytes)),
        _ if is_text(&kind) => String::from_utf8_lossy(&body.bytes).into_owned(),
        _ => {
            let shown = if kind.is_empty() {
                "an unknown type"
            } else {
                &kind
            };
            notes.push(format!(
                "[binary content ({shown}, {}): not shown]",
                size(body.bytes.len() as u64)
            ));
            String::new()
        }
    };
    let mut out = cut_chars(&text, limit);
    for note in notes {
        if !out.is_empty() {
            out.push('\n');
        }
        out.push_str(&note);
    }
    out
}

fn is_text(kind: &str) -> bool {
    kind.starts_with("text/")
        || kind.ends_with("+json")
        || kind.ends_with("+xml")
        || matches!(
            kind,
            "application/json"
                | "application/xml"
                | "application/javascript"
                | "application/x-yaml"
                | "application/yaml"
                | "application/toml"
        )
}

fn markdown(html: &str) -> String {
    let converter = htmd::HtmlToMarkdown::builder()
        .skip_tags(SKIPPED_TAGS.to_vec())
        .build();
    match converter.convert(html) {
        Ok(markdown) => markdown.trim().to_string(),
        Err(err) => format!("[the HTML could not be turned into markdown: {err}]"),
    }
}

/// `text` whole when it fits `limit` characters, else its start and a note saying where.
fn cut_chars(text: &str, limit: usize) -> String {
    let total = text.chars().count();
    if total <= limit {
        return text.to_string();
    }
    let kept: String = text.chars().take(limit).collect();
    format!(
        "{kept}\n[cut at {limit} of {total} characters; ask with a larger max_chars (up to \
         100000) for more]"
    )
}

fn size(bytes: u64) -> String {
    match bytes {
        b if b >= 1 << 20 => format!("{:.1} MB", b as f64 / f64::from(1 << 20)),
        b if b >= 1 << 10 => format!("{:.1} KB", b as f64 / 1024.0),
        b => format!("{b} bytes"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn body(text: &str) -> Body {
        Body {
            bytes: text.as_bytes().to_vec(),
            cut: false,
            declared: None,
        }
    }

    #[test]
    fn html_becomes_markdown_without_scripts_or_styles() {
        let html = "<html><head><title>T</title><style>p{}</style></head><body>\
                    <h1>Install</h1><p>Run <code>make</code> then <a href=\"/next\">go on</a>.</p>\
                    <script>alert(1)</script><ul><li>one</li><li>two</li></ul></body></html>";
        let text = describe("text/html; charset=utf-8", &body(html), 1000);
        assert!(text.starts_with("# Install"), "{text}");
        assert!(text.contains("Run `make` then [go on](/next)."), "{text}");
        assert!(text.contains("*   one") || text.contains("- one"), "{text}");
        assert!(!text.contains("alert") && !text.contains("p{}"), "{text}");
    }

    #[test]
    fn text_is_cut_to_the_limit_and_binaries_are_described() {
        let long = "x".repeat(50);
        let text = describe("text/plain", &body(&long), 10);
        assert!(
            text.starts_with("xxxxxxxxxx\n[cut at 10 of 50 characters"),
            "{text}"
        );
        let png = describe("image/png", &body("\u{89}PNG...."), 100);
        assert_eq!(png, "[binary content (image/png, 9 bytes): not shown]");
        let json = describe("application/json", &body("{\"a\":1}"), 100);
        assert_eq!(json, "{\"a\":1}");
        let cut = Body {
            bytes: vec![b'a'; 2048],
            cut: true,
            declared: Some(50 << 20),
        };
        let text = describe("text/plain", &cut, 100_000);
        assert!(
            text.ends_with("[the body was cut after 2.0 KB of its 50.0 MB: the rest was not read]"),
            "{text}"
        );
    }
}
