use proptest::prelude::*;

use super::{Chunk, MESSAGE_LIMIT, escape_html, render, utf16_len};

/// The one message a short reply becomes.
fn html(markdown: &str) -> String {
    let chunks = render(markdown, MESSAGE_LIMIT);
    assert_eq!(chunks.len(), 1, "{markdown:?} gave {chunks:?}");
    chunks.into_iter().map(|c| c.html).collect()
}

/// What Telegram shows for `html`: the tags dropped, the entities decoded.
fn visible(html: &str) -> String {
    let mut out = String::new();
    let mut in_tag = false;
    for c in html.chars() {
        match c {
            '<' => in_tag = true,
            '>' if in_tag => in_tag = false,
            c if !in_tag => out.push(c),
            _ => {}
        }
    }
    out.replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&quot;", "\"")
        .replace("&amp;", "&")
}

/// Checks `html` the way Telegram's parser does, for the tags the renderer may write: known
/// tags and attributes only, nested and closed, every `&` an entity, no bare `<`.
fn check_html(html: &str) -> Result<(), String> {
    let mut open: Vec<&str> = Vec::new();
    let mut rest = html;
    while let Some(i) = rest.find(['<', '&']) {
        let tail = &rest[i..];
        if tail.starts_with('&') {
            rest = &tail[check_entity(tail)?..];
            continue;
        }
        let end = tail
            .find('>')
            .ok_or_else(|| format!("unclosed tag in {html:?}"))?;
        let inner = &tail[1..end];
        rest = &tail[end + 1..];
        if let Some(name) = inner.strip_prefix('/') {
            match open.pop() {
                Some(top) if top == name => continue,
                top => return Err(format!("</{name}> closes {top:?} in {html:?}")),
            }
        }
        let (name, attrs) = inner.split_once(' ').unwrap_or((inner, ""));
        let quoted = |prefix: &str| {
            attrs
                .strip_prefix(prefix)
                .and_then(|v| v.strip_suffix('"'))
                .filter(|v| !v.contains('"'))
        };
        let ok = match name {
            "b" | "i" | "s" | "u" | "pre" | "blockquote" => attrs.is_empty(),
            "code" => attrs.is_empty() || quoted("class=\"language-").is_some(),
            "a" => quoted("href=\"").is_some_and(|href| check_text(href).is_ok()),
            _ => false,
        };
        if !ok {
            return Err(format!("tag <{inner}> not allowed in {html:?}"));
        }
        open.push(name);
    }
    match open.last() {
        Some(tag) => Err(format!("<{tag}> left open in {html:?}")),
        None => Ok(()),
    }
}

/// Where the entity at the start of `text` ends.
fn check_entity(text: &str) -> Result<usize, String> {
    let end = text.find(';').ok_or("a bare &")?;
    match &text[1..end] {
        "lt" | "gt" | "amp" | "quot" => Ok(end + 1),
        name => Err(format!("unknown entity &{name};")),
    }
}

fn check_text(text: &str) -> Result<(), String> {
    let mut rest = text;
    while let Some(i) = rest.find(['<', '>', '&']) {
        if !rest[i..].starts_with('&') {
            return Err(format!("raw markup in {text:?}"));
        }
        rest = &rest[i + check_entity(&rest[i..])?..];
    }
    Ok(())
}

fn without_space(text: &str) -> String {
    text.chars().filter(|c| !c.is_whitespace()).collect()
}

/// Everything a user must be able to rely on for the messages of one reply.
fn check_chunks(markdown: &str, chunks: &[Chunk], limit: usize) -> Result<(), String> {
    for chunk in chunks {
        if utf16_len(&chunk.html) > limit || utf16_len(&chunk.plain) > limit {
            return Err(format!("over {limit}: {chunk:?}"));
        }
        check_html(&chunk.html)?;
        if visible(&chunk.html) != chunk.plain {
            return Err(format!("plain is not the visible text: {chunk:?}"));
        }
        if chunk.plain.trim().is_empty() {
            return Err(format!("an empty message: {chunk:?}"));
        }
    }
    let whole: String = render(markdown, usize::MAX)
        .iter()
        .map(|c| c.plain.as_str())
        .collect();
    let parts: String = chunks.iter().map(|c| c.plain.as_str()).collect();
    if without_space(&whole) != without_space(&parts) {
        return Err(format!("text lost: {whole:?} became {parts:?}"));
    }
    Ok(())
}

