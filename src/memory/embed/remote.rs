//! A remote embedder: an OpenAI-compatible `/embeddings` endpoint or Ollama's `/api/embed`.

use std::time::Duration;

use serde::Deserialize;
use serde_json::json;

use super::{EmbedError, EmbeddingConfig, EmbeddingKind};
use crate::memory::vectors::normalize;

const TIMEOUT: Duration = Duration::from_secs(60);
/// How much of an error body ends up in the error message.
const ERROR_BODY_CHARS: usize = 400;

pub(super) struct Remote {
    http: reqwest::Client,
    config: EmbeddingConfig,
    url: String,
}

#[derive(Deserialize)]
struct OpenAiResponse {
    data: Vec<OpenAiItem>,
}

#[derive(Deserialize)]
struct OpenAiItem {
    embedding: Vec<f32>,
    #[serde(default)]
    index: Option<usize>,
}

#[derive(Deserialize)]
struct OllamaResponse {
    embeddings: Vec<Vec<f32>>,
}

impl Remote {
    pub(super) fn new(config: EmbeddingConfig) -> Remote {
        let base = config.base_url.trim_end_matches('/');
        let url = match config.kind {
            EmbeddingKind::OpenAi => format!("{base}/embeddings"),
            EmbeddingKind::Ollama | EmbeddingKind::Local => format!("{base}/api/embed"),
        };
        let http = reqwest::Client::builder()
            .timeout(TIMEOUT)
            .build()
            .unwrap_or_else(|_| reqwest::Client::new());
        Remote { http, config, url }
    }

    /// One unit-length vector per text, in order. The API key is read from the environment
    /// on each call.
    pub(super) fn model_id(&self) -> String {
        let kind = match self.config.kind {
            EmbeddingKind::OpenAi => "openai",
            EmbeddingKind::Ollama | EmbeddingKind::Local => "ollama",
        };
        format!("{kind}:{}", self.config.model)
    }

