//! `web_fetch`: GET one http(s) address and give the model its text, HTML turned into
//! markdown. Which hosts it may reach is the sandbox's rule for commands: a host in
//! `[sandbox] allow_domains` (or allowed for the session) is fetched at once; another is put
//! to the person (refused in read-only sessions, with the network off and nothing allowed, and
//! for sub-agents without network). Every redirect is judged again, addresses of this machine
//! and its private network are refused unless the name itself is listed, and the body, the
//! time and the text given back are bounded.

use std::net::SocketAddr;
use std::time::Duration;

use futures_util::StreamExt;
use schemars::JsonSchema;
use serde::Deserialize;

use super::web_text::{Body, describe};
use super::{ToolContext, ToolError, TypedTool};
use crate::llm::image::ImageBlock;
use crate::sandbox::ApprovalMode;
use crate::sandbox::egress::{listed_exactly, resolve_checked};

/// Bytes of a body read at most; the rest is not read.
pub const MAX_BODY: usize = 5 << 20;
/// Redirects followed at most.
const MAX_REDIRECTS: usize = 5;
/// Characters of text given back unless the call asks for fewer (or more, up to the cap).
const DEFAULT_CHARS: usize = 40_000;
const MAX_CHARS: usize = 100_000;
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);
/// The whole fetch, redirects included.
const TOTAL_TIMEOUT: Duration = Duration::from_secs(60);
/// Longest wait for the next piece of a body.
const STALL_TIMEOUT: Duration = Duration::from_secs(15);

pub struct WebFetch;

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct FetchArgs {
    /// http:// or https:// address.
    pub url: String,
    /// Most characters to return (default 40000).
    pub max_chars: Option<usize>,
}

impl TypedTool for WebFetch {
    type Args = FetchArgs;
    const NAME: &'static str = "web_fetch";
    const DESCRIPTION: &'static str = "GET a web page or file; HTML comes back as markdown. Hosts outside the allowed domains \
         need the user's approval.";
    const MUTATES: bool = false;
    const DEFERRED: bool = true;

    async fn run(&self, args: FetchArgs, ctx: &ToolContext) -> Result<String, ToolError> {
        let limit = args.max_chars.unwrap_or(DEFAULT_CHARS).clamp(1, MAX_CHARS);
        let fetched = tokio::select! {
            () = ctx.cancel.cancelled() => return Err(ToolError::Cancelled),
            fetched = tokio::time::timeout(TOTAL_TIMEOUT, fetch(&args.url, ctx)) => fetched,
        };
        let page = fetched.map_err(|_| {
            ToolError::Failed(format!(
                "fetching {} took longer than {} s",
                args.url,
                TOTAL_TIMEOUT.as_secs()
            ))
        })??;
        if let Some(image) = page.image().await {
            let text = format!(
                "{} · {} · {}\n\nan image ({}×{}); it is attached for you to see.",
                page.url, page.status, image.media_type, image.width, image.height
            );
            ctx.attach_image(image);
            return Ok(text);
        }
        Ok(page.render(limit))
    }
}

/// A fetched page: where it ended up, its status and type, and its body as read.
pub struct Page {
    pub url: reqwest::Url,
    pub status: u16,
    pub content_type: String,
    pub body: Body,
}

impl Page {
    /// The body as an image for the model, when it is a whole one that decodes (checked and
    /// scaled like any image); else it stays described.
    async fn image(&self) -> Option<ImageBlock> {
        if self.body.cut || crate::llm::image::sniff(&self.body.bytes).is_none() {
            return None;
        }
        let name = self
            .url
            .path_segments()
            .and_then(|mut s| s.next_back())
            .filter(|n| !n.is_empty())
            .unwrap_or("image")
            .to_string();
        let bytes = self.body.bytes.clone();
        tokio::task::spawn_blocking(move || ImageBlock::from_bytes(&name, &bytes).ok())
            .await
            .ok()
            .flatten()
    }

    fn render(&self, limit: usize) -> String {
        let mut text = format!(
            "{} · {} · {}\n\n",
            self.url,
            self.status,
            if self.content_type.is_empty() {
                "unknown type"
            } else {
                &self.content_type
            }
        );
        text.push_str(&describe(&self.content_type, &self.body, limit));
        text
    }
}

