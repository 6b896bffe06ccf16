//! The gateway from the other side: a connection to a running `mnemo serve` that looks like
//! an in-process session to its user. Requests are matched to replies by id; each attached
//! session's events arrive on an `Attachment` like the host's, and ops sent on it become
//! request lines.

use std::collections::HashMap;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncWrite, AsyncWriteExt, BufReader};
use tokio::sync::{mpsc, oneshot};

use super::tls::{self, ClientTlsFiles, TlsError};
use super::wire::{Hello, Reply, ServerLine, VERSION};
use crate::host::Attachment;
use crate::protocol::{Op, SessionEvent};

/// How long a request waits for its reply.
const REPLY_WAIT: Duration = Duration::from_secs(60);
/// Events waiting for the front end of one session.
const EVENT_QUEUE: usize = 4096;

#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    #[error("cannot reach mnemo serve at {target}: {source} (is `mnemo serve` running?)")]
    Connect {
        target: String,
        source: std::io::Error,
    },
    #[error("cannot read the gateway token {path}: {source}")]
    Token {
        path: String,
        source: std::io::Error,
    },
    #[error(
        "refusing to send the gateway token to {url} in clear: only a loopback address may be \
         reached without TLS; pass --tls-ca with the CA that signed the server's certificate"
    )]
    Insecure { url: String },
    // Not a `source`: the message already says it, and would be printed twice.
    #[error("{error}{hint}")]
    Tls {
        error: TlsError,
        /// What the person may be missing.
        hint: &'static str,
    },
    #[error("the gateway said: {0}")]
    Refused(String),
    #[error("the gateway speaks version {0}, this mnemo {VERSION}")]
    Version(u32),
    #[error("the connection to mnemo serve closed")]
    Closed,
    #[error("cannot read from mnemo serve: {0}")]
    Unreadable(std::io::Error),
    #[error("mnemo serve did not answer in time")]
    Timeout,
}

type Pending = Arc<Mutex<HashMap<u64, oneshot::Sender<Reply>>>>;
type Routes = Arc<Mutex<HashMap<String, mpsc::Sender<SessionEvent>>>>;

/// A connection to the gateway; cheap to clone.
#[derive(Clone)]
pub struct GatewayClient {
    out: mpsc::Sender<String>,
    next_id: Arc<AtomicU64>,
    pending: Pending,
    routes: Routes,
}

/// The socket `mnemo serve` always listens on, in its data directory.
pub fn default_socket(data_dir: &Path) -> std::path::PathBuf {
    data_dir.join("gateway.sock")
}

/// Where a client finds the gateway.
#[derive(Debug, Clone, Copy, Default)]
pub enum Target<'a> {
    /// The daemon's socket in its data directory.
    #[default]
    Socket,
    /// HOST:PORT, with TLS when given (required off the loopback).
    Tcp {
        url: &'a str,
        tls: Option<&'a ClientTlsFiles>,
    },
}

/// The host part of HOST:PORT (an IPv6 address in brackets keeps them).
fn host_of(url: &str) -> &str {
    url.rsplit_once(':').map_or(url, |(host, _)| host)
}

/// Whether `url` names this machine: a loopback address, or `localhost`.
fn is_loopback(url: &str) -> bool {
    let host = host_of(url).trim_start_matches('[').trim_end_matches(']');
    match host.parse::<std::net::IpAddr>() {
        Ok(ip) => ip.is_loopback(),
        Err(_) => host.eq_ignore_ascii_case("localhost"),
    }
}

/// How long telling the daemon about changed jobs may take.
const TELL_WAIT: Duration = Duration::from_secs(2);

/// Tells the daemon of `data_dir`, when one runs, to read its schedules and heartbeats again
/// (it does not poll for them). Returns whether one was told.
pub async fn tell_jobs_changed(data_dir: &Path) -> bool {
    tell_daemon(data_dir, json!({"op": "jobs_changed"}), TELL_WAIT).await
}

/// Asks the daemon of `data_dir`, if one runs, to tell Telegram chat `chat` that it is
/// paired; whether it did.
pub async fn tell_telegram_paired(data_dir: &Path, chat: i64) -> bool {
    let op = json!({"op": "telegram_paired", "chat": chat});
    tell_daemon(data_dir, op, TELL_WAIT * 5).await
}

/// Sends `op` to the daemon of `data_dir` when one runs; whether it answered within `wait`.
async fn tell_daemon(data_dir: &Path, op: Value, wait: Duration) -> bool {
    if !crate::host::daemon::serve_running(data_dir) {
        return false;
    }
    let told = async {
        let client = GatewayClient::connect(data_dir, Target::Socket)
            .await
            .ok()?;
        client.request(None, op).await.ok()
    };
    matches!(tokio::time::timeout(wait, told).await, Ok(Some(_)))
}

