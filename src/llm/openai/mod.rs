//! OpenAI Chat Completions and the many servers that copy it (DeepSeek, Qwen, Kimi, Ollama,
//! vLLM, llama.cpp), streamed over SSE. The request mapping and the chunk decoding live in
//! their own files; this one picks the dialect and sends the request.

mod chunk;
mod decode;
mod request;

use futures_util::future::BoxFuture;
use reqwest::header::{ACCEPT, AUTHORIZATION, CONTENT_TYPE};

use super::{EventStream, ModelRequest, Provider, ProviderError, ProviderSettings, http};

pub use decode::OpenAiDecoder;

/// The servers differ in a few request fields; the base URL tells which kind this is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Dialect {
    /// OpenAI's own API (and Azure OpenAI). It wants `max_completion_tokens`: `max_tokens`
    /// is deprecated there and refused by its reasoning models. It gets no
    /// `reasoning_content`, a field it does not define.
    OpenAi,
    /// Every compatible server. Many of them know only `max_tokens`, and the thinking models
    /// among them (DeepSeek V3.2, Kimi) want their `reasoning_content` back in a tool loop.
    Compatible,
}

impl Dialect {
    fn from_base_url(base_url: &str) -> Self {
        match http::host_of(base_url).as_deref() {
            Some(host) if host == "api.openai.com" || host.ends_with(".openai.azure.com") => {
                Self::OpenAi
            }
            _ => Self::Compatible,
        }
    }
}

pub struct OpenAiProvider {
    settings: ProviderSettings,
    label: String,
    endpoint: String,
    dialect: Dialect,
    client: reqwest::Client,
    /// Whether the model reads images; when not, they are described in words.
    images: bool,
}

impl OpenAiProvider {
    /// `settings.base_url` includes the version path, such as `https://api.openai.com/v1` or
    /// `http://localhost:11434/v1`.
    pub fn new(settings: ProviderSettings) -> Self {
        let base_url = settings.base_url.trim_end_matches('/');
        Self {
            label: format!("openai:{}", settings.model),
            endpoint: format!("{base_url}/chat/completions"),
            dialect: Dialect::from_base_url(base_url),
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

impl Provider for OpenAiProvider {
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
            let body = request::body(&self.settings.model, &request, self.dialect);
            let body = serde_json::to_vec(&body).map_err(|err| ProviderError::BadRequest {
                message: format!("could not encode the request: {err}"),
            })?;
            let mut builder = self
                .client
                .post(&self.endpoint)
                .header(CONTENT_TYPE, "application/json")
                .header(ACCEPT, "text/event-stream")
                .body(body);
            // Local servers usually run without a key; they get no Authorization at all.
            if let Some(key) = self.settings.key() {
                builder = builder.header(
                    AUTHORIZATION,
                    http::secret_header(&format!("Bearer {key}"))?,
                );
            }
            http::open_stream(builder, OpenAiDecoder::new(), self.settings.timeouts).await
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_openai_hosts_get_the_openai_dialect() {
        let cases = [
            ("https://api.openai.com/v1", Dialect::OpenAi),
            ("https://API.OpenAI.com/v1/", Dialect::OpenAi),
            ("https://mine.openai.azure.com/openai/v1", Dialect::OpenAi),
            ("https://api.deepseek.com/v1", Dialect::Compatible),
            ("http://localhost:11434/v1", Dialect::Compatible),
            ("https://api.openai.com.example.net/v1", Dialect::Compatible),
            ("not a url", Dialect::Compatible),
        ];
        for (url, dialect) in cases {
            assert_eq!(Dialect::from_base_url(url), dialect, "{url}");
        }
    }
}
