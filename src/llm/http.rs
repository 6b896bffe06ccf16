//! HTTP plumbing shared by the wire providers: one client, the POST that opens a stream,
//! and the mapping of HTTP failures to typed errors.

use std::collections::{HashMap, VecDeque};
use std::sync::{LazyLock, Mutex, PoisonError};
use std::time::Duration;

use futures_util::StreamExt;
use reqwest::header::{HeaderMap, HeaderValue};

use super::error::ProviderError;
use super::sse::SseParser;
use super::types::StreamEvent;
use super::{EventStream, Timeouts, WireDecoder};

/// The process's HTTP client for a connect timeout: one connection pool and TLS setup for
/// every provider (clones share it). A process uses one timeout, so one client in practice.
pub fn client(connect_timeout: Duration) -> reqwest::Client {
    static CLIENTS: LazyLock<Mutex<HashMap<Duration, reqwest::Client>>> =
        LazyLock::new(Mutex::default);
    let mut clients = CLIENTS.lock().unwrap_or_else(PoisonError::into_inner);
    clients
        .entry(connect_timeout)
        .or_insert_with(|| {
            reqwest::Client::builder()
                .connect_timeout(connect_timeout)
                .build()
                .unwrap_or_else(|_| reqwest::Client::new())
        })
        .clone()
}

/// The host of a base URL, lower case (`[::1]` for IPv6), or `None` when it has none.
pub fn host_of(base_url: &str) -> Option<String> {
    let url = reqwest::Url::parse(base_url).ok()?;
    url.host_str().map(str::to_ascii_lowercase)
}

/// A header value for a credential, marked sensitive so that it never shows in debug output.
pub fn secret_header(value: &str) -> Result<HeaderValue, ProviderError> {
    let mut header = HeaderValue::from_str(value).map_err(|_| ProviderError::BadRequest {
        message: "the API key holds characters that cannot go in an HTTP header; check the \
                  key set in the environment"
            .into(),
    })?;
    header.set_sensitive(true);
    Ok(header)
}

/// Sends the request and, on a 2xx answer, returns the decoded event stream. An answer that
/// does not start within `timeouts.first_byte`, or a stream silent for `timeouts.idle`, is a
/// timeout (which the chain retries).
pub async fn open_stream<D: WireDecoder>(
    request: reqwest::RequestBuilder,
    decoder: D,
    timeouts: Timeouts,
) -> Result<EventStream, ProviderError> {
    let response = tokio::time::timeout(timeouts.first_byte, request.send())
        .await
        .map_err(|_| {
            ProviderError::Timeout(format!(
                "no answer within {} s of sending the request",
                seconds(timeouts.first_byte)
            ))
        })?
        .map_err(transport_error)?;
    let status = response.status();
    if !status.is_success() {
        let headers = response.headers().clone();
        let body = response.text().await.unwrap_or_default();
        return Err(classify_status(status.as_u16(), &headers, &body));
    }
    Ok(decode_body(response.bytes_stream(), decoder, timeouts.idle))
}

/// Turns a body of SSE bytes into canonical stream events using `decoder`. Deltas that
/// arrived before a failure are delivered first, then the error; a body silent for `idle`
/// ends in a timeout.
pub fn decode_body<S, D>(body: S, decoder: D, idle: Duration) -> EventStream
where
    S: futures_util::Stream<Item = reqwest::Result<bytes::Bytes>> + Send + 'static,
    D: WireDecoder,
{
    struct State<S, D> {
        body: std::pin::Pin<Box<S>>,
        parser: SseParser,
        decoder: D,
        pending: VecDeque<Result<StreamEvent, ProviderError>>,
        done: bool,
    }
    let state = State {
        body: Box::pin(body),
        parser: SseParser::new(),
        decoder,
        pending: VecDeque::new(),
        done: false,
    };
    Box::pin(futures_util::stream::unfold(
        state,
        move |mut st| async move {
            loop {
                if let Some(item) = st.pending.pop_front() {
                    return Some((item, st));
                }
                if st.done {
                    return None;
                }
                let mut out = Vec::new();
                let State {
                    body,
                    parser,
                    decoder,
                    pending,
                    done,
                } = &mut st;
                let next = tokio::time::timeout(idle, body.next()).await;
                let outcome = match next {
                    Err(_) => Err(ProviderError::Timeout(format!(
                        "the response stream went quiet for {} s",
                        seconds(idle)
                    ))),
                    Ok(Some(Ok(chunk))) => {
                        parser.feed(&chunk, &mut |e| decoder.on_event(e, &mut out))
                    }
                    Ok(Some(Err(err))) => Err(transport_error(err)),
                    Ok(None) => parser
                        .finish(&mut |e| decoder.on_event(e, &mut out))
                        .and_then(|()| decoder.finish())
                        .map(|response| {
                            out.push(StreamEvent::Completed(response));
                            *done = true;
                        }),
                };
                pending.extend(out.into_iter().map(Ok));
                if let Err(err) = outcome {
                    pending.push_back(Err(err));
                    *done = true;
                }
            }
        },
    ))
}