impl GatewayClient {
    /// Connects to the daemon of `data_dir` at `target`; the token is read from the data
    /// directory either way. Off the loopback only with TLS: the token would travel in clear.
    pub async fn connect(data_dir: &Path, target: Target<'_>) -> Result<Self, ClientError> {
        let token = super::token::token_path(data_dir);
        match target {
            Target::Socket => Self::connect_unix(&default_socket(data_dir), &token).await,
            Target::Tcp { url, tls: None } if !is_loopback(url) => Err(ClientError::Insecure {
                url: url.to_string(),
            }),
            Target::Tcp { url, tls: None } => Self::connect_tcp(url, &token).await,
            Target::Tcp {
                url,
                tls: Some(files),
            } => Self::connect_tls(url, files, &token).await,
        }
    }

    /// Connects to the Unix socket `path` with the token in `token_file`.
    pub async fn connect_unix(path: &Path, token_file: &Path) -> Result<Self, ClientError> {
        let stream = tokio::net::UnixStream::connect(path)
            .await
            .map_err(|source| ClientError::Connect {
                target: path.display().to_string(),
                source,
            })?;
        Self::handshake(stream, token_file).await
    }

    /// Connects to `address` (HOST:PORT) with the token in `token_file`.
    pub async fn connect_tcp(address: &str, token_file: &Path) -> Result<Self, ClientError> {
        Self::handshake(tcp(address).await?, token_file).await
    }

    /// Connects to `address` (HOST:PORT) over TLS as `files` say, with the token in
    /// `token_file`.
    pub async fn connect_tls(
        address: &str,
        files: &ClientTlsFiles,
        token_file: &Path,
    ) -> Result<Self, ClientError> {
        let stream = tcp(address).await?;
        // Without a certificate of its own, a refusal most likely means the server wants one.
        let hint = match files.identity {
            Some(_) => "",
            None => " (if the server asks for client certificates: pass --tls-cert and --tls-key)",
        };
        let failed = |message: String| ClientError::Tls {
            error: TlsError::Handshake {
                target: address.to_string(),
                message,
            },
            hint,
        };
        let stream = tls::connect(files, host_of(address), stream)
            .await
            .map_err(|error| match error {
                TlsError::Handshake { message, .. } => failed(message),
                error => ClientError::Tls { error, hint: "" },
            })?;
        // With TLS 1.3 the server checks the client's certificate after the client finished
        // its handshake: a refusal shows up as the first read failing.
        Self::handshake(stream, token_file)
            .await
            .map_err(|error| match error {
                ClientError::Unreadable(io) => failed(io.to_string()),
                ClientError::Closed => failed("the server closed the connection".into()),
                other => other,
            })
    }

    async fn handshake(
        stream: impl AsyncRead + AsyncWrite + Send + 'static,
        token_file: &Path,
    ) -> Result<Self, ClientError> {
        let token = std::fs::read_to_string(token_file).map_err(|source| ClientError::Token {
            path: token_file.display().to_string(),
            source,
        })?;
        let (read, mut write) = tokio::io::split(stream);
        let mut lines = BufReader::new(read).lines();
        let mut next = async || -> Result<String, ClientError> {
            match tokio::time::timeout(REPLY_WAIT, lines.next_line()).await {
                Ok(Ok(Some(line))) => Ok(line),
                Ok(Ok(None)) => Err(ClientError::Closed),
                Ok(Err(io)) => Err(ClientError::Unreadable(io)),
                Err(_) => Err(ClientError::Timeout),
            }
        };
        let hello: Hello = serde_json::from_str(&next().await?)
            .map_err(|e| ClientError::Refused(e.to_string()))?;
        if hello.version != VERSION {
            return Err(ClientError::Version(hello.version));
        }
        let auth = json!({ "token": token.trim() }).to_string() + "\n";
        write
            .write_all(auth.as_bytes())
            .await
            .map_err(|_| ClientError::Closed)?;
        let answer: Reply = serde_json::from_str(&next().await?)
            .map_err(|e| ClientError::Refused(e.to_string()))?;
        if let Some(error) = answer.error {
            return Err(ClientError::Refused(error));
        }
        let (out, queue) = mpsc::channel::<String>(256);
        let pending: Pending = Arc::default();
        let routes: Routes = Arc::default();
        tokio::spawn(write_lines(write, queue));
        tokio::spawn(read_lines(lines, pending.clone(), routes.clone()));
        Ok(GatewayClient {
            out,
            next_id: Arc::new(AtomicU64::new(1)),
            pending,
            routes,
        })
    }

    /// Sends `op` (for `session` when given) and waits for the reply's `ok` value.
    pub async fn request(&self, session: Option<&str>, op: Value) -> Result<Value, ClientError> {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let (answer, reply) = oneshot::channel();
        if let Ok(mut pending) = self.pending.lock() {
            pending.insert(id, answer);
        }
        let mut line = json!({ "id": id, "op": op });
        if let Some(session) = session {
            line["session"] = json!(session);
        }
        self.out
            .send(line.to_string())
            .await
            .map_err(|_| ClientError::Closed)?;
        let reply = match tokio::time::timeout(REPLY_WAIT, reply).await {
            Ok(Ok(reply)) => reply,
            Ok(Err(_)) => return Err(ClientError::Closed),
            Err(_) => return Err(ClientError::Timeout),
        };
        match (reply.ok, reply.error) {
            (_, Some(error)) => Err(ClientError::Refused(error)),
            (ok, None) => Ok(ok.unwrap_or(Value::Null)),
        }
    }