#[test]
fn inline_formatting_becomes_telegram_tags() {
    assert_eq!(
        html("**bold**, *italic*, `code` and ~~gone~~"),
        "<b>bold</b>, <i>italic</i>, <code>code</code> and <s>gone</s>"
    );
}

#[test]
fn headings_are_bold_lines_and_paragraphs_one_blank_line_apart() {
    assert_eq!(
        html("# Plan\nFirst line\nsecond line\n\n## Next\n\nDone."),
        "<b>Plan</b>\n\nFirst line\nsecond line\n\n<b>Next</b>\n\nDone."
    );
}

#[test]
fn lists_get_bullets_numbers_and_indented_nesting() {
    assert_eq!(
        html("- apples\n- pears\n  - green\n  - red\n\n3. three\n4. four"),
        "• apples\n• pears\n  • green\n  • red\n\n3. three\n4. four"
    );
}

#[test]
fn quotes_are_blockquotes_and_nested_quotes_are_flattened() {
    assert_eq!(
        html("> said\n> twice\n>\n> > inner"),
        "<blockquote>said\ntwice\n\ninner</blockquote>"
    );
}

#[test]
fn code_blocks_keep_their_language_and_text_verbatim() {
    assert_eq!(
        html("Run:\n\n```rust\nif a < b && c > d {\n    go();\n}\n```\n\n```\nplain\n```"),
        "Run:\n\n<pre><code class=\"language-rust\">if a &lt; b &amp;&amp; c &gt; d {\n    go();\n}</code></pre>\n\n<pre>plain</pre>"
    );
}

#[test]
fn text_is_escaped_and_html_in_the_markdown_is_shown_as_text() {
    assert_eq!(html("a < b && c > d"), "a &lt; b &amp;&amp; c &gt; d");
    assert_eq!(
        html("<script>alert(1)</script>"),
        "&lt;script&gt;alert(1)&lt;/script&gt;"
    );
    assert_eq!(html("press <b>here</b>"), "press &lt;b&gt;here&lt;/b&gt;");
    assert_eq!(escape_html("<i>&"), "&lt;i&gt;&amp;");
}

#[test]
fn links_escape_their_address_and_only_safe_schemes_link() {
    assert_eq!(
        html("[docs](https://e.com/?q=\"a\"&b=<c>)"),
        "<a href=\"https://e.com/?q=&quot;a&quot;&amp;b=&lt;c&gt;\">docs</a>"
    );
    assert_eq!(html("[run](javascript:alert(1))"), "run");
    assert_eq!(
        html("<https://e.com> or <ada@e.com>"),
        "<a href=\"https://e.com\">https://e.com</a> or <a href=\"mailto:ada@e.com\">ada@e.com</a>"
    );
    assert_eq!(
        html("![a cat](https://e.com/cat.png)"),
        "<a href=\"https://e.com/cat.png\">a cat</a>"
    );
    // Telegram takes no code inside a link.
    assert_eq!(
        html("[`main`](tg://resolve?domain=x)"),
        "<a href=\"tg://resolve?domain=x\">main</a>"
    );
}

#[test]
fn tables_are_aligned_rows_in_pre_and_rules_a_line() {
    assert_eq!(
        html("| name | n |\n|---|--:|\n| ada | 12 |\n| bo | 3 |\n\n---\n\nend"),
        "<pre>name |  n\n-----+---\nada  | 12\nbo   |  3</pre>\n\n———\n\nend"
    );
}

#[test]
fn a_reply_without_visible_text_gives_no_message() {
    assert_eq!(render("", MESSAGE_LIMIT), Vec::new());
    assert_eq!(render("  \n\n```\n```\n", MESSAGE_LIMIT), Vec::new());
}

