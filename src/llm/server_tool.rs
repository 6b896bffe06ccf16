//! Tools a provider runs on its own side (Anthropic's web search). The model calls them and
//! gets their results within one response; mnemo keeps those blocks in the history exactly as
//! they came, sends them back to the same wire, and shows the call as a tool pane and the
//! cited pages as sources.

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// A block of a server tool's call or result, kept verbatim: results carry encrypted content
/// the provider must get back unchanged for later turns to cite it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ServerBlock {
    /// The wire that produced it (`anthropic`); other wires leave it out of their requests.
    pub wire: String,
    pub raw: Value,
}

/// What a server block is, read from its raw form.
#[derive(Debug, Clone, PartialEq)]
pub enum ServerPart<'a> {
    Call {
        id: &'a str,
        name: &'a str,
        input: &'a Value,
    },
    Result {
        tool_use_id: &'a str,
        /// The tool's name (`web_search` for a `web_search_tool_result`).
        name: &'a str,
        /// One line per result (title and address), or the provider's error.
        output: String,
        failed: bool,
    },
}

impl ServerBlock {
    pub fn anthropic(raw: Value) -> Self {
        Self {
            wire: "anthropic".into(),
            raw,
        }
    }

    pub fn part(&self) -> Option<ServerPart<'_>> {
        let kind = self.raw.get("type")?.as_str()?;
        let str_of = |key: &str| self.raw.get(key).and_then(Value::as_str).unwrap_or("");
        if kind == "server_tool_use" {
            return Some(ServerPart::Call {
                id: str_of("id"),
                name: str_of("name"),
                input: self.raw.get("input").unwrap_or(&Value::Null),
            });
        }
        let name = kind.strip_suffix("_tool_result")?;
        let (output, failed) = result_output(self.raw.get("content").unwrap_or(&Value::Null));
        Some(ServerPart::Result {
            tool_use_id: str_of("tool_use_id"),
            name,
            output,
            failed,
        })
    }

    /// What a transcript, a search or a count of tokens takes of it: the call's name and
    /// input, or the results' titles and addresses (never the encrypted content).
    pub fn summary(&self) -> String {
        match self.part() {
            Some(ServerPart::Call { name, input, .. }) => format!("{name} {input}"),
            Some(ServerPart::Result { output, .. }) => output,
            None => String::new(),
        }
    }
}

/// A result's content as lines: each result's title and address, or the error code.
fn result_output(content: &Value) -> (String, bool) {
    if let Some(code) = content.get("error_code").and_then(Value::as_str) {
        return (format!("the search failed: {code}"), true);
    }
    let lines: Vec<String> = content
        .as_array()
        .map(|results| {
            results
                .iter()
                .filter_map(|r| {
                    let url = r.get("url")?.as_str()?;
                    let title = r.get("title").and_then(Value::as_str).unwrap_or("");
                    Some(format!("{title} <{url}>"))
                })
                .collect()
        })
        .unwrap_or_default();
    match lines.is_empty() {
        true => ("no results".into(), false),
        false => (lines.join("\n"), false),
    }
}

/// One server tool call, finished, as the front ends show it.
#[derive(Debug, Clone, PartialEq)]
pub struct ServerToolRun {
    pub id: String,
    pub name: String,
    pub input: Value,
    /// One line per result (title and address), or the provider's error.
    pub output: String,
    pub failed: bool,
}

/// A page a reply cites.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Source {
    pub url: String,
    pub title: String,
}

/// Cited pages in order of first citation, without repeats; at most this many.
pub const MAX_SOURCES: usize = 20;

/// The sources list appended to a reply that cites pages, as markdown.
pub fn sources_text(sources: &[Source]) -> String {
    let mut text = String::from("\n\nSources:\n");
    for (n, source) in sources.iter().enumerate() {
        let title = match source.title.trim() {
            "" => source.url.as_str(),
            title => title,
        };
        text.push_str(&format!("{}. [{}]({})\n", n + 1, title, source.url));
    }
    text
}

/// Adds `source` unless listed or the list is full.
pub fn add_source(sources: &mut Vec<Source>, source: Source) {
    if source.url.is_empty()
        || sources.len() >= MAX_SOURCES
        || sources.iter().any(|s| s.url == source.url)
    {
        return;
    }
    sources.push(source);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn source(url: &str, title: &str) -> Source {
        Source {
            url: url.into(),
            title: title.into(),
        }
    }

    #[test]
    fn sources_are_listed_once_in_citation_order_with_the_address_for_a_missing_title() {
        let mut sources = Vec::new();
        add_source(&mut sources, source("https://b.example/", "B"));
        add_source(&mut sources, source("https://a.example/", ""));
        add_source(&mut sources, source("https://b.example/", "B again"));
        add_source(&mut sources, source("", "no address"));
        assert_eq!(
            sources_text(&sources),
            "\n\nSources:\n1. [B](https://b.example/)\n\
             2. [https://a.example/](https://a.example/)\n"
        );
    }

    #[test]
    fn a_search_call_and_its_results_read_as_a_pane_without_the_encrypted_content() {
        let call = ServerBlock::anthropic(serde_json::json!({
            "type": "server_tool_use", "id": "srvtoolu_1", "name": "web_search",
            "input": {"query": "rust 2024 edition"}}));
        assert_eq!(
            call.summary(),
            r#"web_search {"query":"rust 2024 edition"}"#
        );
        let result = ServerBlock::anthropic(serde_json::json!({
            "type": "web_search_tool_result", "tool_use_id": "srvtoolu_1",
            "content": [
                {"type": "web_search_result", "url": "https://doc.rust-lang.org/edition-guide/",
                 "title": "Edition Guide", "encrypted_content": "EqkCCkYI", "page_age": null},
                {"type": "web_search_result", "url": "https://blog.rust-lang.org/", "title": "Blog",
                 "encrypted_content": "Zm9v"}]}));
        let Some(ServerPart::Result {
            tool_use_id,
            name,
            output,
            failed,
        }) = result.part()
        else {
            panic!("not a result: {result:?}");
        };
        assert_eq!(
            (tool_use_id, name, failed),
            ("srvtoolu_1", "web_search", false)
        );
        assert_eq!(
            output,
            "Edition Guide <https://doc.rust-lang.org/edition-guide/>\nBlog <https://blog.rust-lang.org/>"
        );
        assert!(!result.summary().contains("EqkC"));
        let error = ServerBlock::anthropic(serde_json::json!({
            "type": "web_search_tool_result", "tool_use_id": "srvtoolu_2",
            "content": {"type": "web_search_tool_result_error", "error_code": "max_uses_exceeded"}}));
        assert!(matches!(
            error.part(),
            Some(ServerPart::Result { failed: true, .. })
        ));
        assert_eq!(error.summary(), "the search failed: max_uses_exceeded");
    }

    #[test]
    fn the_list_stops_growing_at_its_bound() {
        let mut sources = Vec::new();
        for n in 0..MAX_SOURCES + 5 {
            add_source(&mut sources, source(&format!("https://{n}.example/"), "t"));
        }
        assert_eq!(sources.len(), MAX_SOURCES);
    }
}
