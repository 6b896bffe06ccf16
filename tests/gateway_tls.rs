//! The gateway over TCP with mutual TLS, certificates made by rcgen: a client with a
//! certificate the client CA signed gets the hello and, with the token, in; one without a
//! certificate is refused in the handshake; with TLS a listener off the loopback is allowed.

use std::sync::Arc;

use mnemo::config::{CliOverrides, Dirs};
use mnemo::gateway::tls::TlsFiles;
use mnemo::gateway::{self, GatewayOptions, Listen};
use mnemo::host::SessionHost;
use rcgen::{BasicConstraints, CertificateParams, CertifiedIssuer, IsCa, KeyPair};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio_rustls::TlsConnector;
use tokio_rustls::rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName};
use tokio_rustls::rustls::{ClientConfig, RootCertStore};
use tokio_util::sync::CancellationToken;

type TestResult = Result<(), Box<dyn std::error::Error>>;

struct Pki {
    ca: CertificateDer<'static>,
    client_cert: CertificateDer<'static>,
    client_key: PrivateKeyDer<'static>,
    files: TlsFiles,
}

fn pki(dir: &std::path::Path) -> Result<Pki, Box<dyn std::error::Error>> {
    let mut ca_params = CertificateParams::new(Vec::<String>::new())?;
    ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    let ca = CertifiedIssuer::self_signed(ca_params, KeyPair::generate()?)?;
    let server_key = KeyPair::generate()?;
    let server =
        CertificateParams::new(vec!["localhost".to_string()])?.signed_by(&server_key, &ca)?;
    let client_key = KeyPair::generate()?;
    let client = CertificateParams::new(vec!["client".to_string()])?.signed_by(&client_key, &ca)?;
    let write = |name: &str, text: String| -> std::io::Result<std::path::PathBuf> {
        let path = dir.join(name);
        std::fs::write(&path, text)?;
        Ok(path)
    };
    let files = TlsFiles {
        cert: write("server.pem", server.pem())?,
        key: write("server.key", server_key.serialize_pem())?,
        client_ca: Some(write("ca.pem", ca.pem())?),
    };
    Ok(Pki {
        ca: ca.der().clone(),
        client_cert: client.der().clone(),
        client_key: PrivateKeyDer::try_from(client_key.serialize_der())?,
        files,
    })
}

fn connector(
    pki: &Pki,
    with_certificate: bool,
) -> Result<TlsConnector, Box<dyn std::error::Error>> {
    let mut roots = RootCertStore::empty();
    roots.add(pki.ca.clone())?;
    let provider = Arc::new(tokio_rustls::rustls::crypto::ring::default_provider());
    let builder = ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()?
        .with_root_certificates(roots);
    let config = match with_certificate {
        true => builder
            .with_client_auth_cert(vec![pki.client_cert.clone()], pki.client_key.clone_key())?,
        false => builder.with_no_client_auth(),
    };
    Ok(TlsConnector::from(Arc::new(config)))
}

#[tokio::test]
async fn mutual_tls_lets_in_only_clients_with_a_certificate() -> TestResult {
    let dir = tempfile::tempdir()?;
    let pki = pki(dir.path())?;
    let dirs = Dirs {
        config: Some(dir.path().join("cfg")),
        data: Some(dir.path().join("data")),
    };
    std::fs::create_dir_all(dir.path().join("data"))?;
    let loaded = Arc::new(mnemo::launch::load_config_from(
        &dirs,
        dir.path(),
        &CliOverrides::default(),
    )?);
    let cancel = CancellationToken::new();
    // Off the loopback is allowed with TLS (it is refused without, see tests/gateway.rs).
    let options = GatewayOptions {
        listen: vec![
            "127.0.0.1:0".parse::<Listen>()?,
            "0.0.0.0:0".parse::<Listen>()?,
        ],
        tls: Some(pki.files.clone()),
        jobs_changed: None,
    };
    let running = gateway::start(
        SessionHost::new(),
        loaded,
        CliOverrides::default(),
        &options,
        cancel.clone(),
    )
    .await?;
    let address = running.addresses[0];
    let token = std::fs::read_to_string(dir.path().join("data/gateway-token"))?;

    let stream = tokio::net::TcpStream::connect(address).await?;
    let name = ServerName::try_from("localhost")?;
    let tls = connector(&pki, true)?.connect(name.clone(), stream).await?;
    let (read, mut write) = tokio::io::split(tls);
    let mut lines = BufReader::new(read).lines();
    let hello = lines.next_line().await?.ok_or("no hello")?;
    assert!(hello.contains("\"version\":1"), "{hello}");
    write
        .write_all(format!("{{\"token\": \"{token}\"}}\n").as_bytes())
        .await?;
    let answer = lines.next_line().await?.ok_or("no answer")?;
    assert!(answer.contains("authenticated"), "{answer}");

    // Without a client certificate the handshake (or the first read after it) fails.
    let stream = tokio::net::TcpStream::connect(address).await?;
    let refused = match connector(&pki, false)?.connect(name, stream).await {
        Err(_) => true,
        Ok(tls) => {
            let mut lines = BufReader::new(tls).lines();
            !matches!(lines.next_line().await, Ok(Some(_)))
        }
    };
    assert!(refused, "a client without a certificate got the hello");
    cancel.cancel();
    Ok(())
}