    /// A new session in `workspace` (with `model`), attached.
    pub async fn create(
        &self,
        workspace: &Path,
        model: Option<&str>,
    ) -> Result<Attachment, ClientError> {
        let (events, receiver) = mpsc::channel(EVENT_QUEUE);
        let op = json!({"op": "create_session", "workspace": workspace, "model": model});
        // Events may come before the reply names the session: they wait under "".
        self.route("", events.clone());
        let created = self.request(None, op).await;
        let session = created.and_then(|created| {
            created
                .get("session")
                .and_then(Value::as_str)
                .map(str::to_string)
                .ok_or_else(|| ClientError::Refused("no session in the reply".into()))
        });
        if let Ok(session) = &session {
            self.route(session, events);
        }
        self.unroute("");
        let session = session?;
        Ok(self.attachment(session, receiver))
    }

    /// Attaches to `session` (an id or a prefix), resumed by the daemon when not live.
    pub async fn attach(&self, session: &str) -> Result<Attachment, ClientError> {
        self.attach_after(session, None).await
    }

    /// Like [`GatewayClient::attach`], going on after event `from_seq` when given.
    pub async fn attach_after(
        &self,
        session: &str,
        from_seq: Option<u64>,
    ) -> Result<Attachment, ClientError> {
        let (events, receiver) = mpsc::channel(EVENT_QUEUE);
        let op = json!({"op": "attach", "from_seq": from_seq});
        // Until the reply names the whole id, its events come under "" (as for `create`).
        self.route("", events.clone());
        let attached = self.request(Some(session), op).await;
        let attached = match attached {
            Ok(attached) => attached,
            Err(err) => {
                self.unroute("");
                return Err(err);
            }
        };
        let full = attached
            .get("session")
            .and_then(Value::as_str)
            .unwrap_or(session)
            .to_string();
        self.route(&full, events);
        self.unroute("");
        Ok(self.attachment(full, receiver))
    }

    fn route(&self, session: &str, events: mpsc::Sender<SessionEvent>) {
        if let Ok(mut routes) = self.routes.lock() {
            routes.insert(session.to_string(), events);
        }
    }

    fn unroute(&self, session: &str) {
        if let Ok(mut routes) = self.routes.lock() {
            routes.remove(session);
        }
    }

    /// Ops sent on the attachment become requests; dropping it detaches.
    fn attachment(&self, session: String, events: mpsc::Receiver<SessionEvent>) -> Attachment {
        let (ops, mut queue) = mpsc::channel::<Op>(64);
        let client = self.clone();
        let id = session.clone();
        tokio::spawn(async move {
            while let Some(op) = queue.recv().await {
                let Ok(op) = serde_json::to_value(&op) else {
                    continue;
                };
                if client.request(Some(&id), op).await.is_err() {
                    break;
                }
            }
            let _ = client.request(Some(&id), json!({"op": "detach"})).await;
            client.unroute(&id);
        });
        Attachment {
            session,
            ops,
            events,
        }
    }
}

async fn write_lines(mut write: impl AsyncWrite + Unpin, mut queue: mpsc::Receiver<String>) {
    while let Some(line) = queue.recv().await {
        if write.write_all(line.as_bytes()).await.is_err()
            || write.write_all(b"\n").await.is_err()
            || write.flush().await.is_err()
        {
            return;
        }
    }
}

async fn read_lines(
    mut lines: tokio::io::Lines<BufReader<impl AsyncRead + Unpin>>,
    pending: Pending,
    routes: Routes,
) {
    while let Ok(Some(line)) = lines.next_line().await {
        match serde_json::from_str::<ServerLine>(&line) {
            Ok(ServerLine::Event(event)) => {
                let route = routes.lock().ok().and_then(|routes| {
                    routes
                        .get(&event.session)
                        .or_else(|| routes.get(""))
                        .cloned()
                });
                if let Some(route) = route {
                    let _ = route.send(event).await;
                }
            }
            Ok(ServerLine::Reply(reply)) => {
                let waiting = reply
                    .id
                    .as_u64()
                    .and_then(|id| pending.lock().ok()?.remove(&id));
                if let Some(waiting) = waiting {
                    let _ = waiting.send(reply);
                }
            }
            Ok(ServerLine::Lagged(_)) | Err(_) => {}
        }
    }
    // The daemon went away: every attached front end sees its stream end.
    if let Ok(mut routes) = routes.lock() {
        routes.clear();
    }
}

/// A TCP connection to `address` (HOST:PORT), without Nagle's delay (lines are small).
async fn tcp(address: &str) -> Result<tokio::net::TcpStream, ClientError> {
    let stream = tokio::net::TcpStream::connect(address)
        .await
        .map_err(|source| ClientError::Connect {
            target: address.to_string(),
            source,
        })?;
    let _ = stream.set_nodelay(true);
    Ok(stream)
}
