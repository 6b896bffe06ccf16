//! Whether a model server answers at all: one bounded request before a session relies on it
//! (`mnemo doctor`, `mnemo config`, the set-up panel), and the words for a server that does
//! not, shared with the providers so that a refused connection reads the same everywhere.

use std::time::Duration;

/// How long a probe waits for a server, connecting included.
pub const PROBE_TIMEOUT: Duration = Duration::from_secs(3);

/// `host:port` of a URL, the port filled in from the scheme when the URL has none.
pub fn server_of(url: &str) -> Option<String> {
    let parsed = reqwest::Url::parse(url).ok()?;
    let host = parsed.host_str()?.to_ascii_lowercase();
    Some(match parsed.port_or_known_default() {
        Some(port) => format!("{host}:{port}"),
        None => host,
    })
}

/// Whether a URL names this machine: a server there that refuses connections is not running,
/// and waiting does not start it.
pub fn is_loopback(url: &str) -> bool {
    let Some(host) = super::http::host_of(url) else {
        return false;
    };
    match host.as_str() {
        "localhost" | "[::1]" | "0.0.0.0" => true,
        other => other
            .parse::<std::net::Ipv4Addr>()
            .is_ok_and(|ip| ip.is_loopback()),
    }
}

/// Why a request reached no server, in a few words, when that is what happened (refused,
/// unreachable, a name that does not resolve, no answer in time).
pub fn no_answer_reason(err: &reqwest::Error) -> Option<String> {
    if err.is_timeout() {
        return Some("no answer in time".into());
    }
    if !err.is_connect() {
        return None;
    }
    let mut source: Option<&(dyn std::error::Error + 'static)> = Some(err);
    while let Some(cause) = source {
        if let Some(io) = cause.downcast_ref::<std::io::Error>() {
            return Some(match io.kind() {
                std::io::ErrorKind::ConnectionRefused => "connection refused".into(),
                std::io::ErrorKind::TimedOut => "no answer in time".into(),
                std::io::ErrorKind::HostUnreachable | std::io::ErrorKind::NetworkUnreachable => {
                    "unreachable".into()
                }
                _ => io.to_string(),
            });
        }
        source = cause.source();
    }
    // hyper-util words a failed name lookup as "dns error".
    let text = err.to_string();
    Some(match text.contains("dns") {
        true => "its name does not resolve".into(),
        false => "cannot connect".into(),
    })
}

/// What one probe of a server found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Probe {
    /// `host:port`.
    pub server: String,
    pub answer: Answer,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Answer {
    /// Any HTTP answer, even an error status: something listens and speaks HTTP. `models`
    /// holds the ids an OpenAI-style model list named.
    Answers { status: u16, models: Vec<String> },
    /// Nothing answered; why.
    Silent(String),
}

impl Probe {
    pub fn answers(&self) -> bool {
        matches!(self.answer, Answer::Answers { .. })
    }
}

impl std::fmt::Display for Probe {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.answer {
            Answer::Answers { .. } => write!(f, "the server at {} answers", self.server),
            Answer::Silent(why) => {
                write!(f, "the server at {} does not answer ({why})", self.server)
            }
        }
    }
}

/// One GET of `url` (a model list), waiting at most `timeout` in all. No key is sent: the
/// question is only whether a server is there.
pub async fn probe(url: &str, timeout: Duration) -> Probe {
    let server = server_of(url).unwrap_or_else(|| url.to_string());
    let request = super::http::client(timeout).get(url).send();
    let answer = match tokio::time::timeout(timeout, request).await {
        Err(_) => Answer::Silent(format!("no answer within {} s", timeout.as_secs())),
        Ok(Err(err)) => Answer::Silent(no_answer_reason(&err).unwrap_or_else(|| err.to_string())),
        Ok(Ok(response)) => {
            let status = response.status().as_u16();
            let body = tokio::time::timeout(timeout, response.text()).await;
            let models = match body {
                Ok(Ok(text)) if status == 200 => model_ids(&text),
                _ => Vec::new(),
            };
            Answer::Answers { status, models }
        }
    };
    Probe { server, answer }
}

/// The ids of an OpenAI-style model list (`{"data": [{"id": …}]}`), at most a screenful.
fn model_ids(body: &str) -> Vec<String> {
    const MOST: usize = 20;
    let parsed: serde_json::Value = serde_json::from_str(body).unwrap_or_default();
    parsed["data"]
        .as_array()
        .map(|list| {
            list.iter()
                .filter_map(|m| m["id"].as_str())
                .take(MOST)
                .map(str::to_string)
                .collect()
        })
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn servers_and_loopback_come_from_the_url() {
        assert_eq!(
            server_of("http://127.0.0.1:8080/v1").as_deref(),
            Some("127.0.0.1:8080")
        );
        assert_eq!(
            server_of("https://api.openai.com/v1").as_deref(),
            Some("api.openai.com:443")
        );
        assert!(is_loopback("http://127.0.0.2:8080/v1"));
        assert!(is_loopback("http://localhost:11434/v1"));
        assert!(is_loopback("http://[::1]:8080/v1"));
        assert!(!is_loopback("https://api.openai.com/v1"));
        assert!(!is_loopback("http://10.0.0.5:8080/v1"));
    }

    #[test]
    fn model_lists_give_their_ids() {
        let body = r#"{"object":"list","data":[{"id":"qwen"},{"id":"llama"}]}"#;
        assert_eq!(model_ids(body), ["qwen", "llama"]);
        assert!(model_ids("not json").is_empty());
    }

    #[tokio::test]
    async fn a_closed_port_does_not_answer_and_says_why() {
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .map(|a| a.port())
            .unwrap_or_else(|e| panic!("{e}"));
        let url = format!("http://127.0.0.1:{port}/v1/models");
        let found = probe(&url, PROBE_TIMEOUT).await;
        assert_eq!(
            found.to_string(),
            format!("the server at 127.0.0.1:{port} does not answer (connection refused)")
        );
    }
}
