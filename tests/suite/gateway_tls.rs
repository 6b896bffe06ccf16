//! The gateway over TCP with mutual TLS, certificates made by rcgen: a client with a
//! certificate the client CA signed gets the hello and, with the token, in; one without a
//! certificate is refused in the handshake; with TLS a listener off the loopback is allowed.
//! The CLI (`mnemo run --attach --url ... --tls-ca ... --tls-cert ... --tls-key ...`) gets its
//! reply over mutual TLS, fails with a clear error without its certificate, and refuses to
//! send the token in clear off the loopback.

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
    /// The client's certificate and key as PEM files, for the CLI.
    client_files: (std::path::PathBuf, std::path::PathBuf),
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
    let client_files = (
        write("client.pem", client.pem())?,
        write("client.key", client_key.serialize_pem())?,
    );
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
        client_files,
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
    let loaded = Arc::new(mnemo::host::load_config_from(
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
        searcher: None,
        telegram_paired: None,
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

/// Runs the mnemo binary with `args` (config and data in `dir`), within a limit.
async fn mnemo(
    dir: &std::path::Path,
    args: &[&str],
) -> Result<std::process::Output, Box<dyn std::error::Error>> {
    let run = tokio::process::Command::new(env!("CARGO_BIN_EXE_mnemo"))
        .args(args)
        .current_dir(dir.join("ws"))
        .env("MNEMO_CONFIG_DIR", dir.join("cfg"))
        .env("MNEMO_DATA_DIR", dir.join("data"))
        .env_remove("MNEMO_MODEL")
        .stdin(std::process::Stdio::null())
        .kill_on_drop(true)
        .output();
    Ok(tokio::time::timeout(std::time::Duration::from_secs(60), run).await??)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_cli_gets_its_reply_over_mutual_tls_and_a_clear_error_without_its_certificate()
-> TestResult {
    let dir = tempfile::tempdir()?;
    let pki = pki(dir.path())?;
    for sub in ["cfg", "data", "ws"] {
        std::fs::create_dir_all(dir.path().join(sub))?;
    }
    let script = dir.path().join("script.json");
    std::fs::write(&script, r#"{"turns": [{"text": "answered over tls"}]}"#)?;
    let model = format!("scripted:{}", script.display());
    let cli = CliOverrides {
        model: Some(model.clone()),
        ..Default::default()
    };
    let dirs = Dirs {
        config: Some(dir.path().join("cfg")),
        data: Some(dir.path().join("data")),
    };
    let loaded = Arc::new(mnemo::host::load_config_from(
        &dirs,
        &dir.path().join("ws"),
        &cli,
    )?);
    let cancel = CancellationToken::new();
    let options = GatewayOptions {
        listen: vec!["127.0.0.1:0".parse::<Listen>()?],
        tls: Some(pki.files.clone()),
        jobs_changed: None,
        searcher: None,
        telegram_paired: None,
    };
    let running = gateway::start(SessionHost::new(), loaded, cli, &options, cancel.clone()).await?;
    // The server's certificate names `localhost`.
    let url = format!("localhost:{}", running.addresses[0].port());
    let ca = pki.files.client_ca.clone().ok_or("no CA")?;
    let (cert, key) = &pki.client_files;
    let path = |p: &std::path::Path| p.display().to_string();
    let (ca, cert, key) = (path(&ca), path(cert), path(key));

    let with_certificate = [
        "--model",
        &model,
        "run",
        "--attach",
        "--url",
        &url,
        "--tls-ca",
        &ca,
        "--tls-cert",
        &cert,
        "--tls-key",
        &key,
        "hello",
    ];
    let answered = mnemo(dir.path(), &with_certificate).await?;
    let stdout = String::from_utf8_lossy(&answered.stdout);
    let stderr = String::from_utf8_lossy(&answered.stderr);
    assert!(answered.status.success(), "{stdout}\n{stderr}");
    assert!(stdout.contains("answered over tls"), "{stdout}\n{stderr}");

    let without_certificate = [
        "--model", &model, "run", "--attach", "--url", &url, "--tls-ca", &ca, "hello",
    ];
    let refused = mnemo(dir.path(), &without_certificate).await?;
    let stderr = String::from_utf8_lossy(&refused.stderr);
    assert!(!refused.status.success());
    assert!(
        stderr.contains("TLS handshake") && stderr.contains("--tls-cert"),
        "{stderr}"
    );

    // The token is never sent in clear off the loopback.
    let in_clear = [
        "--model",
        &model,
        "run",
        "--attach",
        "--url",
        "192.0.2.1:7000",
        "hello",
    ];
    let refused = mnemo(dir.path(), &in_clear).await?;
    let stderr = String::from_utf8_lossy(&refused.stderr);
    assert!(!refused.status.success());
    assert!(
        stderr.contains("in clear") && stderr.contains("--tls-ca"),
        "{stderr}"
    );
    cancel.cancel();
    Ok(())
}
