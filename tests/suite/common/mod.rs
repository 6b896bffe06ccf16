//! Helpers for the wire-provider tests: an in-test HTTP/1.1 server that records each request
//! and plays back a scripted answer (status, headers, an SSE body streamed in chunks, or cut
//! off mid-stream), so the providers run their real HTTP and SSE code paths.

// Each test binary compiles this module and uses a different part of it.
#![allow(dead_code)]

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use mnemo::llm::{
    EventStream, Message, ModelRequest, ModelResponse, Provider, ProviderError, ProviderSettings,
    StreamEvent,
};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::task::JoinHandle;

pub type TestResult = Result<(), Box<dyn std::error::Error>>;

/// The events of a stream and the error that ended it, if any.
pub type Drained = (Vec<StreamEvent>, Option<ProviderError>);

/// One scripted answer.
#[derive(Debug, Clone)]
pub struct Reply {
    status: u16,
    headers: Vec<(String, String)>,
    body: Vec<u8>,
    /// SSE bodies go out with chunked transfer encoding, as the real services send them.
    chunked: bool,
    pieces: usize,
    pause: Duration,
    /// Close the socket after this many body bytes, without ending the body.
    cut_after: Option<usize>,
    hang: Hang,
}

impl Reply {
    /// A 200 answer with an event stream body.
    pub fn sse(body: &str) -> Self {
        Self {
            status: 200,
            headers: vec![
                (
                    "content-type".into(),
                    "text/event-stream; charset=utf-8".into(),
                ),
                ("cache-control".into(), "no-cache".into()),
            ],
            body: body.as_bytes().to_vec(),
            chunked: true,
            pieces: 1,
            pause: Duration::ZERO,
            cut_after: None,
            hang: Hang::Never,
        }
    }

    /// An answer with a JSON body, such as an error.
    pub fn json(status: u16, body: &str) -> Self {
        Self {
            status,
            headers: vec![("content-type".into(), "application/json".into())],
            body: body.as_bytes().to_vec(),
            chunked: false,
            pieces: 1,
            pause: Duration::ZERO,
            cut_after: None,
            hang: Hang::Never,
        }
    }

    pub fn header(mut self, name: &str, value: &str) -> Self {
        self.headers.push((name.into(), value.into()));
        self
    }

    /// Sends the body in `pieces` parts of equal size (cut at arbitrary bytes, even inside
    /// an event or a UTF-8 character), pausing between them.
    pub fn in_pieces(mut self, pieces: usize, pause: Duration) -> Self {
        self.pieces = pieces.max(1);
        self.pause = pause;
        self
    }

    /// Closes the connection after `bytes` of the body, as a dropped connection would.
    pub fn cut_after(mut self, bytes: usize) -> Self {
        self.cut_after = Some(bytes);
        self
    }

    /// Takes the request and never answers, as a wedged server does.
    pub fn silent() -> Self {
        Self {
            hang: Hang::BeforeAnswer,
            ..Self::json(200, "")
        }
    }

    /// Sends the head and `bytes` of the body, then goes quiet with the connection open.
    pub fn stall_after(mut self, bytes: usize) -> Self {
        self.cut_after = Some(bytes);
        self.hang = Hang::AfterBody;
        self
    }
}

/// Where a reply stops talking without closing the connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
enum Hang {
    #[default]
    Never,
    BeforeAnswer,
    AfterBody,
}

