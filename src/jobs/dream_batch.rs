//! The Anthropic Message Batches API for the dream's calls: half the price of direct calls,
//! for work that can wait. One request per batch (the editor needs the analyst's answer):
//! create it, poll with a growing pause until it has ended, then read its line of the JSON
//! lines at `results_url`. A batch that has not ended within the time limit is cancelled and
//! the caller makes the call directly instead.

use std::time::Duration;

use reqwest::header::CONTENT_TYPE;
use serde::Deserialize;
use serde_json::{Value, json};
use tokio::time::Instant;

use crate::llm::anthropic::{API_VERSION, batch_params};
use crate::llm::http::{self, classify_status, host_of, secret_header};
use crate::llm::{
    ContentBlock, Message, ModelRequest, ModelResponse, ProviderError, ProviderSettings,
    StopReason, Usage,
};

/// The longest pause between two polls.
const MAX_POLL: Duration = Duration::from_secs(60);
/// The first pause for a limit of 30 minutes; shorter limits poll sooner (a twentieth of it).
const FIRST_POLL: Duration = Duration::from_secs(2);

#[derive(Debug, thiserror::Error)]
pub enum BatchError {
    #[error(transparent)]
    Provider(#[from] ProviderError),
    #[error("the batch API answered something unexpected: {0}")]
    Decode(String),
    #[error("the batched request {kind}: {message}")]
    Request { kind: String, message: String },
}

/// A batch as `POST /v1/messages/batches` and `GET /v1/messages/batches/{id}` describe it.
#[derive(Debug, Deserialize)]
struct Batch {
    id: String,
    processing_status: String,
    #[serde(default)]
    results_url: Option<String>,
}

/// One line of the results.
#[derive(Debug, Deserialize)]
struct ResultLine {
    custom_id: String,
    result: RequestResult,
}

#[derive(Debug, Deserialize)]
struct RequestResult {
    #[serde(rename = "type")]
    kind: String,
    #[serde(default)]
    message: Option<WireMessage>,
    #[serde(default)]
    error: Option<Value>,
}

#[derive(Debug, Deserialize)]
struct WireMessage {
    content: Vec<WireBlock>,
    #[serde(default)]
    stop_reason: Option<String>,
    #[serde(default)]
    usage: WireUsage,
}

#[derive(Debug, Deserialize)]
struct WireBlock {
    #[serde(rename = "type")]
    kind: String,
    #[serde(default)]
    text: String,
}

#[derive(Debug, Default, Deserialize)]
struct WireUsage {
    #[serde(default)]
    input_tokens: u64,
    #[serde(default)]
    output_tokens: u64,
    #[serde(default)]
    cache_read_input_tokens: u64,
    #[serde(default)]
    cache_creation_input_tokens: u64,
}

/// Sends dream calls through the batch API of one Anthropic model.
pub struct BatchClient {
    settings: ProviderSettings,
    client: reqwest::Client,
    limit: Duration,
}

impl BatchClient {
    /// `settings.base_url` is the API root; the key comes from `settings.api_key_env`.
    pub fn new(settings: ProviderSettings, limit: Duration) -> Self {
        Self {
            client: http::client(settings.timeouts.connect),
            settings,
            limit,
        }
    }

    /// The answer to `request` (with `shared` as its cached first system block), or `None`
    /// when the batch did not end within the limit (it is then cancelled).
    pub async fn complete(
        &self,
        custom_id: &str,
        request: &ModelRequest,
        shared: &str,
    ) -> Result<Option<ModelResponse>, BatchError> {
        let deadline = Instant::now() + self.limit;
        let params = batch_params(&self.settings.model, request, shared);
        let body = json!({"requests": [{"custom_id": custom_id, "params": params}]});
        let mut batch: Batch = self.send(self.post("").json(&body)).await?;
        let mut pause = (self.limit / 20).min(FIRST_POLL);
        while batch.processing_status != "ended" {
            let now = Instant::now();
            if now >= deadline {
                // Best effort: an uncancelled batch would still be billed once it runs.
                let _ = self
                    .send::<Value>(self.post(&format!("/{}/cancel", batch.id)))
                    .await;
                return Ok(None);
            }
            tokio::time::sleep(pause.min(deadline - now)).await;
            pause = (pause * 2).min(MAX_POLL);
            batch = self
                .send(self.get(&self.url(&format!("/{}", batch.id))))
                .await?;
        }
        let url = batch
            .results_url
            .ok_or_else(|| BatchError::Decode("an ended batch without results_url".into()))?;
        let lines = self.text(self.get(&url)).await?;
        answer(&lines, custom_id).map(Some)
    }

    fn url(&self, tail: &str) -> String {
        let base = self.settings.base_url.trim_end_matches('/');
        format!("{base}/v1/messages/batches{tail}")
    }

