//! The gateway: sessions of `mnemo serve` reachable by other programs over a Unix socket
//! (mode 0600) or TCP, in JSON lines (`wire.rs`, `docs/gateway.md`). Every client proves
//! itself with the token file first; TCP outside the loopback range needs TLS.

mod admission;
pub mod client;
pub mod conn;
mod remote;
pub mod search;
pub mod tls;
pub mod token;
pub mod wire;

use std::net::SocketAddr;
use std::os::unix::fs::PermissionsExt;
use std::path::PathBuf;
use std::sync::Arc;

use futures_util::future::BoxFuture;
use tokio::net::{TcpListener, UnixListener};
use tokio_util::sync::CancellationToken;

use crate::config::CliOverrides;
use crate::host::{Attachment, Delivery, LocalHost, OpenOptions, SessionHost};
use crate::host::{HostApi, Loaded, SessionChoice};
use admission::Admission;
use token::TokenFile;

/// Where the gateway listens.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Listen {
    Tcp(SocketAddr),
    Unix(PathBuf),
}

impl std::str::FromStr for Listen {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        match text.strip_prefix("unix:") {
            Some(path) if !path.is_empty() => Ok(Listen::Unix(PathBuf::from(path))),
            Some(_) => Err("`unix:` needs a socket path".into()),
            None => text
                .parse()
                .map(Listen::Tcp)
                .map_err(|_| format!("`{text}` is neither HOST:PORT nor unix:PATH")),
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum GatewayError {
    #[error(
        "refusing to listen on {0} without TLS: only loopback addresses may be used without \
         --tls-cert and --tls-key"
    )]
    NotLoopback(SocketAddr),
    #[error("cannot listen on {what}: {source}")]
    Listen {
        what: String,
        source: std::io::Error,
    },
    #[error("cannot write the gateway token: {0}")]
    Token(std::io::Error),
    #[error(transparent)]
    Tls(#[from] tls::TlsError),
}

/// What every connection shares.
pub struct Gateway {
    pub host: SessionHost,
    /// Answers the reads of the host API, as `mnemo` does in-process.
    pub local: LocalHost,
    pub token: String,
    admission: Admission,
    pub cancel: CancellationToken,
    pub jobs_changed: Option<crate::jobs::scheduler::SchedulerHandle>,
    pub searcher: Option<Arc<dyn search::ArchiveSearcher>>,
    pub telegram_paired: Option<Arc<dyn PairedChats>>,
    loaded: Arc<Loaded>,
    cli: CliOverrides,
}

/// The running gateway: its listeners stop, the token file and sockets go when dropped.
pub struct Running {
    _token: TokenFile,
    sockets: Vec<PathBuf>,
    pub gateway: Arc<Gateway>,
    /// The TCP addresses listened on (with the ports a `:0` got).
    pub addresses: Vec<SocketAddr>,
}

impl Drop for Running {
    fn drop(&mut self) {
        for socket in &self.sockets {
            let _ = std::fs::remove_file(socket);
        }
    }
}

/// Where and how the gateway listens.
#[derive(Clone, Default)]
pub struct GatewayOptions {
    pub listen: Vec<Listen>,
    /// TLS for the TCP listeners (required off the loopback).
    pub tls: Option<tls::TlsFiles>,
    /// Told when a client says the schedules or heartbeats changed.
    pub jobs_changed: Option<crate::jobs::scheduler::SchedulerHandle>,
    /// Answers searches, with the embedder it keeps.
    pub searcher: Option<Arc<dyn search::ArchiveSearcher>>,
    /// The daemon's Telegram channel, when it runs: tells a chat a terminal paired.
    pub telegram_paired: Option<Arc<dyn PairedChats>>,
}

/// Tells a Telegram chat that a terminal paired it (the daemon has the bot's token; the
/// terminal may not).
pub trait PairedChats: Send + Sync {
    /// Whether the chat was told.
    fn paired(&self, chat: i64) -> BoxFuture<'_, bool>;
}

/// Starts listening on every address of `options`; connections are served until `cancel`.
pub async fn start(
    host: SessionHost,
    loaded: Arc<Loaded>,
    cli: CliOverrides,
    options: &GatewayOptions,
    cancel: CancellationToken,
) -> Result<Running, GatewayError> {
    let listen = &options.listen;
    for address in listen {
        if let Listen::Tcp(address) = address
            && !address.ip().is_loopback()
            && options.tls.is_none()
        {
            return Err(GatewayError::NotLoopback(*address));
        }
    }
    let acceptor = options.tls.as_ref().map(tls::acceptor).transpose()?;
    let data = loaded
        .dirs
        .data
        .clone()
        .ok_or_else(|| GatewayError::Token(std::io::Error::other("no data directory")))?;
    let token = TokenFile::create(&data).map_err(GatewayError::Token)?;
    let gateway = Arc::new(Gateway {
        local: LocalHost::new(host.clone(), loaded.clone()),
        host,
        token: token.token().to_string(),
        admission: Admission::default(),
        cancel,
        jobs_changed: options.jobs_changed.clone(),
        searcher: options.searcher.clone(),
        telegram_paired: options.telegram_paired.clone(),
        loaded,
        cli,
    });
    let mut sockets = Vec::new();
    let mut addresses = Vec::new();
    for address in listen {
        let listen_error = |source| GatewayError::Listen {
            what: format!("{address:?}"),
            source,
        };
        match address {
            Listen::Tcp(address) => {
                let listener = TcpListener::bind(address).await.map_err(listen_error)?;
                addresses.push(listener.local_addr().map_err(listen_error)?);
                tokio::spawn(accept_tcp(gateway.clone(), listener, acceptor.clone()));
            }
            Listen::Unix(path) => {
                // A socket a killed daemon left behind would make bind fail.
                let _ = std::fs::remove_file(path);
                let listener = UnixListener::bind(path).map_err(listen_error)?;
                std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600))
                    .map_err(listen_error)?;
                sockets.push(path.clone());
                tokio::spawn(accept_unix(gateway.clone(), listener));
            }
        }
    }
    Ok(Running {
        _token: token,
        sockets,
        gateway,
        addresses,
    })
}