/// What the server received.
#[derive(Debug, Clone)]
pub struct Recorded {
    pub method: String,
    pub path: String,
    /// Names in lower case.
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl Recorded {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    pub fn json(&self) -> Result<serde_json::Value, serde_json::Error> {
        serde_json::from_slice(&self.body)
    }
}

pub struct TestServer {
    pub base_url: String,
    requests: Arc<Mutex<Vec<Recorded>>>,
    task: JoinHandle<()>,
}

impl TestServer {
    /// Serves `replies` in order, one per connection; later connections get a 500.
    pub async fn start(replies: Vec<Reply>) -> std::io::Result<Self> {
        let listener = TcpListener::bind("127.0.0.1:0").await?;
        let base_url = format!("http://{}", listener.local_addr()?);
        let requests = Arc::new(Mutex::new(Vec::new()));
        let recorded = Arc::clone(&requests);
        let task = tokio::spawn(async move {
            let mut replies: VecDeque<Reply> = replies.into();
            while let Ok((socket, _)) = listener.accept().await {
                let reply = replies
                    .pop_front()
                    .unwrap_or_else(|| Reply::json(500, r#"{"error":"no reply scripted"}"#));
                let recorded = Arc::clone(&recorded);
                tokio::spawn(async move {
                    // A failed exchange shows up as a client error in the test itself.
                    let _ = serve(socket, reply, recorded).await;
                });
            }
        });
        Ok(Self {
            base_url,
            requests,
            task,
        })
    }

    pub fn requests(&self) -> Vec<Recorded> {
        self.requests.lock().map(|r| r.clone()).unwrap_or_default()
    }

    /// The one request a test made; panics (failing the test) otherwise.
    pub fn only_request(&self) -> Recorded {
        let mut requests = self.requests();
        assert_eq!(requests.len(), 1, "expected exactly one request");
        requests.remove(0)
    }

    pub fn settings(&self, model: &str, api_key: Option<&str>) -> ProviderSettings {
        ProviderSettings {
            base_url: self.base_url.clone(),
            model: model.into(),
            api_key: api_key.map(str::to_string),
            ..ProviderSettings::default()
        }
    }
}

impl Drop for TestServer {
    fn drop(&mut self) {
        self.task.abort();
    }
}

async fn serve(
    mut socket: TcpStream,
    reply: Reply,
    recorded: Arc<Mutex<Vec<Recorded>>>,
) -> std::io::Result<()> {
    let request = read_request(&mut socket).await?;
    if let Ok(mut all) = recorded.lock() {
        all.push(request);
    }
    if reply.hang == Hang::BeforeAnswer {
        return hang(socket).await;
    }
    let mut head = format!("HTTP/1.1 {} {}\r\n", reply.status, reason(reply.status));
    for (name, value) in &reply.headers {
        head.push_str(&format!("{name}: {value}\r\n"));
    }
    if reply.chunked {
        head.push_str("transfer-encoding: chunked\r\n");
    } else {
        head.push_str(&format!("content-length: {}\r\n", reply.body.len()));
    }
    head.push_str("connection: close\r\n\r\n");
    socket.write_all(head.as_bytes()).await?;

    let end = reply
        .cut_after
        .unwrap_or(reply.body.len())
        .min(reply.body.len());
    let body = &reply.body[..end];
    let size = body.len().div_ceil(reply.pieces).max(1);
    for (i, piece) in body.chunks(size).enumerate() {
        if i > 0 && !reply.pause.is_zero() {
            tokio::time::sleep(reply.pause).await;
        }
        if reply.chunked {
            socket
                .write_all(format!("{:x}\r\n", piece.len()).as_bytes())
                .await?;
            socket.write_all(piece).await?;
            socket.write_all(b"\r\n").await?;
        } else {
            socket.write_all(piece).await?;
        }
        socket.flush().await?;
    }
    if reply.hang == Hang::AfterBody {
        return hang(socket).await;
    }
    if reply.chunked && reply.cut_after.is_none() {
        socket.write_all(b"0\r\n\r\n").await?;
    }
    socket.shutdown().await
}

/// Keeps the connection open and silent until the client gives up.
async fn hang(mut socket: TcpStream) -> std::io::Result<()> {
    let mut sink = [0u8; 1024];
    while socket.read(&mut sink).await? > 0 {}
    Ok(())
}

async fn read_request(socket: &mut TcpStream) -> std::io::Result<Recorded> {
    let mut buf = Vec::new();
    let mut chunk = [0u8; 4096];
    let head_end = loop {
        if let Some(pos) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            break pos;
        }
        let n = socket.read(&mut chunk).await?;
        if n == 0 {
            return Err(std::io::ErrorKind::UnexpectedEof.into());
        }
        buf.extend_from_slice(&chunk[..n]);
    };
    let head = String::from_utf8_lossy(&buf[..head_end]).into_owned();
    let mut lines = head.split("\r\n");
    let request_line = lines.next().unwrap_or_default();
    let mut parts = request_line.split(' ');
    let method = parts.next().unwrap_or_default().to_string();
    let path = parts.next().unwrap_or_default().to_string();
    let headers: Vec<(String, String)> = lines
        .filter_map(|line| line.split_once(':'))
        .map(|(n, v)| (n.trim().to_ascii_lowercase(), v.trim().to_string()))
        .collect();
    let length = headers
        .iter()
        .find(|(n, _)| n == "content-length")
        .and_then(|(_, v)| v.parse::<usize>().ok())
        .unwrap_or(0);
    let mut body = buf[head_end + 4..].to_vec();
    while body.len() < length {
        let n = socket.read(&mut chunk).await?;
        if n == 0 {
            break;
        }
        body.extend_from_slice(&chunk[..n]);
    }
    Ok(Recorded {
        method,
        path,
        headers,
        body,
    })
}

fn reason(status: u16) -> &'static str {
    match status {
        200 => "OK",
        400 => "Bad Request",
        401 => "Unauthorized",
        429 => "Too Many Requests",
        500 => "Internal Server Error",
        503 => "Service Unavailable",
        529 => "Site Overloaded",
        _ => "Status",
    }
}

/// Everything a stream yielded, up to its end or its first error. A stream that stalls
/// fails the test instead of hanging it.
pub async fn drain(mut stream: EventStream) -> Drained {
    use futures_util::StreamExt;
    let mut events = Vec::new();
    let deadline = Duration::from_secs(10);
    loop {
        match tokio::time::timeout(deadline, stream.next()).await {
            Err(_) => panic!("the stream stalled for {deadline:?}"),
            Ok(None) => return (events, None),
            Ok(Some(Ok(event))) => events.push(event),
            Ok(Some(Err(err))) => {
                // Nothing may follow an error.
                let after = tokio::time::timeout(deadline, stream.next()).await;
                assert!(matches!(after, Ok(None)), "items after an error: {after:?}");
                return (events, Some(err));
            }
        }
    }
}

/// The text deltas, in order.
pub fn text_deltas(events: &[StreamEvent]) -> Vec<&str> {
    events
        .iter()
        .filter_map(|e| match e {
            StreamEvent::TextDelta(t) => Some(t.as_str()),
            _ => None,
        })
        .collect()
}

/// The reasoning deltas joined.
pub fn reasoning(events: &[StreamEvent]) -> String {
    events
        .iter()
        .filter_map(|e| match e {
            StreamEvent::ReasoningDelta(t) => Some(t.as_str()),
            _ => None,
        })
        .collect()
}

/// The final response, which must be the last event.
pub fn completed(events: &[StreamEvent]) -> Option<&ModelResponse> {
    match events.last() {
        Some(StreamEvent::Completed(response)) => Some(response),
        _ => None,
    }
}

/// One user question, no tools.
pub fn simple_request() -> ModelRequest {
    ModelRequest {
        system: "You are mnemo, a coding assistant.".into(),
        messages: vec![Arc::new(Message::user_text("Does the build pass?"))],
        tools: Vec::new().into(),
        static_tools: usize::MAX,
        max_output_tokens: 4096,
        volatile_tail: 0,
        tool_calls: mnemo::llm::ToolCalls::Allowed,
        server_search: false,
    }
}

/// Runs one request through the provider that `provider` builds for a server playing `reply`.
pub async fn run_provider<P: Provider>(
    reply: Reply,
    request: ModelRequest,
    provider: impl FnOnce(&TestServer) -> P,
) -> Result<(TestServer, Result<Drained, ProviderError>), Box<dyn std::error::Error>> {
    let server = TestServer::start(vec![reply]).await?;
    let provider = provider(&server);
    let outcome = match provider.stream(request).await {
        Ok(stream) => Ok(drain(stream).await),
        Err(err) => Err(err),
    };
    Ok((server, outcome))
}

/// The events and final response of a stream that must end cleanly.
pub fn complete(
    outcome: Result<Drained, ProviderError>,
) -> Result<(Vec<StreamEvent>, ModelResponse), Box<dyn std::error::Error>> {
    let (events, error) = outcome?;
    if let Some(error) = error {
        return Err(format!("the stream ended with an error: {error:?}").into());
    }
    let response = completed(&events).ok_or("no Completed event")?.clone();
    Ok((events, response))
}

/// An OpenAI Chat Completions stream that answers with `text`.
pub fn openai_text(text: &str) -> String {
    format!(
        "data: {{\"id\":\"c2\",\"object\":\"chat.completion.chunk\",\"choices\":[{{\"index\":0,\
         \"delta\":{{\"role\":\"assistant\",\"content\":\"{text}\"}},\"finish_reason\":null}}]}}\n\n\
         data: {{\"id\":\"c2\",\"object\":\"chat.completion.chunk\",\"choices\":[{{\"index\":0,\
         \"delta\":{{}},\"finish_reason\":\"stop\"}}]}}\n\ndata: [DONE]\n\n"
    )
}

/// An OpenAI Chat Completions stream that calls one tool.
pub fn openai_tool_call(name: &str, arguments: &serde_json::Value) -> String {
    let arguments = serde_json::to_string(&arguments.to_string()).unwrap_or_default();
    format!(
        "data: {{\"id\":\"c1\",\"object\":\"chat.completion.chunk\",\"choices\":[{{\"index\":0,\
         \"delta\":{{\"role\":\"assistant\",\"tool_calls\":[{{\"index\":0,\"id\":\"call_1\",\
         \"type\":\"function\",\"function\":{{\"name\":\"{name}\",\"arguments\":{arguments}}}}}]}},\
         \"finish_reason\":null}}]}}\n\n\
         data: {{\"id\":\"c1\",\"object\":\"chat.completion.chunk\",\"choices\":[{{\"index\":0,\
         \"delta\":{{}},\"finish_reason\":\"tool_calls\"}}]}}\n\ndata: [DONE]\n\n"
    )
}

/// An OpenAI Chat Completions stream whose text comes in `pieces`, one event each.
pub fn openai_pieces(pieces: &[&str]) -> String {
    let mut body = String::new();
    for piece in pieces {
        body.push_str(&format!(
            "data: {{\"id\":\"c3\",\"object\":\"chat.completion.chunk\",\"choices\":[{{\"index\":0,\
             \"delta\":{{\"content\":\"{piece}\"}},\"finish_reason\":null}}]}}\n\n"
        ));
    }
    body.push_str(
        "data: {\"id\":\"c3\",\"object\":\"chat.completion.chunk\",\"choices\":[{\"index\":0,\
         \"delta\":{},\"finish_reason\":\"stop\"}]}\n\ndata: [DONE]\n\n",
    );
    body
}

/// The answer of the flaky-stream tests, and a server that cuts its first stream after
/// "Hello from " and then streams the whole answer.
pub const FLAKY_ANSWER: &str = "Hello from the flaky mock.";

pub async fn flaky_server() -> std::io::Result<TestServer> {
    let sse = openai_pieces(&["Hello from ", "the flaky mock."]);
    let cut = sse.find("the flaky").map_or(sse.len(), |at| at - 10);
    TestServer::start(vec![Reply::sse(&sse).cut_after(cut), Reply::sse(&sse)]).await
}

/// The flags of `mnemo run PROMPT` against the OpenAI-compatible in-test server at `base_url`,
/// its key taken from `LLM_KEY`.
pub fn run_on_openai_server(base_url: &str, prompt: &str) -> Vec<String> {
    let url = format!("{base_url}/v1");
    [
        "--provider",
        "openai",
        "--base-url",
        &url,
        "--model",
        "m",
        "--api-key-env",
        "LLM_KEY",
        "run",
        prompt,
    ]
    .map(str::to_string)
    .to_vec()
}
