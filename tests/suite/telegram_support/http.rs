//! HTTP/1.1 for the Bot API server: each connection serves requests one after another
//! (keep-alive, as reqwest reuses connections) while other connections are served at once.

use std::sync::Arc;

use serde_json::Value;
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::{TcpListener, TcpStream};
use tokio::task::JoinSet;

use super::{Shared, api};

/// Serves connections until the task is aborted, which aborts the connections with it.
pub(super) async fn accept(listener: TcpListener, shared: Arc<Shared>) {
    let mut connections = JoinSet::new();
    while let Ok((socket, _)) = listener.accept().await {
        while connections.try_join_next().is_some() {}
        shared.state().connections += 1;
        let _ = socket.set_nodelay(true);
        // A broken connection shows up as a client error in the test itself.
        connections.spawn(serve(socket, Arc::clone(&shared)));
    }
}

struct Request {
    path: String,
    body: Vec<u8>,
    close: bool,
}

async fn serve(socket: TcpStream, shared: Arc<Shared>) -> std::io::Result<()> {
    let mut socket = BufReader::new(socket);
    while let Some(request) = read_request(&mut socket).await? {
        let (status, answer) = answer(&shared, &request).await;
        let body = answer.to_string();
        let head = format!(
            "HTTP/1.1 {status} {}\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: {}\r\n\r\n",
            reason(status),
            body.len(),
            if request.close { "close" } else { "keep-alive" },
        );
        // One write: a head and a body in two would wait on the client's delayed ACK (Nagle).
        let stream = socket.get_mut();
        stream.write_all((head + &body).as_bytes()).await?;
        stream.flush().await?;
        if request.close {
            break;
        }
    }
    Ok(())
}

async fn answer(shared: &Shared, request: &Request) -> (u16, Value) {
    let path = request.path.split('?').next().unwrap_or_default();
    let Some((token, method)) = path
        .strip_prefix("/bot")
        .and_then(|rest| rest.split_once('/'))
    else {
        return api::not_found();
    };
    let body = if request.body.iter().all(u8::is_ascii_whitespace) {
        Value::Null
    } else {
        match serde_json::from_slice(&request.body) {
            Ok(body) => body,
            Err(_) => return api::error(400, "Bad Request: can't parse JSON body"),
        }
    };
    api::call(shared, token, method, body).await
}

/// The next request on the connection, or `None` when the client closed it.
async fn read_request(socket: &mut BufReader<TcpStream>) -> std::io::Result<Option<Request>> {
    let mut line = String::new();
    if socket.read_line(&mut line).await? == 0 {
        return Ok(None);
    }
    let path = line.split(' ').nth(1).unwrap_or_default().to_string();
    let mut length = 0;
    let mut close = false;
    loop {
        line.clear();
        if socket.read_line(&mut line).await? == 0 {
            return Err(std::io::ErrorKind::UnexpectedEof.into());
        }
        let header = line.trim_end();
        if header.is_empty() {
            break;
        }
        let Some((name, value)) = header.split_once(':') else {
            continue;
        };
        let value = value.trim();
        match name.trim().to_ascii_lowercase().as_str() {
            "content-length" => length = value.parse().unwrap_or(0),
            "connection" => close = value.eq_ignore_ascii_case("close"),
            "transfer-encoding" => {
                // reqwest sends JSON with a length; nothing here sends chunks.
                return Err(std::io::Error::other(
                    "chunked request bodies are not supported",
                ));
            }
            _ => {}
        }
    }
    let mut body = vec![0; length];
    socket.read_exact(&mut body).await?;
    Ok(Some(Request { path, body, close }))
}

fn reason(status: u16) -> &'static str {
    match status {
        200 => "OK",
        400 => "Bad Request",
        401 => "Unauthorized",
        403 => "Forbidden",
        404 => "Not Found",
        409 => "Conflict",
        429 => "Too Many Requests",
        500 => "Internal Server Error",
        502 => "Bad Gateway",
        _ => "Status",
    }
}