async fn fetch(url: &str, ctx: &ToolContext) -> Result<Page, ToolError> {
    let mut url = parse(url)?;
    for _ in 0..=MAX_REDIRECTS {
        let (host, address) = admit(&url, ctx).await?;
        let client = reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .connect_timeout(CONNECT_TIMEOUT)
            .resolve(&host, address)
            .user_agent(concat!("mnemo/", env!("CARGO_PKG_VERSION")))
            .build()
            .map_err(|e| ToolError::Failed(format!("cannot make the HTTP client: {e}")))?;
        let stall = STALL_TIMEOUT.min(ctx.timeout);
        let response = tokio::time::timeout(stall, client.get(url.clone()).send())
            .await
            .map_err(|_| {
                ToolError::Failed(format!("{url} did not answer within {} s", stall.as_secs()))
            })?
            .map_err(|e| ToolError::Failed(format!("fetching {url} failed: {e}")))?;
        let status = response.status();
        if status.is_redirection() {
            let location = response
                .headers()
                .get(reqwest::header::LOCATION)
                .and_then(|v| v.to_str().ok())
                .ok_or_else(|| {
                    ToolError::Failed(format!("{url} answered {status} without a Location"))
                })?;
            url = url
                .join(location)
                .map_err(|e| ToolError::Failed(format!("{url} redirects to `{location}`: {e}")))?;
            parse(url.as_str())?;
            continue;
        }
        let content_type = response
            .headers()
            .get(reqwest::header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .unwrap_or_default()
            .to_string();
        let body = read_body(response, stall).await?;
        return Ok(Page {
            url,
            status: status.as_u16(),
            content_type,
            body,
        });
    }
    Err(ToolError::Failed(format!(
        "more than {MAX_REDIRECTS} redirects; stopped at {url}"
    )))
}

fn parse(url: &str) -> Result<reqwest::Url, ToolError> {
    let invalid = |message: String| ToolError::InvalidArguments {
        tool: WebFetch::NAME.into(),
        message,
    };
    let parsed = reqwest::Url::parse(url.trim()).map_err(|e| invalid(format!("`{url}`: {e}")))?;
    match parsed.scheme() {
        "http" | "https" if parsed.host_str().is_some() => Ok(parsed),
        _ => Err(invalid(format!(
            "`{url}` is not an http:// or https:// address"
        ))),
    }
}

/// Whether `url`'s host may be reached now (asking the person when the rules say so), and the
/// checked address to connect to.
async fn admit(url: &reqwest::Url, ctx: &ToolContext) -> Result<(String, SocketAddr), ToolError> {
    let host = url
        .host_str()
        .unwrap_or_default()
        .trim_start_matches('[')
        .trim_end_matches(']')
        .to_ascii_lowercase();
    let port = url.port_or_known_default().unwrap_or(443);
    let approvals = &ctx.approvals;
    if !approvals.domain_allowed(&host) {
        let base = approvals.configured();
        if approvals.offline() {
            return Err(ToolError::Denied(
                "this sub-agent was started without network access".into(),
            ));
        }
        if approvals.mode() != ApprovalMode::Full {
            if base.is_sandboxed()
                && !base.network_allowed()
                && approvals.allowed_domains().is_empty()
            {
                return Err(ToolError::Denied(format!(
                    "the network is off for this session, so {host} cannot be fetched. The user \
                     can list domains in [sandbox] allow_domains or start mnemo with --network"
                )));
            }
            approvals
                .ask_domain(ctx, &host, port)
                .await
                .map_err(ToolError::Denied)?;
        }
    }
    let listed = listed_exactly(&approvals.confinement().domains, &host);
    let address = resolve_checked(&host, port, listed)
        .await
        .map_err(ToolError::Denied)?;
    Ok((host, address))
}

/// The body up to [`MAX_BODY`] bytes; a longer one is cut without reading the rest.
async fn read_body(response: reqwest::Response, stall: Duration) -> Result<Body, ToolError> {
    let declared = response.content_length();
    let mut stream = response.bytes_stream();
    let mut bytes = Vec::new();
    let mut cut = false;
    loop {
        let next = tokio::time::timeout(stall, stream.next())
            .await
            .map_err(|_| {
                ToolError::Failed(format!(
                    "the server sent nothing for {} s; {} bytes had arrived",
                    stall.as_secs(),
                    bytes.len()
                ))
            })?;
        let Some(chunk) = next else {
            break;
        };
        let chunk =
            chunk.map_err(|e| ToolError::Failed(format!("reading the body failed: {e}")))?;
        let room = MAX_BODY - bytes.len();
        if chunk.len() > room {
            bytes.extend_from_slice(&chunk[..room]);
            cut = true;
            break;
        }
        bytes.extend_from_slice(&chunk);
    }
    Ok(Body {
        bytes,
        cut,
        declared,
    })
}
