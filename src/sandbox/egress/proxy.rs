//! The filtering proxy a sandboxed command reaches: `CONNECT host:port` (HTTPS and any other
//! TCP) and plain `http://` requests in absolute form. The host name the client asks for is what
//! the gate judges, so the sandbox needs no DNS; the proxy resolves it and refuses private
//! addresses unless that very name is listed.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::Semaphore;
use tokio::task::JoinSet;

use super::Gate;

/// Longest request head read before the request is refused.
const MAX_HEAD: usize = 16 * 1024;
/// Connections served at once for one command; more wait for a free place.
const MAX_CONNECTIONS: usize = 64;
const HEAD_TIMEOUT: Duration = Duration::from_secs(30);
const CONNECT_TIMEOUT: Duration = Duration::from_secs(15);

/// Serves `listener` until the task is dropped (the command ended); every connection task
/// ends with it.
pub async fn serve(listener: TcpListener, gate: Arc<dyn Gate>) {
    let places = Arc::new(Semaphore::new(MAX_CONNECTIONS));
    let mut connections = JoinSet::new();
    loop {
        let Ok(place) = places.clone().acquire_owned().await else {
            return;
        };
        let accepted = tokio::select! {
            accepted = listener.accept() => accepted,
            Some(_) = connections.join_next(), if !connections.is_empty() => continue,
        };
        let Ok((client, _)) = accepted else {
            continue;
        };
        let gate = gate.clone();
        connections.spawn(async move {
            let _place = place;
            let _ = handle(client, gate.as_ref()).await;
        });
    }
}

/// What the client asked to reach.
#[derive(Debug, PartialEq, Eq)]
struct Target {
    host: String,
    port: u16,
    /// For a plain HTTP request: the head rewritten to origin form, sent on to the server.
    forward: Option<Vec<u8>>,
}

async fn handle(mut client: TcpStream, gate: &dyn Gate) -> std::io::Result<()> {
    let (head, rest) = match tokio::time::timeout(HEAD_TIMEOUT, read_head(&mut client)).await {
        Ok(Ok(read)) => read,
        Ok(Err(err)) => return refuse(&mut client, 400, &err).await,
        Err(_) => return refuse(&mut client, 408, "the request head took too long").await,
    };
    let target = match parse(&head) {
        Ok(target) => target,
        Err(why) => return refuse(&mut client, 400, &why).await,
    };
    if let Err(why) = gate.allow(&target.host, target.port).await {
        return refuse(&mut client, 403, &why).await;
    }
    let address = match resolve(&target.host, target.port, gate).await {
        Ok(address) => address,
        Err(why) => return refuse(&mut client, 403, &why).await,
    };
    let upstream = tokio::time::timeout(CONNECT_TIMEOUT, TcpStream::connect(address)).await;
    let mut upstream = match upstream {
        Ok(Ok(stream)) => stream,
        Ok(Err(err)) => {
            let why = format!("could not connect to {}: {err}", target.host);
            return refuse(&mut client, 502, &why).await;
        }
        Err(_) => {
            let why = format!("connecting to {} took too long", target.host);
            return refuse(&mut client, 504, &why).await;
        }
    };
    match &target.forward {
        Some(head) => upstream.write_all(head).await?,
        None => {
            client
                .write_all(b"HTTP/1.1 200 Connection Established\r\n\r\n")
                .await?
        }
    }
    upstream.write_all(&rest).await?;
    tokio::io::copy_bidirectional(&mut client, &mut upstream).await?;
    Ok(())
}

