//! A one-shot HTTP server on 127.0.0.1 for tests: it answers a single request with a canned
//! status and JSON body, and hands back the request it received.

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;
use tokio::task::JoinHandle;

pub struct Served {
    /// `http://127.0.0.1:<port>`
    pub base_url: String,
    /// The raw request (head and body) once it has been answered.
    pub request: JoinHandle<std::io::Result<String>>,
}

pub async fn serve_once(status: u16, body: &str) -> std::io::Result<Served> {
    let listener = TcpListener::bind("127.0.0.1:0").await?;
    let base_url = format!("http://{}", listener.local_addr()?);
    let body = body.to_owned();
    let request = tokio::spawn(async move {
        let (mut socket, _) = listener.accept().await?;
        let mut received = Vec::new();
        let mut buf = [0u8; 4096];
        loop {
            let n = socket.read(&mut buf).await?;
            if n == 0 {
                break;
            }
            received.extend_from_slice(&buf[..n]);
            if request_complete(&received) {
                break;
            }
        }
        let response = format!(
            "HTTP/1.1 {status} Canned\r\ncontent-type: application/json\r\n\
             content-length: {}\r\nconnection: close\r\n\r\n{body}",
            body.len()
        );
        socket.write_all(response.as_bytes()).await?;
        socket.shutdown().await?;
        Ok(String::from_utf8_lossy(&received).into_owned())
    });
    Ok(Served { base_url, request })
}

/// Whether `received` holds the whole head and as much body as its content-length says.
fn request_complete(received: &[u8]) -> bool {
    let text = String::from_utf8_lossy(received);
    let Some(head_end) = text.find("\r\n\r\n") else {
        return false;
    };
    let length = text[..head_end]
        .lines()
        .filter_map(|line| line.split_once(':'))
        .find(|(name, _)| name.trim().eq_ignore_ascii_case("content-length"))
        .and_then(|(_, value)| value.trim().parse::<usize>().ok())
        .unwrap_or(0);
    received.len() >= head_end + 4 + length
}