/// A wait in seconds as people write it: `60`, `0.3`.
fn seconds(wait: Duration) -> String {
    let secs = wait.as_secs_f64();
    match secs.fract() == 0.0 {
        true => format!("{secs:.0}"),
        false => format!("{secs:.1}"),
    }
}

fn transport_error(err: reqwest::Error) -> ProviderError {
    let local = err
        .url()
        .filter(|url| super::reach::is_loopback(url.as_str()));
    if let Some(url) = local
        && err.is_connect()
        && let Some(reason) = super::reach::no_answer_reason(&err)
    {
        return ProviderError::NotAnswering {
            server: super::reach::server_of(url.as_str()).unwrap_or_default(),
            reason,
        };
    }
    if err.is_timeout() {
        ProviderError::Timeout(err.to_string())
    } else {
        ProviderError::Connection(err.to_string())
    }
}

/// Maps an HTTP error answer of either provider family to a typed error.
pub fn classify_status(status: u16, headers: &HeaderMap, body: &str) -> ProviderError {
    let message = error_message(body);
    let lower = message.to_lowercase();
    match status {
        401 | 403 => ProviderError::Auth { status, message },
        429 if is_quota_exhausted(&lower) => ProviderError::QuotaExhausted { message },
        429 => ProviderError::RateLimit {
            retry_after: retry_after(headers),
            message,
        },
        529 => ProviderError::Overloaded { message },
        503 if lower.contains("overload") => ProviderError::Overloaded { message },
        408 | 504 => ProviderError::Timeout(message),
        400 | 413 | 422 if is_context_too_long(&lower) => ProviderError::ContextTooLong { message },
        500..=599 => ProviderError::Server { status, message },
        _ => ProviderError::BadRequest { message },
    }
}

/// A 429 that no wait cures: the account has no quota or credit left (OpenAI's
/// `insufficient_quota`, "exceeded your current quota", compatible servers' billing errors).
pub fn is_quota_exhausted(lower_message: &str) -> bool {
    [
        "insufficient_quota",
        "exceeded your current quota",
        "insufficient balance",
        "billing",
        "credit balance",
    ]
    .iter()
    .any(|needle| lower_message.contains(needle))
}

/// Both families phrase it differently; these cover Anthropic, OpenAI and the common
/// OpenAI-compatible servers.
pub fn is_context_too_long(lower_message: &str) -> bool {
    [
        "prompt is too long",
        "context_length_exceeded",
        "context length",
        "maximum context",
        "too many tokens",
        "context window",
        // Anthropic, when input plus `max_tokens` do not fit.
        "context limit",
        // llama.cpp server.
        "context size",
        // Kimi (Moonshot).
        "exceeded model token limit",
        // Qwen (DashScope).
        "range of input length",
    ]
    .iter()
    .any(|needle| lower_message.contains(needle))
}

/// The human part of an error body: `error.message` for both families, else the raw text.
pub fn error_message(body: &str) -> String {
    let parsed: Option<serde_json::Value> = serde_json::from_str(body).ok();
    let found = parsed.as_ref().and_then(|v| {
        let err = v.get("error").unwrap_or(v);
        let message = err.get("message").and_then(|m| m.as_str())?;
        let kind = err
            .get("code")
            .and_then(|c| c.as_str())
            .or_else(|| err.get("type").and_then(|t| t.as_str()));
        Some(match kind {
            Some(kind) => format!("{message} ({kind})"),
            None => message.to_string(),
        })
    });
    found.unwrap_or_else(|| {
        let trimmed = body.trim();
        if trimmed.is_empty() {
            "no details given".to_string()
        } else {
            trimmed.chars().take(500).collect()
        }
    })
}

fn retry_after(headers: &HeaderMap) -> Option<Duration> {
    let value = headers.get("retry-after")?.to_str().ok()?;
    if let Ok(secs) = value.trim().parse::<f64>() {
        return (secs.is_finite() && secs >= 0.0).then(|| Duration::from_secs_f64(secs));
    }
    let when = chrono::DateTime::parse_from_rfc2822(value.trim()).ok()?;
    let delta = when.signed_duration_since(chrono::Utc::now());
    delta.to_std().ok()
}

#[cfg(test)]
mod tests {
    use super::host_of;

    #[test]
    fn hosts_come_from_parsed_urls() {
        assert_eq!(
            host_of("http://LOCALHOST:11434/v1").as_deref(),
            Some("localhost")
        );
        assert_eq!(host_of("http://[::1]:8080/v1").as_deref(), Some("[::1]"));
        assert_eq!(
            host_of("https://api.openai.com/v1").as_deref(),
            Some("api.openai.com")
        );
        assert_eq!(host_of("not a url"), None);
    }
}
