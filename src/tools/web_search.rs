//! `web_search`: a query to the search service the person configured (`[web]`: a SearXNG
//! instance or the Brave Search API), the results as a numbered list of titles, addresses and
//! snippets for `web_fetch` to follow. Offered only when a service is configured.

use std::time::Duration;

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::Value;

use super::{ToolContext, ToolError, TypedTool};
use crate::config::web::SearchBackend;

/// Results given back at most.
const MAX_RESULTS: usize = 8;
/// Bytes of an answer read at most.
const MAX_ANSWER: usize = 2 << 20;
const TIMEOUT: Duration = Duration::from_secs(20);

pub struct WebSearch {
    pub backend: SearchBackend,
}

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SearchArgs {
    pub query: String,
}

/// One result as the model sees it.
struct Hit {
    title: String,
    url: String,
    snippet: String,
}

impl TypedTool for WebSearch {
    type Args = SearchArgs;
    const NAME: &'static str = "web_search";
    const DESCRIPTION: &'static str =
        "Search the web; gives titles, addresses and snippets (read one with web_fetch).";
    const MUTATES: bool = false;
    const DEFERRED: bool = true;

    async fn run(&self, args: SearchArgs, ctx: &ToolContext) -> Result<String, ToolError> {
        let query = args.query.trim();
        if query.is_empty() {
            return Err(ToolError::InvalidArguments {
                tool: Self::NAME.into(),
                message: "the query is empty".into(),
            });
        }
        if ctx.approvals.offline() {
            return Err(ToolError::Denied(
                "this sub-agent was started without network access".into(),
            ));
        }
        let searched = tokio::select! {
            () = ctx.cancel.cancelled() => return Err(ToolError::Cancelled),
            searched = tokio::time::timeout(TIMEOUT.min(ctx.timeout), self.search(query)) => searched,
        };
        let hits = searched.map_err(|_| {
            ToolError::Failed(format!(
                "the search took longer than {} s",
                TIMEOUT.as_secs()
            ))
        })??;
        Ok(render(query, &hits))
    }
}

impl WebSearch {
    async fn search(&self, query: &str) -> Result<Vec<Hit>, ToolError> {
        let client = reqwest::Client::builder()
            .connect_timeout(Duration::from_secs(10))
            .user_agent(concat!("mnemo/", env!("CARGO_PKG_VERSION")))
            .build()
            .map_err(|e| ToolError::Failed(format!("cannot make the HTTP client: {e}")))?;
        let (request, service) = match &self.backend {
            SearchBackend::SearXng { url } => (
                client.get(url).query(&[("q", query), ("format", "json")]),
                "SearXNG",
            ),
            SearchBackend::Brave { key_env, url } => {
                let key = std::env::var(key_env)
                    .map_err(|_| ToolError::Failed(format!("{key_env} is not set any more")))?;
                (
                    client
                        .get(url)
                        .query(&[("q", query)])
                        .header("Accept", "application/json")
                        .header("X-Subscription-Token", key),
                    "Brave Search",
                )
            }
        };
        let failed = |why: String| ToolError::Failed(format!("{service} search failed: {why}"));
        let response = request.send().await.map_err(|e| failed(e.to_string()))?;
        let status = response.status();
        let bytes = response.bytes().await.map_err(|e| failed(e.to_string()))?;
        if bytes.len() > MAX_ANSWER {
            return Err(failed(format!(
                "its answer is over {} MB",
                MAX_ANSWER >> 20
            )));
        }
        if !status.is_success() {
            let text = String::from_utf8_lossy(&bytes[..bytes.len().min(300)]).into_owned();
            return Err(failed(format!("{status}: {text}")));
        }
        let answer: Value = serde_json::from_slice(&bytes)
            .map_err(|e| failed(format!("its answer is not JSON ({e})")))?;
        Ok(match &self.backend {
            SearchBackend::SearXng { .. } => hits(&answer["results"], "content"),
            SearchBackend::Brave { .. } => hits(&answer["web"]["results"], "description"),
        })
    }
}

fn hits(results: &Value, snippet: &str) -> Vec<Hit> {
    let text = |v: &Value, key: &str| v[key].as_str().unwrap_or_default().trim().to_string();
    results
        .as_array()
        .map(Vec::as_slice)
        .unwrap_or_default()
        .iter()
        .map(|r| Hit {
            title: text(r, "title"),
            url: text(r, "url"),
            snippet: text(r, snippet),
        })
        .filter(|hit| !hit.url.is_empty())
        .take(MAX_RESULTS)
        .collect()
}

fn render(query: &str, hits: &[Hit]) -> String {
    if hits.is_empty() {
        return format!("no results for `{query}`");
    }
    let mut out = String::new();
    for (i, hit) in hits.iter().enumerate() {
        out.push_str(&format!("{}. {} — {}\n", i + 1, hit.title, hit.url));
        if !hit.snippet.is_empty() {
            let snippet: String = hit.snippet.chars().take(300).collect();
            out.push_str(&format!("   {snippet}\n"));
        }
    }
    out
}