/// Reads up to the blank line that ends the head; gives the head and what came after it.
async fn read_head(client: &mut TcpStream) -> Result<(Vec<u8>, Vec<u8>), String> {
    let mut buffer = Vec::with_capacity(1024);
    let mut chunk = [0u8; 2048];
    loop {
        let read = client
            .read(&mut chunk)
            .await
            .map_err(|e| format!("reading the request failed: {e}"))?;
        if read == 0 {
            return Err("the request ended before its head".into());
        }
        let searched_from = buffer.len().saturating_sub(3);
        buffer.extend_from_slice(&chunk[..read]);
        if let Some(end) = memchr::memmem::find(&buffer[searched_from..], b"\r\n\r\n") {
            let end = searched_from + end + 4;
            let rest = buffer.split_off(end);
            return Ok((buffer, rest));
        }
        if buffer.len() > MAX_HEAD {
            return Err(format!("the request head is longer than {MAX_HEAD} bytes"));
        }
    }
}

fn parse(head: &[u8]) -> Result<Target, String> {
    let text = std::str::from_utf8(head).map_err(|_| "the request head is not text")?;
    let (first, headers) = text.split_once("\r\n").unwrap_or((text, ""));
    let mut parts = first.split(' ');
    let (Some(method), Some(uri), Some(version)) = (parts.next(), parts.next(), parts.next())
    else {
        return Err(format!("`{first}` is not an HTTP request line"));
    };
    if method.eq_ignore_ascii_case("CONNECT") {
        let (host, port) = host_port(uri, None)?;
        return Ok(Target {
            host,
            port,
            forward: None,
        });
    }
    let Some(after) = uri.strip_prefix("http://") else {
        return Err(format!(
            "`{uri}` is not an absolute http:// address; HTTPS goes through CONNECT"
        ));
    };
    let (authority, path) = match after.find('/') {
        Some(at) => (&after[..at], &after[at..]),
        None => (after, "/"),
    };
    let (host, port) = host_port(authority, Some(80))?;
    let mut forward = format!("{method} {path} {version}\r\n");
    for line in headers.split("\r\n").filter(|line| !line.is_empty()) {
        let name = line.split(':').next().unwrap_or("").trim();
        if !name.to_ascii_lowercase().starts_with("proxy-") {
            forward.push_str(line);
            forward.push_str("\r\n");
        }
    }
    forward.push_str("\r\n");
    Ok(Target {
        host,
        port,
        forward: Some(forward.into_bytes()),
    })
}

/// `host:port` (or `[v6]:port`), the port defaulting to `default` when there is one.
fn host_port(authority: &str, default: Option<u16>) -> Result<(String, u16), String> {
    let bad = || format!("`{authority}` is not a host and port");
    let (host, port) = match authority.strip_prefix('[') {
        Some(v6) => {
            let (host, after) = v6.split_once(']').ok_or_else(bad)?;
            (host, after.strip_prefix(':'))
        }
        None => match authority.rsplit_once(':') {
            Some((host, port)) => (host, Some(port)),
            None => (authority, None),
        },
    };
    let port = match (port, default) {
        (Some(port), _) => port.parse().map_err(|_| bad())?,
        (None, Some(default)) => default,
        (None, None) => return Err(bad()),
    };
    if host.is_empty() || port == 0 {
        return Err(bad());
    }
    Ok((host.to_ascii_lowercase(), port))
}

/// The checked address to connect to; a private one only for a name listed itself.
async fn resolve(host: &str, port: u16, gate: &dyn Gate) -> Result<SocketAddr, String> {
    super::resolve_checked(host, port, gate.listed_exactly(host)).await
}

async fn refuse(client: &mut TcpStream, status: u16, why: &str) -> std::io::Result<()> {
    let reason = match status {
        400 => "Bad Request",
        403 => "Forbidden",
        408 => "Request Timeout",
        502 => "Bad Gateway",
        _ => "Gateway Timeout",
    };
    let body = format!("mnemo's sandbox proxy: {why}\n");
    let response = format!(
        "HTTP/1.1 {status} {reason}\r\nContent-Type: text/plain; charset=utf-8\r\n\
         Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    client.write_all(response.as_bytes()).await?;
    client.shutdown().await
}

#[cfg(test)]
#[path = "proxy_tests.rs"]
mod tests;