    fn post(&self, tail: &str) -> reqwest::RequestBuilder {
        self.with_headers(self.client.post(self.url(tail)), self.settings.key())
    }

    /// A GET of `url`; the key goes only to the configured API's host (a results URL
    /// elsewhere gets no key).
    fn get(&self, url: &str) -> reqwest::RequestBuilder {
        let same_host = host_of(url) == host_of(&self.settings.base_url);
        let key = self.settings.key().filter(|_| same_host);
        self.with_headers(self.client.get(url), key)
    }

    fn with_headers(
        &self,
        builder: reqwest::RequestBuilder,
        key: Option<String>,
    ) -> reqwest::RequestBuilder {
        let builder = builder
            .header("anthropic-version", API_VERSION)
            .header(CONTENT_TYPE, "application/json")
            .timeout(self.settings.timeouts.first_byte);
        match key {
            Some(key) => match secret_header(&key) {
                Ok(value) => builder.header("x-api-key", value),
                // Sent without: the server's authentication error says what to fix.
                Err(_) => builder,
            },
            None => builder,
        }
    }

    async fn text(&self, request: reqwest::RequestBuilder) -> Result<String, BatchError> {
        let response = request.send().await.map_err(http_error)?;
        let status = response.status().as_u16();
        let headers = response.headers().clone();
        let body = response.text().await.map_err(http_error)?;
        if !(200..300).contains(&status) {
            return Err(classify_status(status, &headers, &body).into());
        }
        Ok(body)
    }

    async fn send<T: serde::de::DeserializeOwned>(
        &self,
        request: reqwest::RequestBuilder,
    ) -> Result<T, BatchError> {
        let body = self.text(request).await?;
        serde_json::from_str(&body).map_err(|e| BatchError::Decode(e.to_string()))
    }
}

fn http_error(err: reqwest::Error) -> BatchError {
    let error = match err.is_timeout() {
        true => ProviderError::Timeout(err.to_string()),
        false => ProviderError::Connection(err.to_string()),
    };
    error.into()
}

/// The response of request `custom_id` among the result lines.
fn answer(lines: &str, custom_id: &str) -> Result<ModelResponse, BatchError> {
    let line = lines
        .lines()
        .filter(|line| !line.trim().is_empty())
        .filter_map(|line| serde_json::from_str::<ResultLine>(line).ok())
        .find(|line| line.custom_id == custom_id)
        .ok_or_else(|| BatchError::Decode(format!("no result for `{custom_id}`")))?;
    let result = line.result;
    match (result.kind.as_str(), result.message) {
        ("succeeded", Some(message)) => Ok(response(message)),
        (kind, _) => Err(BatchError::Request {
            kind: kind.to_string(),
            message: result
                .error
                .map(|e| http::error_message(&e.to_string()))
                .unwrap_or_else(|| "no answer".into()),
        }),
    }
}

fn response(message: WireMessage) -> ModelResponse {
    let content = message
        .content
        .into_iter()
        .filter(|block| block.kind == "text")
        .map(|block| ContentBlock::Text { text: block.text })
        .collect();
    let stop_reason = match message.stop_reason.as_deref() {
        Some("max_tokens") => StopReason::MaxTokens,
        Some("refusal") => StopReason::Refusal,
        Some("end_turn") | None => StopReason::EndTurn,
        Some(other) => StopReason::Other(other.to_string()),
    };
    ModelResponse {
        message: Message::assistant(content),
        usage: Usage {
            input_tokens: message.usage.input_tokens,
            output_tokens: message.usage.output_tokens,
            cache_read_tokens: message.usage.cache_read_input_tokens,
            cache_write_tokens: message.usage.cache_creation_input_tokens,
        },
        stop_reason,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_dream_batch_result_line_is_found_by_custom_id() {
        let lines = concat!(
            r#"{"custom_id":"other","result":{"type":"errored","error":{"type":"error","error":{"type":"invalid_request_error","message":"bad"}}}}"#,
            "\n",
            r#"{"custom_id":"dream-analyst","result":{"type":"succeeded","message":{"id":"msg_1","type":"message","role":"assistant","content":[{"type":"text","text":"found"}],"stop_reason":"end_turn","usage":{"input_tokens":10,"output_tokens":2,"cache_read_input_tokens":7}}}}"#,
            "\n"
        );
        let found = answer(lines, "dream-analyst").unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(found.message.text(), "found");
        assert_eq!(found.usage.cache_read_tokens, 7);
        let err = answer(lines, "other").err().map(|e| e.to_string());
        assert_eq!(
            err.as_deref(),
            Some("the batched request errored: bad (invalid_request_error)")
        );
        assert!(answer(lines, "missing").is_err());
    }
}
