//! The Anthropic Messages API, streamed over SSE. The request mapping (with its prompt-cache
//! breakpoints) and the event decoding live in their own files; this one sends the request.

mod decode;
mod events;
mod request;
mod server_tools;

use futures_util::future::BoxFuture;
use reqwest::header::{ACCEPT, CONTENT_TYPE};

use super::{EventStream, ModelRequest, Provider, ProviderError, ProviderSettings, http};

pub use decode::AnthropicDecoder;
pub use request::batch_params;

/// The API version this mapping is written against.
pub const API_VERSION: &str = "2023-06-01";

pub struct AnthropicProvider {
    settings: ProviderSettings,
    label: String,
    endpoint: String,
    client: reqwest::Client,
    /// Whether the model reads images; when not, they are described in words.
    images: bool,
}

impl AnthropicProvider {
    /// `settings.base_url` is the API root, such as `https://api.anthropic.com`.
    pub fn new(settings: ProviderSettings) -> Self {
        let endpoint = format!("{}/v1/messages", settings.base_url.trim_end_matches('/'));
        Self {
            label: format!("anthropic:{}", settings.model),
            endpoint,
            client: http::client(settings.timeouts.connect),
            images: super::image::model_reads_images(&settings.model),
            settings,
        }
    }

    /// Sets whether the model reads images (by default known by its name).
    pub fn reading_images(mut self, images: bool) -> Self {
        self.images = images;
        self
    }
}

impl Provider for AnthropicProvider {
    fn label(&self) -> &str {
        &self.label
    }

    fn stream(&self, request: ModelRequest) -> BoxFuture<'_, Result<EventStream, ProviderError>> {
        Box::pin(async move {
            let request = if self.images {
                request
            } else {
                super::image::described(request)
            };
            let body = serde_json::to_vec(&request::body(&self.settings.model, &request)).map_err(
                |err| ProviderError::BadRequest {
                    message: format!("could not encode the request: {err}"),
                },
            )?;
            let mut builder = self
                .client
                .post(&self.endpoint)
                .header("anthropic-version", API_VERSION)
                .header(CONTENT_TYPE, "application/json")
                .header(ACCEPT, "text/event-stream")
                .body(body);
            if let Some(key) = self.settings.key() {
                builder = builder.header("x-api-key", http::secret_header(&key)?);
            }
            http::open_stream(builder, AnthropicDecoder::new(), self.settings.timeouts).await
        })
    }
}