#[test]
fn a_long_reply_splits_inside_a_code_block_and_reopens_it() -> Result<(), String> {
    let mut markdown = String::from("Setup:\n\n```sh\nmake all\n```\n\n");
    markdown.push_str(&"Some words about the change. ".repeat(40));
    markdown.push_str("\n\n```python\n");
    for n in 0..130 {
        markdown.push_str(&format!("    value_{n:03} = compute({n}, 'x' * 10)\n"));
    }
    markdown.push_str("```\n\nThat is all.");
    assert!(markdown.chars().count() > 6_000, "{}", markdown.len());

    let chunks = render(&markdown, MESSAGE_LIMIT);
    check_chunks(&markdown, &chunks, MESSAGE_LIMIT)?;
    assert_eq!(chunks.len(), 2);
    assert!(
        chunks[0].html.ends_with(")</code></pre>"),
        "the first message ends on a whole code line: {:?}",
        &chunks[0].html[chunks[0].html.len() - 60..]
    );
    assert!(
        chunks[1]
            .html
            .starts_with("<pre><code class=\"language-python\">    value_"),
        "the second message reopens the block at a line, indentation kept: {:?}",
        &chunks[1].html[..60]
    );
    assert!(chunks[1].html.ends_with("</code></pre>\n\nThat is all."));
    Ok(())
}

#[test]
fn a_split_between_blocks_is_preferred_to_one_in_a_paragraph() -> Result<(), String> {
    let paragraph = "word ".repeat(30);
    let markdown = format!("{paragraph}\n\n{paragraph}\n\n{paragraph}");
    let chunks = render(&markdown, 400);
    check_chunks(&markdown, &chunks, 400)?;
    let texts: Vec<&str> = chunks.iter().map(|c| c.plain.as_str()).collect();
    let two = format!("{}\n\n{}", paragraph.trim_end(), paragraph.trim_end());
    assert_eq!(texts, [two.as_str(), paragraph.trim_end()]);
    Ok(())
}

#[test]
fn emoji_and_escapes_are_never_cut_in_half() -> Result<(), String> {
    for markdown in [
        "a😀😀😀😀😀😀😀😀😀😀😀😀😀😀😀😀😀😀😀😀😀😀😀😀",
        "x&&&&&&&&&&&&<<<<<<<<<>>>>>",
    ] {
        for limit in 32..40 {
            let chunks = render(markdown, limit);
            assert!(chunks.len() > 1, "{markdown} at {limit}");
            check_chunks(markdown, &chunks, limit)?;
        }
    }
    Ok(())
}

#[test]
fn formatting_open_at_a_split_is_closed_and_reopened() -> Result<(), String> {
    let markdown = format!("> **{}**", "bold words ".repeat(20).trim_end());
    let chunks = render(&markdown, 80);
    check_chunks(&markdown, &chunks, 80)?;
    assert!(chunks.len() > 2);
    for chunk in &chunks {
        assert!(
            chunk.html.starts_with("<blockquote><b>") && chunk.html.ends_with("</b></blockquote>"),
            "{chunk:?}"
        );
    }
    Ok(())
}

/// Pieces of markdown that interact: emphasis, code, links, lists, quotes, tables, html.
fn markdown_piece() -> impl Strategy<Value = String> {
    const PIECES: &[&str] = &[
        "*",
        "**",
        "_",
        "~~",
        "`",
        "```",
        "```rust\n",
        "[",
        "](",
        ")",
        "https://e.com/?a=\"&b",
        "<",
        ">",
        "&",
        "&amp;",
        "#",
        "# ",
        "\n",
        "\n\n",
        "- ",
        "1. ",
        "> ",
        "|",
        "| a | b |\n|--|--|\n",
        "---",
        "😀",
        "é",
        "word",
        " ",
        "  ",
        "<b>",
        "\t",
        "\\",
        "![i](https://e.com/i.png)",
    ];
    prop_oneof![
        prop::sample::select(PIECES).prop_map(str::to_string),
        "[a-z😀 ]{1,12}",
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(400))]

    #[test]
    fn every_reply_splits_into_valid_messages_that_keep_its_text(
        pieces in prop::collection::vec(markdown_piece(), 0..120),
        limit in 32usize..300,
    ) {
        let markdown = pieces.concat();
        let chunks = render(&markdown, limit);
        prop_assert!(check_chunks(&markdown, &chunks, limit).is_ok(), "{:?}", check_chunks(&markdown, &chunks, limit));
    }

    #[test]
    fn arbitrary_text_renders_to_valid_messages(text in "\\PC{0,400}", limit in 32usize..500) {
        let chunks = render(&text, limit);
        prop_assert!(check_chunks(&text, &chunks, limit).is_ok(), "{:?}", check_chunks(&text, &chunks, limit));
    }
}
