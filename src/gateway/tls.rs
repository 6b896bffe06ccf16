//! TLS for the gateway's TCP connections, the only module that names rustls types. The
//! server side: its certificate and key, and optionally a CA whose certificates clients must
//! present (mutual TLS). The client side: the CA that signed the server's certificate, and
//! optionally the client's own certificate and key. The token is asked for on top, as
//! without TLS.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use tokio::io::{AsyncRead, AsyncWrite};
use tokio_rustls::rustls::crypto::CryptoProvider;
use tokio_rustls::rustls::pki_types::pem::PemObject;
use tokio_rustls::rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName};
use tokio_rustls::rustls::server::WebPkiClientVerifier;
use tokio_rustls::rustls::{ClientConfig, RootCertStore, ServerConfig};
use tokio_rustls::{TlsAcceptor, TlsConnector};

/// The files `--tls-cert`, `--tls-key` and `--client-ca` name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TlsFiles {
    pub cert: PathBuf,
    pub key: PathBuf,
    /// When set, only clients with a certificate this CA signed get in.
    pub client_ca: Option<PathBuf>,
}

/// The files `--tls-ca`, `--tls-cert` and `--tls-key` name (a client's side).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClientTlsFiles {
    /// The CA that signed the server's certificate.
    pub ca: PathBuf,
    /// The client's own certificate, for a server that asks for one (mutual TLS).
    pub identity: Option<ClientIdentity>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClientIdentity {
    pub cert: PathBuf,
    pub key: PathBuf,
}

#[derive(Debug, thiserror::Error)]
pub enum TlsError {
    #[error("cannot read {path}: {message}")]
    Read { path: PathBuf, message: String },
    #[error("{path} holds no certificate")]
    NoCertificate { path: PathBuf },
    #[error("the TLS set-up was refused: {0}")]
    Config(String),
    #[error("`{0}` is not a name or address a certificate can be checked against")]
    ServerName(String),
    #[error("the TLS handshake with {target} failed: {message}")]
    Handshake { target: String, message: String },
}

fn certificates(path: &Path) -> Result<Vec<CertificateDer<'static>>, TlsError> {
    let read = |message: String| TlsError::Read {
        path: path.to_path_buf(),
        message,
    };
    let certificates = CertificateDer::pem_file_iter(path)
        .map_err(|e| read(e.to_string()))?
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| read(e.to_string()))?;
    match certificates.is_empty() {
        true => Err(TlsError::NoCertificate {
            path: path.to_path_buf(),
        }),
        false => Ok(certificates),
    }
}

fn private_key(path: &Path) -> Result<PrivateKeyDer<'static>, TlsError> {
    PrivateKeyDer::from_pem_file(path).map_err(|e| TlsError::Read {
        path: path.to_path_buf(),
        message: e.to_string(),
    })
}

fn roots(ca: &Path) -> Result<RootCertStore, TlsError> {
    let mut roots = RootCertStore::empty();
    for certificate in certificates(ca)? {
        roots
            .add(certificate)
            .map_err(|e| TlsError::Config(e.to_string()))?;
    }
    Ok(roots)
}

/// Named, not left to the crate features: more than one provider is built in.
fn provider() -> Arc<CryptoProvider> {
    Arc::new(tokio_rustls::rustls::crypto::ring::default_provider())
}

/// The acceptor for `files`.
pub fn acceptor(files: &TlsFiles) -> Result<TlsAcceptor, TlsError> {
    let chain = certificates(&files.cert)?;
    let key = private_key(&files.key)?;
    let provider = provider();
    let builder = ServerConfig::builder_with_provider(provider.clone())
        .with_safe_default_protocol_versions()
        .map_err(|e| TlsError::Config(e.to_string()))?;
    let builder = match &files.client_ca {
        Some(ca) => {
            let verifier =
                WebPkiClientVerifier::builder_with_provider(Arc::new(roots(ca)?), provider)
                    .build()
                    .map_err(|e| TlsError::Config(e.to_string()))?;
            builder.with_client_cert_verifier(verifier)
        }
        None => builder.with_no_client_auth(),
    };
    let config = builder
        .with_single_cert(chain, key)
        .map_err(|e| TlsError::Config(e.to_string()))?;
    Ok(TlsAcceptor::from(Arc::new(config)))
}

/// Opens TLS over `stream` to the server named `host` (the name or address its certificate
/// must carry), as `files` say.
pub async fn connect<S>(
    files: &ClientTlsFiles,
    host: &str,
    stream: S,
) -> Result<impl AsyncRead + AsyncWrite + Send + 'static, TlsError>
where
    S: AsyncRead + AsyncWrite + Send + Unpin + 'static,
{
    let builder = ClientConfig::builder_with_provider(provider())
        .with_safe_default_protocol_versions()
        .map_err(|e| TlsError::Config(e.to_string()))?
        .with_root_certificates(roots(&files.ca)?);
    let config = match &files.identity {
        Some(identity) => builder
            .with_client_auth_cert(certificates(&identity.cert)?, private_key(&identity.key)?)
            .map_err(|e| TlsError::Config(e.to_string()))?,
        None => builder.with_no_client_auth(),
    };
    let name = ServerName::try_from(host.trim_start_matches('[').trim_end_matches(']'))
        .map_err(|_| TlsError::ServerName(host.to_string()))?
        .to_owned();
    TlsConnector::from(Arc::new(config))
        .connect(name, stream)
        .await
        .map_err(|e| TlsError::Handshake {
            target: host.to_string(),
            message: e.to_string(),
        })
}