/// How long the listener waits after a failed accept (no file descriptor left, say).
const ACCEPT_RETRY: std::time::Duration = std::time::Duration::from_millis(50);

/// How long a TLS handshake may take.
const HANDSHAKE_WAIT: std::time::Duration = std::time::Duration::from_secs(10);

async fn accept_tcp(
    gateway: Arc<Gateway>,
    listener: TcpListener,
    acceptor: Option<tokio_rustls::TlsAcceptor>,
) {
    loop {
        let accepted = tokio::select! {
            accepted = listener.accept() => accepted,
            () = gateway.cancel.cancelled() => return,
        };
        let (stream, peer) = match accepted {
            Ok(accepted) => accepted,
            Err(_) => {
                // Out of file descriptors, say: trying again at once would spin.
                tokio::time::sleep(ACCEPT_RETRY).await;
                continue;
            }
        };
        let _ = stream.set_nodelay(true);
        let ticket = gateway.admission.admit(&peer.ip().to_string());
        let gateway = gateway.clone();
        let acceptor = acceptor.clone();
        tokio::spawn(async move {
            match acceptor {
                None => conn::serve_client(gateway, stream, ticket).await,
                Some(acceptor) => {
                    // A client without an acceptable certificate ends here.
                    let handshake = tokio::time::timeout(HANDSHAKE_WAIT, acceptor.accept(stream));
                    let stream = tokio::select! {
                        stream = handshake => stream,
                        () = ticket.evicted.cancelled() => return,
                    };
                    if let Ok(Ok(stream)) = stream {
                        conn::serve_client(gateway, stream, ticket).await;
                    }
                }
            }
        });
    }
}

async fn accept_unix(gateway: Arc<Gateway>, listener: UnixListener) {
    loop {
        let accepted = tokio::select! {
            accepted = listener.accept() => accepted,
            () = gateway.cancel.cancelled() => return,
        };
        match accepted {
            Ok((stream, _)) => {
                let ticket = gateway.admission.admit("unix");
                tokio::spawn(conn::serve_client(gateway.clone(), stream, ticket));
            }
            Err(_) => tokio::time::sleep(ACCEPT_RETRY).await,
        }
    }
}

impl Gateway {
    fn options() -> OpenOptions {
        OpenOptions {
            approval_mode: None,
            questions: true,
            delivery: Delivery::DropWhenBehind,
        }
    }

    /// The configuration of `workspace` (the daemon's own when `None`).
    fn loaded_for(&self, workspace: Option<&str>, model: Option<String>) -> Result<Loaded, String> {
        let mut cli = self.cli.clone();
        if model.is_some() {
            cli.model = model;
        }
        let dir = workspace.map_or_else(|| self.loaded.workspace.clone(), PathBuf::from);
        self.loaded
            .for_workspace(&dir, &cli)
            .map_err(|e| e.to_string())
    }

    /// A new session, this client attached.
    pub async fn create(
        &self,
        workspace: Option<String>,
        model: Option<String>,
    ) -> Result<Attachment, String> {
        let loaded = self.loaded_for(workspace.as_deref(), model)?;
        let cli = self.cli.clone();
        self.host
            .open(&loaded, &cli, SessionChoice::New, Self::options())
            .await
            .map_err(|e| e.to_string())
    }

    /// Attaches to a session, resuming it from the store when it is not live; going on after
    /// event `from_seq` when given (a resumed session's numbering continues, so a client
    /// reattaching after a daemon restart misses nothing).
    pub async fn attach(&self, wanted: &str, from_seq: Option<u64>) -> Result<Attachment, String> {
        // A live session may not be stored yet (a new one is, with its first message).
        let live = self.host.live();
        let mut matching = live.iter().filter(|id| id.starts_with(wanted));
        if let (Some(id), None) = (matching.next(), matching.next())
            && let Some(attached) = self.attach_live(id, from_seq).await?
        {
            return Ok(attached);
        }
        let row = self
            .local
            .stored_session(wanted.to_string())
            .await
            .map_err(|_| format!("unknown session {wanted}"))?;
        if let Some(attached) = self.attach_live(&row.id, from_seq).await? {
            return Ok(attached);
        }
        let loaded = self.loaded_for(Some(&row.cwd), None)?;
        let cli = self.cli.clone();
        let resumed = self
            .host
            .open(
                &loaded,
                &cli,
                SessionChoice::Resume(row.id.clone()),
                Self::options(),
            )
            .await
            .map_err(|e| e.to_string())?;
        if from_seq.is_none() {
            return Ok(resumed);
        }
        // Attached again from the asked event; the first attachment lets go when dropped.
        self.attach_live(&row.id, from_seq)
            .await?
            .ok_or_else(|| format!("session {} ended as it was resumed", row.id))
    }

    async fn attach_live(
        &self,
        id: &str,
        from_seq: Option<u64>,
    ) -> Result<Option<Attachment>, String> {
        self.host
            .attach_after(id, Delivery::DropWhenBehind, from_seq)
            .await
            .map_err(|replay| replay.to_string())
    }
}
