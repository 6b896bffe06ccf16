//! `[web]`: where the `web_search` tool sends its queries. Nothing configured, no search tool.

use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct WebConfig {
    /// A SearXNG instance's search address with its JSON format on
    /// (`https://searx.example/search`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub searxng_url: Option<String>,
    /// The environment variable holding a Brave Search API key.
    pub brave_key_env: String,
    /// The Brave Search API's address (another for a compatible service).
    pub brave_url: String,
    /// Whether a provider's own web search (Anthropic's) is offered when no search endpoint
    /// above is configured.
    pub server_search: bool,
}

impl Default for WebConfig {
    fn default() -> Self {
        Self {
            searxng_url: None,
            brave_key_env: "BRAVE_API_KEY".into(),
            brave_url: "https://api.search.brave.com/res/v1/web/search".into(),
            server_search: true,
        }
    }
}

/// Where searches go.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SearchBackend {
    SearXng {
        url: String,
    },
    /// The key stays in its variable, read at each search.
    Brave {
        key_env: String,
        url: String,
    },
}

impl WebConfig {
    /// The configured backend: SearXNG when its address is set, else Brave when its key
    /// variable is set; `None` turns web search off.
    pub fn search_backend(&self) -> Option<SearchBackend> {
        if let Some(url) = self.searxng_url.as_ref().filter(|u| !u.trim().is_empty()) {
            return Some(SearchBackend::SearXng {
                url: url.trim().to_string(),
            });
        }
        let key_set = std::env::var_os(&self.brave_key_env).is_some_and(|v| !v.is_empty());
        key_set.then(|| SearchBackend::Brave {
            key_env: self.brave_key_env.clone(),
            url: self.brave_url.clone(),
        })
    }

    /// What `mnemo doctor` says of web search.
    pub fn describe(&self) -> String {
        match self.search_backend() {
            Some(SearchBackend::SearXng { url }) => format!("web search through SearXNG at {url}"),
            Some(SearchBackend::Brave { key_env, .. }) => {
                format!("web search through the Brave Search API (key in {key_env})")
            }
            None if self.server_search => format!(
                "web search through Anthropic models' own search tool; for other models set \
                 [web] searxng_url to a SearXNG instance, or put a Brave Search API key in {}",
                self.brave_key_env
            ),
            None => format!(
                "web search is off: set [web] searxng_url to a SearXNG instance, or put a Brave \
                 Search API key in {} (or [web] server_search = true for Anthropic's own)",
                self.brave_key_env
            ),
        }
    }
}