    pub(super) async fn embed(&self, texts: &[String]) -> Result<Vec<Vec<f32>>, EmbedError> {
        if texts.is_empty() {
            return Ok(Vec::new());
        }
        let api_key = match &self.config.api_key_env {
            Some(var) => Some(std::env::var(var).map_err(|_| EmbedError::MissingKey(var.clone()))?),
            None => None,
        };
        let mut request = self
            .http
            .post(&self.url)
            .json(&json!({ "model": self.config.model, "input": texts }));
        if let Some(key) = &api_key {
            request = request.bearer_auth(key);
        }
        let http_error = |source| EmbedError::Http {
            url: self.url.clone(),
            source,
        };
        let response = request.send().await.map_err(http_error)?;
        let status = response.status();
        let body = response.text().await.map_err(http_error)?;
        if !status.is_success() {
            return Err(EmbedError::Status {
                url: self.url.clone(),
                status: status.as_u16(),
                body: body.chars().take(ERROR_BODY_CHARS).collect(),
            });
        }
        let decode_error = |detail: String| EmbedError::Decode {
            url: self.url.clone(),
            detail,
        };
        let mut vectors = match self.config.kind {
            EmbeddingKind::OpenAi => {
                let mut parsed: OpenAiResponse =
                    serde_json::from_str(&body).map_err(|e| decode_error(e.to_string()))?;
                parsed.data.sort_by_key(|item| item.index);
                parsed.data.into_iter().map(|item| item.embedding).collect()
            }
            EmbeddingKind::Ollama | EmbeddingKind::Local => {
                let parsed: OllamaResponse =
                    serde_json::from_str(&body).map_err(|e| decode_error(e.to_string()))?;
                parsed.embeddings
            }
        };
        if vectors.len() != texts.len() {
            return Err(decode_error(format!(
                "{} embeddings for {} texts",
                vectors.len(),
                texts.len()
            )));
        }
        for vector in vectors.iter_mut() {
            normalize(vector);
        }
        Ok(vectors)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::memory::test_server::serve_once;

    type TestResult = Result<(), Box<dyn std::error::Error>>;

    fn client(kind: EmbeddingKind, base_url: String) -> Remote {
        Remote::new(EmbeddingConfig {
            kind,
            base_url,
            model: "tiny".to_owned(),
            api_key_env: None,
            model_dir: None,
        })
    }

    fn texts() -> Vec<String> {
        vec!["first".to_owned(), "second".to_owned()]
    }

    #[tokio::test]
    async fn openai_format_is_posted_and_decoded_in_index_order() -> TestResult {
        let served = serve_once(
            200,
            r#"{"object":"list","data":[
                {"object":"embedding","index":1,"embedding":[0.0,2.0]},
                {"object":"embedding","index":0,"embedding":[3.0,4.0]}],
                "model":"tiny","usage":{"prompt_tokens":2,"total_tokens":2}}"#,
        )
        .await?;
        let base = format!("{}/v1/", served.base_url);
        let vectors = client(EmbeddingKind::OpenAi, base).embed(&texts()).await?;
        assert_eq!(vectors, vec![vec![0.6, 0.8], vec![0.0, 1.0]]);
        let request = served.request.await??;
        assert!(
            request.starts_with("POST /v1/embeddings HTTP/1.1"),
            "{request}"
        );
        let body = request.split("\r\n\r\n").nth(1).ok_or("no body")?;
        let sent: serde_json::Value = serde_json::from_str(body)?;
        assert_eq!(sent, json!({"model": "tiny", "input": ["first", "second"]}));
        Ok(())
    }

    #[tokio::test]
    async fn ollama_format_is_posted_and_decoded() -> TestResult {
        let served = serve_once(200, r#"{"model":"tiny","embeddings":[[1,0],[0,-5]]}"#).await?;
        let vectors = client(EmbeddingKind::Ollama, served.base_url.clone())
            .embed(&texts())
            .await?;
        assert_eq!(vectors, vec![vec![1.0, 0.0], vec![0.0, -1.0]]);
        let request = served.request.await??;
        assert!(request.starts_with("POST /api/embed HTTP/1.1"), "{request}");
        Ok(())
    }

    #[tokio::test]
    async fn an_error_status_is_reported_with_its_body() -> TestResult {
        let served = serve_once(401, r#"{"error":"bad key"}"#).await?;
        let result = client(EmbeddingKind::OpenAi, served.base_url.clone())
            .embed(&texts())
            .await;
        match result {
            Err(EmbedError::Status { status, body, .. }) => {
                assert_eq!(status, 401);
                assert!(body.contains("bad key"));
            }
            other => return Err(format!("expected a status error, got {other:?}").into()),
        }
        served.request.await??;
        Ok(())
    }

    #[tokio::test]
    async fn a_count_mismatch_is_a_decode_error() -> TestResult {
        let served = serve_once(200, r#"{"embeddings":[[1,0]]}"#).await?;
        let result = client(EmbeddingKind::Ollama, served.base_url.clone())
            .embed(&texts())
            .await;
        assert!(
            matches!(result, Err(EmbedError::Decode { .. })),
            "{result:?}"
        );
        served.request.await??;
        Ok(())
    }

    #[tokio::test]
    async fn config_is_read_from_toml_and_rejects_unknown_fields() -> TestResult {
        let config: EmbeddingConfig = toml::from_str(
            "kind = \"ollama\"\nbase_url = \"http://localhost:11434\"\nmodel = \"nomic-embed-text\"",
        )?;
        assert_eq!(config.kind, EmbeddingKind::Ollama);
        assert_eq!(config.api_key_env, None);
        let openai: EmbeddingConfig = toml::from_str(
            "kind = \"openai\"\nbase_url = \"u\"\nmodel = \"m\"\napi_key_env = \"KEY\"",
        )?;
        assert_eq!(openai.kind, EmbeddingKind::OpenAi);
        let unknown = toml::from_str::<EmbeddingConfig>(
            "kind = \"openai\"\nbase_url = \"u\"\nmodel = \"m\"\ndims = 3",
        );
        assert!(unknown.is_err());
        let missing = Remote::new(EmbeddingConfig {
            api_key_env: Some("MNEMO_TEST_SURELY_UNSET_KEY".to_owned()),
            ..openai
        })
        .embed(&texts())
        .await;
        assert!(matches!(missing, Err(EmbedError::MissingKey(_))));
        Ok(())
    }
}
